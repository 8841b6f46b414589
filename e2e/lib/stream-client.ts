// The proxy's own snapshot stream client, connected to a controller process as a Gateway's
// proxy is (the Gateway namespace's tollgate-ca ConfigMap, a token of the Gateway's proxy
// ServiceAccount), keeping what it applies (and so ACKing it); a suite waits on an arrival, not
// a timer.
import { EventEmitter, once } from 'node:events';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { LogControl } from '../../packages/proxy/src/log/logger.js';
import { ControllerSnapshotSource } from '../../packages/proxy/src/source/controller-source.js';
import type { SnapshotSink } from '../../packages/proxy/src/source/snapshot-source.js';
import type { ControllerProcess } from '../controller-process.js';
import { waitForObject } from '../controller-process.js';
import type { Cluster } from './cluster.js';
import { run } from './exec.js';

/** A snapshot as the proxy's source hands it on (the types of the build the proxy runs). */
export type StreamedSnapshot = Parameters<SnapshotSink['apply']>[0];

type PolicyIR = NonNullable<StreamedSnapshot['binds'][number]['listeners'][number]['routes'][number]['policy']>;

/** The policy of the route of HTTPRoute `route` in a snapshot: null without one, undefined when the route is not in it. */
export function routePolicy(s: StreamedSnapshot, route: string): PolicyIR | null | undefined {
  for (const b of s.binds) for (const l of b.listeners) for (const r of l.routes) if (r.origin?.kind === 'HTTPRoute' && r.origin.name === route) return r.policy;
  return undefined;
}

export interface StreamClient {
  readonly source: ControllerSnapshotSource;
  /** The first snapshot received (so far or next) that `holds`. */
  receive(holds: (s: StreamedSnapshot) => boolean): Promise<StreamedSnapshot>;
  stop(): void;
}

/** Connects as a proxy of Gateway `<namespace>/<name>` (whose proxy ServiceAccount is `<name>-tollgate`); files go in `dir`. */
export async function connectStreamClient(cluster: Cluster, controller: ControllerProcess, namespace: string, name: string, dir: string): Promise<StreamClient> {
  const cm = await waitForObject<{ data?: Record<string, string> }>(cluster, 'configmaps', 'tollgate-ca', namespace, (o) => Boolean(o.data?.['ca.crt']));
  await waitForObject(cluster, 'serviceaccounts', `${name}-tollgate`, namespace, () => true);
  const caFile = join(dir, 'ca.crt');
  const tokenFile = join(dir, 'token');
  writeFileSync(caFile, cm.data!['ca.crt']!);
  const token = await run(cluster.tools.kubectl, ['create', 'token', `${name}-tollgate`, '-n', namespace, '--audience', 'tollgate', '--duration=1h'], { env: cluster.env });
  writeFileSync(tokenFile, token.trim(), { mode: 0o600 });
  const address = String((await controller.waitForLog((l) => l.msg === 'snapshot stream listening')).address);
  const log = new LogControl('error', new Writable({ write: (_c, _e, cb) => cb() })).get('config');
  const received: StreamedSnapshot[] = [];
  const arrivals = new EventEmitter();
  const source = new ControllerSnapshotSource({ address, security: { kind: 'tls', caFile, tokenFile }, gateway: `${namespace}/${name}`, pod: `${name}-0`, podNamespace: namespace, log, initialBackoffMs: 50, maxBackoffMs: 500 });
  await source.start({
    apply: async (s) => {
      received.push(s);
      arrivals.emit('snapshot');
    },
  });
  return {
    source,
    receive: async (holds) => {
      for (;;) {
        const found = received.find(holds);
        if (found) return found;
        await once(arrivals, 'snapshot');
      }
    },
    stop: () => source.stop(),
  };
}
