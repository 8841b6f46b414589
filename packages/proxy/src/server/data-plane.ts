// One Fastify instance per bind. Fastify owns the socket lifecycle (keep-alive, 503 while
// closing, draining on close); every request goes to one catch-all route whose handler takes
// over the raw response, since a proxy streams bodies rather than building replies.
import type { IncomingMessage, ServerResponse } from 'node:http';
import Fastify, { type FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { ERRORS, RequestFailure, TollgateError } from '../errors.js';
import { sendError } from '../upstream/forward.js';
import type { CompiledSnapshot } from '../routing/compile.js';
import type { TraceHub } from '../trace/hub.js';
import { RequestTracer, type TraceEnv } from '../trace/tracer.js';
import { normalizeHost } from '../routing/hostname.js';
import { handleRequest, type DataPlaneDeps } from './handle-request.js';
import type { InFlight } from './inflight.js';

const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'OPTIONS', 'PATCH', 'TRACE'];

export interface DataPlaneContext extends DataPlaneDeps {
  current(): CompiledSnapshot;
  readonly log: Logger;
  readonly inflight: Map<number, InFlight>;
  readonly traces: TraceHub;
  readonly traceEnv: TraceEnv;
}

function claimTrace(ctx: DataPlaneContext, raw: IncomingMessage, acceptedAt: bigint, entry: InFlight): RequestTracer | null {
  const url = raw.url ?? '/';
  const q = url.indexOf('?');
  const session = ctx.traces.claim(
    { method: raw.method ?? 'GET', path: q < 0 ? url : url.slice(0, q), host: normalizeHost(raw.headers.host), headers: raw.headers },
    `${raw.method} ${url}`,
  );
  if (!session) return null;
  entry.traced = session.id;
  return new RequestTracer(ctx.traces, session, acceptedAt, raw, ctx.traceEnv);
}

let nextId = 1;

/** One request, start to end: the in-flight record, the trace claim, the pipeline, metrics. */
async function serve(ctx: DataPlaneContext, port: number, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const id = nextId++;
  const entry: InFlight = { id, method: req.method ?? 'GET', url: req.url ?? '/', startedAt: Date.now(), stage: 'routing' };
  ctx.inflight.set(id, entry);
  try {
    const tracer = ctx.traces.armed ? claimTrace(ctx, req, process.hrtime.bigint(), entry) : null;
    const outcome = await handleRequest(ctx.current(), port, req, res, ctx, entry, tracer);
    ctx.metrics.countRequest(outcome.route ?? 'none', outcome.status);
    if (ctx.log.isLevelEnabled('debug')) ctx.log.debug({ route: outcome.route, status: outcome.status, error: outcome.result?.error?.kind }, 'request done');
  } catch (err) {
    // Whatever one request throws ends that request only.
    const failure = err instanceof RequestFailure ? err : null;
    if (failure) ctx.log.debug({ code: failure.spec.code, reason: failure.message }, 'request refused');
    else ctx.log.error({ err }, 'request failed');
    const spec = failure?.spec ?? ERRORS.internal;
    if (!res.headersSent && !res.destroyed) sendError(res, spec);
    else res.destroy();
    ctx.metrics.countRequest('none', spec.status);
  } finally {
    ctx.inflight.delete(id);
  }
}

export class DataPlaneServer {
  readonly #app: FastifyInstance;
  constructor(
    readonly port: number,
    readonly address: string,
    ctx: DataPlaneContext,
  ) {
    this.#app = Fastify({
      logger: false,
      return503OnClosing: true,
      forceCloseConnections: 'idle',
      exposeHeadRoutes: false,
      routerOptions: { ignoreDuplicateSlashes: false, maxParamLength: 8192 },
    });
    // Bodies are never parsed here: the raw request stream goes upstream as it arrives.
    this.#app.removeAllContentTypeParsers();
    this.#app.addContentTypeParser('*', (_req, _payload, done) => done(null));
    this.#app.route({
      method: METHODS,
      url: '*',
      handler: (request, reply) => {
        reply.hijack();
        void serve(ctx, port, request.raw, reply.raw);
      },
    });
  }

  async listen(): Promise<void> {
    try {
      await this.#app.listen({ port: this.port, host: this.address });
    } catch (err) {
      const e = err as NodeJS.ErrnoException;
      if (e.code === 'EADDRINUSE') {
        throw new TollgateError('TG_BIND_IN_USE', `port ${this.port} on ${this.address} is already in use; stop the other process or change binds[].port`, { cause: err });
      }
      if (e.code === 'EACCES') {
        throw new TollgateError('TG_BIND_DENIED', `not allowed to listen on port ${this.port}; use a port above 1023 or run with the needed privilege`, { cause: err });
      }
      throw new TollgateError('TG_BIND_FAILED', `cannot listen on ${this.address}:${this.port}: ${e.message}`, { cause: err });
    }
  }

  /** Stops accepting, lets in-flight requests finish; after `deadlineMs` cuts what is left. */
  async close(deadlineMs: number): Promise<void> {
    const timer = setTimeout(() => this.#app.server.closeAllConnections(), deadlineMs);
    try {
      await this.#app.close();
    } finally {
      clearTimeout(timer);
    }
  }

  get boundPort(): number {
    const addr = this.#app.server.address();
    return typeof addr === 'object' && addr ? addr.port : this.port;
  }
}
