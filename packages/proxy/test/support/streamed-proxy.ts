// A proxy in cluster mode fed by the controller's real snapshot stream server on loopback, as
// deployed (TLS from the controller's CA, the proxy's token checked), for tests that hand it
// snapshots (made by translate() or by hand) and wait for its ACK.
import type { ProxySnapshot } from '@tollgate/api';
import { SnapshotStore, SnapshotStreamServer, StreamMetrics } from '@tollgate/controller';
import { LogSink, until } from '@tollgate/testkit';
import pino from 'pino';
import { Registry } from 'prom-client';
import { startClusterProxy, type ClusterProxy } from '../../src/process/cluster.js';
import { streamTls } from './stream-tls.js';
import { testWorkers } from '../helpers.js';

export interface StreamedProxy {
  readonly proxy: ClusterProxy;
  readonly server: SnapshotStreamServer;
  /** Offers `snapshot` to the proxy; resolves on its ACK, rejects with the error of a NACK. */
  readonly offer: (snapshot: ProxySnapshot) => Promise<void>;
  /** Stops the proxy, the server and removes the stream's files. */
  readonly close: () => Promise<void>;
}

/** `workers`: the proxy's threads (default TOLLGATE_TEST_PROXY_WORKERS, else one). */
export async function startStreamedProxy(gateway: string, opts: { readonly workers?: number } = {}): Promise<StreamedProxy> {
  const store = new SnapshotStore();
  const tls = streamTls(gateway);
  const server = new SnapshotStreamServer({ addr: { host: '127.0.0.1', port: 0 }, security: tls.server, store, metrics: new StreamMetrics(new Registry()), log: pino({ level: 'silent' }) });
  let proxy: ClusterProxy | undefined;
  const close = async () => {
    await proxy?.close();
    await server.stop();
    tls.close();
  };
  try {
    await server.start();
    const local = { adminAddr: '127.0.0.1:0', metricsAddr: '127.0.0.1:0', readinessAddr: '127.0.0.1:0' };
    proxy = await startClusterProxy({ controller: `127.0.0.1:${server.port}`, security: tls.proxy, gateway, pod: 'proxy-0', podNamespace: gateway.split('/')[0]!, ...local, initialBackoffMs: 20, maxBackoffMs: 200, logDestination: new LogSink(), workers: opts.workers ?? testWorkers() });
  } catch (err) {
    await close();
    throw err;
  }
  const view = () => server.proxies().get(gateway)?.[0];
  const offer = async (snapshot: ProxySnapshot) => {
    store.offer(new Map([[gateway, snapshot]]));
    // A deadline, not a speed bound: the first offer waits for the stream's TLS connection and
    // the proxy's first apply, which a loaded CI machine (every suite at once) can stretch.
    await until(() => view()?.ackedVersion === snapshot.version || view()?.lastNack?.version === snapshot.version, { what: `an ACK or NACK of ${snapshot.version}`, timeoutMs: 60_000 });
    if (view()?.ackedVersion !== snapshot.version) throw new Error(view()?.lastNack?.error ?? 'NACKed');
  };
  return { proxy, server, offer, close };
}
