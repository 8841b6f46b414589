// The admin server (127.0.0.1:15000 by default): inspection and control of this process. The
// scaffolding (Host and browser guards, index page, 404/405, /logging, /memory, pprof) comes from
// @tollgate/kit; the proxy's own endpoint groups are small route functions in routes/.
import { AdminServer as KitAdminServer, CatalogError, memoryRoutes, pprofRoutes, textLoggingRoutes, type AdminEndpoint } from '@tollgate/kit';
import { TollgateError } from '../errors.js';
import type { AdminContext } from './context.js';
import { backendsRoutes } from './routes/backends.js';
import { configDumpRoutes } from './routes/config-dump.js';
import { quitRoutes } from './routes/quit.js';
import { tasksRoutes } from './routes/tasks.js';
import { traceRoutes } from './routes/trace.js';

export const ENDPOINTS: readonly AdminEndpoint[] = [
  { method: 'GET', path: '/config_dump', description: 'the loaded configuration (JSON; secrets redacted)' },
  { method: 'GET', path: '/backends', description: 'backends and the live state of their endpoints (JSON); ?name=&lt;backend&gt; and ?namespace=&lt;ns&gt; narrow it' },
  { method: 'GET', path: '/debug/trace', description: 'trace the next request as server-sent events; ?match=&lt;CEL&gt; narrows it' },
  { method: 'GET', path: '/logging', description: 'current log directive; POST ?level=&lt;directive&gt; sets it, POST ?reset restores it' },
  { method: 'GET', path: '/memory', description: 'process and V8 memory (JSON); ?gc=true runs a full garbage collection first' },
  { method: 'GET', path: '/debug/pprof/profile', description: 'CPU profile, pprof format; ?seconds=1..300 (default 10)' },
  { method: 'GET', path: '/debug/pprof/heap', description: 'heap profile, pprof format' },
  { method: 'GET', path: '/debug/tasks', description: 'live work: listeners, requests in flight, trace sessions, background tasks' },
  { method: 'POST', path: '/quitquitquit', description: 'graceful shutdown' },
];

export class AdminServer {
  readonly #server: KitAdminServer;
  constructor(
    readonly host: string,
    readonly port: number,
    ctx: AdminContext,
  ) {
    this.#server = new KitAdminServer({ host, port, title: 'Tollgate admin', endpoints: ENDPOINTS, allowedHosts: ctx.allowedHosts });
    const app = this.#server.app;
    configDumpRoutes(app, ctx);
    backendsRoutes(app, ctx);
    traceRoutes(app, ctx);
    textLoggingRoutes(app, { logs: ctx.logs, onChange: (directive) => ctx.logs.get('admin').info(`log level changed to ${directive}`) });
    memoryRoutes(app);
    pprofRoutes(app);
    tasksRoutes(app, ctx);
    quitRoutes(app, ctx);
  }

  /** Listens; the bound address. Throws TollgateError TG_ADMIN_BIND. */
  async listen(): Promise<string> {
    try {
      return await this.#server.listen();
    } catch (err) {
      if (err instanceof CatalogError) throw new TollgateError('TG_ADMIN_BIND', err.message, { cause: err.cause });
      throw err;
    }
  }

  get address(): string {
    return this.#server.address;
  }

  async close(): Promise<void> {
    await this.#server.close();
  }
}
