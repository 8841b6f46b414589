// The controller's real snapshot stream server on loopback for the proxy's tests, with TLS from
// stream-tls.ts and a store that holds one snapshot (one route) for the Gateway.
import { standaloneToSnapshot, validateStandaloneConfig } from '@tollgate/api';
import { SnapshotStore, SnapshotStreamServer, StreamMetrics, type StreamLimits } from '@tollgate/controller';
import pino from 'pino';
import { Registry } from 'prom-client';
import type { StreamTls } from './stream-tls.js';

/** Started; the caller stops `server`. `port` 0: any free one. */
export async function streamController(gateway: string, tls: StreamTls, port = 0, limits: Partial<StreamLimits> = {}): Promise<{ server: SnapshotStreamServer; store: SnapshotStore }> {
  const store = new SnapshotStore();
  const config = { binds: [{ port: 18080, listeners: [{ name: 'main', protocol: 'HTTP', routes: [{ name: 'r', backends: [{ host: '127.0.0.1:1' }] }] }] }] };
  store.offer(new Map([[gateway, standaloneToSnapshot(validateStandaloneConfig(config, 'test'), { kind: 'controller', gateway })]]));
  const server = new SnapshotStreamServer({ addr: { host: '127.0.0.1', port }, security: tls.server, store, metrics: new StreamMetrics(new Registry()), log: pino({ level: 'silent' }), limits });
  await server.start();
  return { server, store };
}
