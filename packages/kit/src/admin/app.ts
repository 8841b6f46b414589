// The admin server scaffolding shared by the proxy and the controller: a Fastify app with the
// Host and browser guards on every request, an HTML index of the endpoints at GET /, a 405
// with Allow for a known path asked with the wrong method, a 404 pointing at the index for the
// rest, and listen/close with a catalog error when the address cannot be bound. Endpoints are
// added by route functions (./logging-text.ts, ./logging-json.ts, ./pprof.ts, the caller's).
// The index is the list of the routes registered with an `index` line in their config, in the
// order they were registered: an endpoint is described once, where it is served, and no
// server restates the list.
import Fastify, { type FastifyInstance } from 'fastify';
import { KIT_ERRORS } from '../errors/catalog.js';
import { browserGuard, hostGuard } from './guards.js';
import { replyError } from './reply.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route's line on the admin index page (HTML allowed); a route without one is not listed. */
    readonly index?: string;
  }
}

export interface AdminEndpoint {
  readonly method: 'GET' | 'POST';
  readonly path: string;
  /** One line for the index page (HTML allowed). */
  readonly description: string;
}

export interface AdminServerOptions {
  readonly host: string;
  readonly port: number;
  /** What the index page and bind errors call the server, e.g. "admin". */
  readonly role?: string;
  /** Title of the index page, e.g. "Tollgate admin". */
  readonly title: string;
  /** Host names besides loopback that requests may carry (config.adminAllowedHosts). */
  readonly allowedHosts?: readonly string[];
}

const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS'] as const;

function indexPage(title: string, endpoints: readonly AdminEndpoint[]): string {
  const rows = endpoints.map(({ method, path, description }) => `<tr><td>${method}</td><td>${method === 'GET' ? `<a href="${path}">${path}</a>` : path}</td><td>${description}</td></tr>`);
  return `<!doctype html><meta charset="utf-8"><title>${title}</title>\n<h1>${title}</h1>\n<table>${rows.join('')}</table>\n`;
}

function isIndexed(method: string): method is AdminEndpoint['method'] {
  return method === 'GET' || method === 'POST';
}

/** The endpoints of `app` that carry an index line, as they are registered. */
function indexedEndpoints(app: FastifyInstance): readonly AdminEndpoint[] {
  const endpoints: AdminEndpoint[] = [];
  app.addHook('onRoute', ({ method, url, config }) => {
    const description = config?.index;
    if (description === undefined) return;
    // Fastify adds a HEAD route beside each GET, with the same config: the GET row covers it.
    for (const m of [method].flat()) if (isIndexed(m)) endpoints.push({ method: m, path: url, description });
  });
  return endpoints;
}

/** A Fastify app with the guards, the index, 404 and 405 in place. */
export function createAdminApp(options: Pick<AdminServerOptions, 'title' | 'allowedHosts'>): FastifyInstance {
  const app = Fastify({ logger: false, forceCloseConnections: true });
  app.addHook('onRequest', hostGuard(options.allowedHosts));
  app.addHook('onRequest', browserGuard);
  const endpoints = indexedEndpoints(app);
  app.get('/', async (_request, reply) => reply.type('text/html; charset=utf-8').send(indexPage(options.title, endpoints)));
  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split('?')[0] ?? '/';
    const allow = METHODS.filter((method) => method !== request.method && app.hasRoute({ method, url: path }));
    if (allow.length) return replyError(reply.header('allow', allow.join(', ')), KIT_ERRORS.adminMethod, { method: request.method, path, allow: allow.join(' or ') });
    return replyError(reply, KIT_ERRORS.adminNotFound, { method: request.method, path });
  });
  return app;
}

/** An admin app bound to an address. */
export class AdminServer {
  readonly app: FastifyInstance;
  readonly host: string;
  readonly port: number;
  readonly #role: string;

  constructor(options: AdminServerOptions) {
    this.host = options.host;
    this.port = options.port;
    this.#role = options.role ?? 'admin';
    this.app = createAdminApp(options);
  }

  /** Listens; the bound address (`host:port`, IPv6 bracketed). Throws TG_ADMIN_BIND. */
  async listen(): Promise<string> {
    try {
      await this.app.listen({ host: this.host, port: this.port });
    } catch (err) {
      const e = err as NodeJS.ErrnoException;
      const problem = e.code === 'EADDRINUSE' ? 'is already in use; stop the other process or set config.adminAddr' : `cannot be bound: ${e.message}`;
      throw KIT_ERRORS.adminBind.create({ role: this.#role, address: `${this.host}:${this.port}`, problem }, { cause: err });
    }
    return this.address;
  }

  get address(): string {
    const a = this.app.server.address();
    if (typeof a === 'object' && a) return a.family === 'IPv6' ? `[${a.address}]:${a.port}` : `${a.address}:${a.port}`;
    return `${this.host}:${this.port}`;
  }

  async close(): Promise<void> {
    await this.app.close();
  }
}
