// The admin server (127.0.0.1:15000 by default): inspection and control of this process.
import Fastify, { type FastifyInstance } from 'fastify';
import { TollgateError } from '../errors.js';
import type { ProxyRuntime } from '../server/runtime.js';
import { configDump } from './config-dump.js';

const INDEX = `<!doctype html><meta charset="utf-8"><title>Tollgate admin</title>
<h1>Tollgate admin</h1><ul>
<li><a href="/config_dump">/config_dump</a>: the loaded configuration (JSON)</li>
</ul>`;

export class AdminServer {
  readonly #app: FastifyInstance;
  constructor(
    readonly host: string,
    readonly port: number,
    runtime: ProxyRuntime,
  ) {
    this.#app = Fastify({ logger: false });
    this.#app.get('/', async (_req, reply) => reply.type('text/html; charset=utf-8').send(INDEX));
    this.#app.get('/config_dump', async () => configDump(runtime.current.ir, runtime.loadedAt));
  }

  async listen(): Promise<string> {
    try {
      await this.#app.listen({ host: this.host, port: this.port });
    } catch (err) {
      const e = err as NodeJS.ErrnoException;
      const fix = e.code === 'EADDRINUSE' ? 'is already in use; stop the other process or set config.adminAddr' : `cannot be bound: ${e.message}`;
      throw new TollgateError('TG_ADMIN_BIND', `admin address ${this.host}:${this.port} ${fix}`, { cause: err });
    }
    return this.address;
  }

  get address(): string {
    const a = this.#app.server.address();
    if (typeof a === 'object' && a) return a.family === 'IPv6' ? `[${a.address}]:${a.port}` : `${a.address}:${a.port}`;
    return `${this.host}:${this.port}`;
  }

  async close(): Promise<void> {
    await this.#app.close();
  }
}
