// A small plain-HTTP server runnable (metrics, health): GET routes only, everything else 404.
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { http } from '@tollgate/kit/node-http';
import type { HostPort } from './host-port.js';
import { bindError, listenAddress } from './listen.js';
import type { Runnable } from './runnable.js';

export type Handler = (req: IncomingMessage, res: ServerResponse) => void | Promise<void>;

export class HttpServer implements Runnable {
  readonly needsLeader = false;
  readonly #server: Server;
  #address = '';

  constructor(
    readonly name: string,
    private readonly flag: string,
    private readonly addr: HostPort,
    routes: Record<string, Handler>,
    private readonly onListening: (address: string) => void,
  ) {
    this.#server = http.createServer((req, res) => {
      const path = (req.url ?? '/').split('?')[0]!;
      const handler = routes[path];
      if (!handler) {
        res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end(`not found; endpoints: ${Object.keys(routes).join(', ')}\n`);
        return;
      }
      if (req.method !== 'GET' && req.method !== 'HEAD') {
        res.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'text/plain; charset=utf-8' }).end(`${req.method} not allowed; use GET\n`);
        return;
      }
      Promise.resolve(handler(req, res)).catch((err: unknown) => {
        if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' });
        res.end(`${(err as Error)?.message ?? String(err)}\n`);
      });
    });
    this.#server.keepAliveTimeout = 5_000;
  }

  get address(): string {
    return this.#address;
  }

  async start(): Promise<void> {
    await new Promise<void>((resolve, reject) => {
      const onError = (err: unknown) => reject(bindError(this.name, this.flag, this.addr, err));
      this.#server.once('error', onError);
      this.#server.listen(this.addr.port, this.addr.host || '0.0.0.0', () => {
        this.#server.off('error', onError);
        resolve();
      });
    });
    this.#address = listenAddress(this.#server);
    this.onListening(this.#address);
  }

  async stop(): Promise<void> {
    await new Promise<void>((resolve) => {
      this.#server.close(() => resolve());
      this.#server.closeAllConnections();
    });
  }
}
