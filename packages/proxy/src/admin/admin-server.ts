// The admin server (127.0.0.1:15000 by default): inspection and control of this process.
// Each endpoint group is a small plugin in routes/; mutating requests pass the cross-site
// guard first.
import Fastify, { type FastifyInstance } from 'fastify';
import { TollgateError } from '../errors.js';
import type { AdminContext } from './context.js';
import { crossSiteGuard } from './csrf.js';
import { configDumpRoutes } from './routes/config-dump.js';
import { indexRoutes } from './routes/index-page.js';
import { loggingRoutes } from './routes/logging.js';
import { memoryRoutes } from './routes/memory.js';
import { pprofRoutes } from './routes/pprof.js';
import { quitRoutes } from './routes/quit.js';
import { tasksRoutes } from './routes/tasks.js';
import { traceRoutes } from './routes/trace.js';

export class AdminServer {
  readonly #app: FastifyInstance;
  constructor(
    readonly host: string,
    readonly port: number,
    ctx: AdminContext,
  ) {
    this.#app = Fastify({ logger: false, forceCloseConnections: true });
    this.#app.addHook('onRequest', crossSiteGuard);
    indexRoutes(this.#app);
    configDumpRoutes(this.#app, ctx);
    traceRoutes(this.#app, ctx);
    loggingRoutes(this.#app, ctx);
    memoryRoutes(this.#app, ctx);
    pprofRoutes(this.#app, ctx);
    tasksRoutes(this.#app, ctx);
    quitRoutes(this.#app, ctx);
    this.#app.setNotFoundHandler((request, reply) =>
      reply.code(404).type('text/plain; charset=utf-8').send(`no admin endpoint ${request.method} ${request.url.split('?')[0]}; GET / lists them\n`),
    );
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
