// GET /metrics on --metrics-addr (:9092), Prometheus text format.
import type { HostPort } from '../runtime/host-port.js';
import { HttpServer } from '../runtime/http-server.js';
import type { ControllerMetrics } from './metrics.js';

export function metricsServer(addr: HostPort, metrics: ControllerMetrics, onListening: (a: string) => void): HttpServer {
  return new HttpServer('metrics', '--metrics-addr', addr, {
    '/metrics': async (_req, res) => {
      const body = await metrics.registry.metrics();
      res.writeHead(200, { 'content-type': metrics.registry.contentType }).end(body);
    },
  }, onListening);
}
