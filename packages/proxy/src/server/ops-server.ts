// The operational endpoints: Prometheus metrics (:15020/metrics) and readiness
// (:15021/healthz/ready), each on its own port as orchestrators expect. Plain node:http:
// they serve scrapers and kubelets, not users.
import type { Server } from 'node:http';
import { http } from '@tollgate/kit/node-http';
import { once } from 'node:events';
import { TollgateError } from '../errors.js';

export type OpsHandler = (path: string) => Promise<{ status: number; type: string; body: string }>;

export class OpsServer {
  readonly #server: Server;
  constructor(
    readonly role: string,
    readonly host: string,
    readonly port: number,
    handler: OpsHandler,
  ) {
    this.#server = http.createServer((req, res) => {
      const path = (req.url ?? '/').split('?')[0]!;
      if (req.method !== 'GET' && req.method !== 'HEAD') {
        res.writeHead(405, { allow: 'GET', 'content-type': 'text/plain' }).end('use GET\n');
        return;
      }
      handler(path).then(
        (r) => res.writeHead(r.status, { 'content-type': r.type }).end(r.body),
        (err: unknown) => res.writeHead(500, { 'content-type': 'text/plain' }).end(`${(err as Error).message}\n`),
      );
    });
  }

  async listen(): Promise<string> {
    this.#server.listen(this.port, this.host);
    try {
      await Promise.race([once(this.#server, 'listening'), once(this.#server, 'error').then(([e]) => Promise.reject(e as Error))]);
    } catch (err) {
      const e = err as NodeJS.ErrnoException;
      const why = e.code === 'EADDRINUSE' ? 'is already in use' : `cannot be bound: ${e.message}`;
      throw new TollgateError('TG_BIND_IN_USE', `${this.role} address ${this.host}:${this.port} ${why}; set config.${this.role}Addr`, { cause: err });
    }
    return this.address;
  }

  /** The bound address (the real port when configured with port 0). */
  get address(): string {
    const a = this.#server.address();
    return typeof a === 'object' && a ? `${a.address}:${a.port}` : `${this.host}:${this.port}`;
  }

  async close(): Promise<void> {
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }
}
