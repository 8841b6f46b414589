// The admin server (127.0.0.1:15000 by default): inspection and control of this process. The
// scaffolding (Host and browser guards, index page, 404/405, /logging, /memory, pprof) comes from
// @tollgate/kit; the proxy's own endpoint groups are small route functions in routes/.
import { AdminServer as KitAdminServer, CatalogError, memoryRoutes, pprofRoutes, textLoggingRoutes } from '@tollgate/kit';
import { TollgateError } from '../errors.js';
import type { AdminContext } from './context.js';
import { backendsRoutes } from './routes/backends.js';
import { budgetsRoutes } from './routes/budgets.js';
import { configDumpRoutes } from './routes/config-dump.js';
import { quitRoutes } from './routes/quit.js';
import { tasksRoutes } from './routes/tasks.js';
import { workersRoutes } from './routes/workers.js';
import { traceRoutes } from './routes/trace.js';

export class AdminServer {
  readonly #server: KitAdminServer;
  constructor(
    readonly host: string,
    readonly port: number,
    ctx: AdminContext,
  ) {
    this.#server = new KitAdminServer({ host, port, title: 'Tollgate admin', allowedHosts: ctx.allowedHosts });
    const app = this.#server.app;
    configDumpRoutes(app, ctx);
    backendsRoutes(app, ctx);
    budgetsRoutes(app, ctx);
    traceRoutes(app, ctx);
    textLoggingRoutes(app, {
      logs: ctx.logs,
      onChange: (directive) => {
        ctx.workers?.setLogDirective(directive);
        ctx.logs.get('admin').info(`log level changed to ${directive}`);
      },
    });
    memoryRoutes(app);
    pprofRoutes(app);
    tasksRoutes(app, ctx);
    workersRoutes(app, ctx);
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
