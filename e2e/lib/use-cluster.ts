// Per-suite cluster: `const env = useCluster()` inside a describe block starts etcd and
// kube-apiserver before the suite's tests and tears them down after, pass or fail.
import { afterAll, beforeAll } from 'vitest';
import { startCluster, type Cluster, type StartOptions } from './cluster.js';

export interface ClusterRef {
  /** The running cluster; throws when read outside the suite's tests. */
  readonly current: Cluster;
}

export function useCluster(opts: StartOptions = {}): ClusterRef {
  let cluster: Cluster | undefined;
  beforeAll(async () => {
    cluster = await startCluster(opts);
  }, 180_000);
  afterAll(async () => {
    await cluster?.stop();
  }, 60_000);
  return {
    get current(): Cluster {
      if (!cluster) throw new Error('cluster not started (useCluster must be called inside the describe block of the suite)');
      return cluster;
    },
  };
}
