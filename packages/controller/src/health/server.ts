// /healthz and /readyz on --health-addr (:9093), for the kubelet's probes. Live while the
// process runs; ready once every watched kind has been listed (the caches reflect the
// cluster), staying ready while a watch reconnects: the caches are then stale, not empty.
import type { HostPort } from '../runtime/host-port.js';
import { HttpServer } from '../runtime/http-server.js';

export interface Readiness {
  /** What is not ready yet; empty when ready. */
  notReady(): string[];
}

export function healthServer(addr: HostPort, readiness: Readiness, onListening: (a: string) => void): HttpServer {
  const text = { 'content-type': 'text/plain; charset=utf-8' };
  return new HttpServer('health', '--health-addr', addr, {
    '/healthz': (_req, res) => void res.writeHead(200, text).end('ok\n'),
    '/readyz': (_req, res) => {
      const missing = readiness.notReady();
      if (missing.length) res.writeHead(503, text).end(`not ready: ${missing.join('; ')}\n`);
      else res.writeHead(200, text).end('ok\n');
    },
  }, onListening);
}
