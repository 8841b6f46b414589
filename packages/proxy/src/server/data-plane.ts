// One Fastify instance per bind. Fastify owns the server's lifecycle (listen, close and the
// drain, client errors); a request with one of the proxied methods goes straight from the
// server to the pipeline, since a proxy streams bodies rather than building replies and routes
// by its own tables: Fastify's router, request and reply objects and content-type parsing
// would be per-request work whose result is thrown away (3-5% of the CPU of a proxied request
// by profile). Other methods still go through Fastify (its 404).
//
// An HTTPS bind is the same server over node:https. Its certificates are not options of the
// server: each ClientHello asks the bind's current certificate table (SNICallback), so a new
// snapshot swaps certificates for the next handshake while open connections keep theirs. A bind
// whose listeners check client certificates asks for one in every handshake; what each
// connection may do with its answer is ./client-handshake.ts. Either bind also serves HTTP/2,
// through the same handler: by prior knowledge on plain HTTP (./h2c.ts), by ALPN on HTTPS
// (./alpn.ts).
import type { IncomingMessage, Server as HttpServer, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { Server as NetServer } from 'node:net';
import { http as nodeHttp } from '@tollgate/kit/node-http';
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import type { SecureContext, Server as TlsServer, TLSSocket } from 'node:tls';
import Fastify, { type FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { ClientGone, ERRORS, RequestFailure, TollgateError } from '../errors.js';
import { RequestContext, type PipelineDeps } from '../pipeline/context.js';
import { handleRequest } from '../pipeline/handle-request.js';
import type { CompiledSnapshot } from '../routing/compile.js';
import { sendError } from '../upstream/forward.js';
import { NO_ROUTE } from '../metrics/metrics.js';
import { watchBody, type BodyTimeout, type BodyTimeouts } from './body-timeout.js';
import { closeHeaders, endAfterAnswer, Http2Front, isHttp2 } from './http2.js';
import { sniffPriorKnowledge } from './h2c.js';
import { ALPN_PROTOCOLS, dispatchByAlpn } from './alpn.js';
import type { InFlight } from '../pipeline/inflight.js';
import { serverContextOptions, type BindTls } from '../routing/tls-contexts.js';
import { ClientHandshakes } from './client-handshake.js';
import { isWebSocketUpgrade, upgradeResponse } from './upgrade-request.js';
import { listenAt, probePort, type BindSharing } from './bind-sharing.js';
import type { UpgradeRequest } from '../pipeline/upgrades.js';
import type { ConnectionSlots } from './connection-slots.js';
import type { RequestIds } from './request-ids.js';

const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'OPTIONS', 'PATCH', 'TRACE'];
const PROXIED = new Set(METHODS);

/** Limits on what a client may take of a connection; all in milliseconds. */
export interface ClientTimeouts {
  /** Time to receive the request line and headers (Node answers 408 past it). */
  readonly requestHeadersMs: number;
  /** Time without a byte of the request body before the request gets 408. */
  readonly requestBodyIdleMs: number;
  /** Time to receive the whole request body, from the end of the headers (408 past it). */
  readonly requestBodyMs: number;
  /** How long an idle keep-alive connection stays open. */
  readonly keepAliveMs: number;
}

export interface DataPlaneContext extends PipelineDeps {
  current(): CompiledSnapshot;
  readonly log: Logger;
  readonly inflight: Map<number, InFlight>;
  readonly clientTimeouts: ClientTimeouts;
  /** The body timeouts of clientTimeouts, in the shape the body watch reads. */
  readonly bodyTimeouts: BodyTimeouts;
  /** Client connections open at once on each bind (config.maxConnectionsPerBind). */
  readonly maxConnectionsPerBind: number;
  /** With worker threads: the table that makes maxConnectionsPerBind hold for all of them. */
  readonly connectionSlots?: ConnectionSlots;
  /** Where each request's id comes from (with worker threads, a counter they share). */
  readonly requestIds: RequestIds;
}

const BODY_TIMEOUTS = {
  idle: { spec: ERRORS.requestBodyTimeout, refusal: 'body_idle', log: 'request body idle: no byte within the body idle timeout' },
  deadline: { spec: ERRORS.requestBodyDeadline, refusal: 'body_deadline', log: 'request body deadline: the body did not arrive within config.requestBodyTimeout' },
} as const;

/** A client too slow with its body: answered 408 (when nothing was sent yet) and its connection closed. */
function bodyTimedOut(dp: DataPlaneContext, entry: InFlight, req: IncomingMessage, res: ServerResponse, why: BodyTimeout): void {
  const t = BODY_TIMEOUTS[why];
  dp.log.debug({ url: entry.url }, t.log);
  dp.metrics.countRefusal(t.refusal);
  res.shouldKeepAlive = false;
  if (res.headersSent || res.destroyed) {
    req.destroy();
    return;
  }
  sendError(res, t.spec, closeHeaders(req));
  endAfterAnswer(req, res);
}

let started = 0;

/** Requests this thread has begun serving, on any bind (GET /workers; the memory compaction waits for quiet). */
export function requestsStarted(): number {
  return started;
}

/** One request, start to end: the in-flight record, the pipeline, metrics, the request log. */
async function serve(dp: DataPlaneContext, port: number, req: IncomingMessage, res: ServerResponse, upgrade: UpgradeRequest | null = null): Promise<void> {
  started++;
  const id = dp.requestIds.next();
  const entry: InFlight = { id, method: req.method ?? 'GET', url: req.url ?? '/', startedAt: Date.now(), stage: 'routing' };
  dp.inflight.set(id, entry);
  const ctx = new RequestContext(dp.current(), port, req, res, entry, dp);
  ctx.upgrade = upgrade;
  watchBody(req, ctx.hasBody, dp.bodyTimeouts, (why) => bodyTimedOut(dp, entry, req, res, why));
  try {
    await handleRequest(ctx);
    // The consumer's name (never its credential) once an authentication kind established it;
    // the client's HTTP version (`1.1`, `2.0`), as Envoy's %PROTOCOL%.
    if (dp.log.isLevelEnabled('debug')) dp.log.debug({ route: ctx.routeName, status: ctx.status, error: ctx.error ?? undefined, consumer: ctx.consumer?.name, http: req.httpVersion }, 'request done');
  } catch (err) {
    // Whatever one request throws ends that request only.
    // Refused before reaching a backend (e.g. an unreadable body): limits forget the request.
    if (ctx.backend) ctx.admissions?.settle(null);
    else ctx.admissions?.refund();
    if (err instanceof ClientGone) {
      dp.log.debug({ code: err.code, reason: err.message }, 'client went away');
      ctx.status = 499;
      res.destroy();
      return;
    }
    const failure = err instanceof RequestFailure ? err : null;
    if (failure) dp.log.debug({ code: failure.spec.code, reason: failure.message }, 'request refused');
    else dp.log.error({ err }, 'request failed');
    const spec = failure?.spec ?? ERRORS.internal;
    ctx.status = spec.status;
    if (res.headersSent || res.destroyed) res.destroy();
    else if (req.complete) sendError(res, spec, failure?.headers);
    else {
      // Refused before its body was read (413, 503 of the body budget): the connection ends, the
      // answer first (see linger.ts).
      res.shouldKeepAlive = false;
      sendError(res, spec, { ...failure?.headers, ...closeHeaders(req) });
      endAfterAnswer(req, res);
    }
  } finally {
    // An upgrade that got no tunnel (refused, not 101, failed) gives its slot back.
    if (upgrade && !upgrade.slot.holdsTunnel) upgrade.slot.release();
    ctx.releaseBody();
    dp.metrics.countRequest(ctx.routeName ?? NO_ROUTE, ctx.status);
    dp.inflight.delete(id);
  }
}

/** How a bind's server stops; all in milliseconds. */
export interface DrainTimes {
  /** After it, the connections still open are cut, requests in flight or not. */
  readonly deadlineMs: number;
  /**
   * How long idle kept-alive connections stay open for the client's next request (answered,
   * with `Connection: close`) before they are closed; the caller keeps it at most `deadlineMs`.
   */
  readonly idleMs: number;
}

/** The data plane's schema compilers: it declares no schema, so one asked for is a mistake here. */
function noSchemas(): never {
  throw new Error('the data plane declares no route schemas: fastify was asked to compile one');
}

export class DataPlaneServer {
  readonly #app: FastifyInstance;
  /** Set once close() begins: requests still arriving on kept-alive connections get `Connection: close`. */
  #closing = false;
  #tls: BindTls | null = null;
  /** HTTP/2 from clients: by prior knowledge on a plain HTTP bind, by ALPN on HTTPS. */
  #h2: Http2Front | null = null;
  #fallback: SecureContext | null = null;
  #requestCert = false;
  /**
   * `tls`: the bind's certificates; null for plain HTTP. A bind never changes between the
   * two: the runtime opens a new server when a port's protocol changes.
   */
  constructor(
    readonly port: number,
    readonly address: string,
    private readonly ctx: DataPlaneContext,
    tls: BindTls | null = null,
  ) {
    const t = ctx.clientTimeouts;
    // Node checks header deadlines on this interval: keep it a fraction of the timeout. No
    // whole-request timeout, given here: Node refuses a headersTimeout above the requestTimeout
    // a server is created with (5 minutes by default), so a longer requestHeadersTimeout failed.
    const http = { headersTimeout: t.requestHeadersMs, requestTimeout: 0, connectionsCheckingInterval: Math.max(50, Math.min(1000, Math.floor(t.requestHeadersMs / 4))) };
    this.tls = tls !== null;
    this.#tls = tls;
    const currentTls = (): BindTls => this.#tls!;
    const handshakes = new ClientHandshakes(currentTls, ctx.log, ctx.metrics);
    const https = tls
      ? {
          ...http,
          ...serverContextOptions(tls),
          // A client that opens a connection and never finishes the handshake holds it no
          // longer than one that never finishes its request headers.
          handshakeTimeout: t.requestHeadersMs,
          // h2 or http/1.1 (./alpn.ts); a server option, whichever listener's context SNI picks.
          ALPNProtocols: [...ALPN_PROTOCOLS],
          // node:tls calls it on the connection's TLSSocket (`this`).
          SNICallback(this: unknown, servername: string, cb: (err: Error | null, ctx?: SecureContext) => void) {
            const current = currentTls();
            const listener = current.bySni.first(servername.toLowerCase());
            const name = listener && current.byListener.has(listener.name) ? listener.name : current.fallbackListener;
            if (this && typeof this === 'object') handshakes.chose(this, name, current);
            cb(null, current.byListener.get(name));
          },
        }
      : null;
    this.#fallback = tls?.fallback ?? null;
    this.#requestCert = tls?.requestCert ?? false;
    // Requests with a proxied method skip Fastify's routing (see the top of this file).
    const direct = (req: IncomingMessage, res: ServerResponse, fastifyHandler: (req: IncomingMessage, res: ServerResponse) => void): void => {
      if (!PROXIED.has(req.method ?? '')) {
        // Fastify's 404 is for node:http's objects; HTTP/2 gets the catalog's.
        if (isHttp2(req)) sendError(res, ERRORS.noRoute);
        else fastifyHandler(req, res);
        return;
      }
      // During the drain a request on a kept-alive connection is still served, with
      // `Connection: close`, so the client's next request opens a connection elsewhere (the
      // Service's other pods) instead of getting a 503 this pod could have answered. HTTP/2
      // sessions got a GOAWAY when the drain began.
      if (this.#closing && !isHttp2(req)) res.setHeader('connection', 'close');
      void serve(ctx, port, req, res);
    };
    // A WebSocket upgrade request (isWebSocketUpgrade) arrives with its connection, which the
    // HTTP server no longer parses: it goes through the same pipeline with a response object of
    // its own on that connection, so a refusal is an ordinary answer (and the connection closes).
    const upgraded = (req: IncomingMessage, socket: Duplex, head: Buffer): void => {
      const res = upgradeResponse(req, socket);
      if (this.#closing) {
        sendError(res, ERRORS.websocketDraining, { 'retry-after': '0' });
        return;
      }
      const slot = ctx.upgrades.reserve();
      if (!slot) {
        ctx.metrics.countRefusal('websocket_limit');
        sendError(res, ERRORS.websocketLimit, { 'retry-after': '1' });
        return;
      }
      void serve(ctx, port, req, res, { socket, head, slot, bind: this });
    };
    this.#app = Fastify({
      logger: false,
      // Fastify applies none of its server options to a server it did not create: the ones
      // that matter are set here (no whole-request or socket timeout: the body idle timeout
      // and the header deadline above bound a slow client instead).
      serverFactory: (fastifyHandler) => {
        const handler = (req: IncomingMessage, res: ServerResponse): void => direct(req, res, fastifyHandler);
        const server: HttpServer = https ? createHttpsServer({ ...https, shouldUpgradeCallback: isWebSocketUpgrade }, handler) : nodeHttp.createServer({ ...http, shouldUpgradeCallback: isWebSocketUpgrade }, handler);
        server.on('upgrade', upgraded);
        this.#h2 = new Http2Front(handler, t.keepAliveMs);
        if (https) dispatchByAlpn(server as HttpsServer, this.#h2);
        else sniffPriorKnowledge(server, this.#h2, t.requestHeadersMs);
        server.keepAliveTimeout = t.keepAliveMs;
        server.setTimeout(0);
        // Beyond it node:net closes a new connection as soon as it is accepted ('drop').
        server.maxConnections = ctx.maxConnectionsPerBind;
        server.on('drop', () => ctx.metrics.countRefusal('connection_limit'));
        // Across worker threads the cap holds for all of them together (./connection-slots.ts).
        ctx.connectionSlots?.guard(server, `${address}:${port}`, ctx.maxConnectionsPerBind, () => ctx.metrics.countRefusal('connection_limit'));
        return server;
      },
      return503OnClosing: false,
      forceCloseConnections: 'idle',
      exposeHeadRoutes: false,
      // No route of the data plane declares a schema: fastify's default compilers (ajv and
      // fast-json-stringify, megabytes of every thread's heap) would be loaded for nothing.
      schemaController: { compilersFactory: { buildValidator: noSchemas, buildSerializer: noSchemas } },
      routerOptions: { ignoreDuplicateSlashes: false, maxParamLength: 8192 },
      frameworkErrors: (error, _request, reply) => {
        reply.hijack();
        sendError(reply.raw, ERRORS.badRequest, undefined, error.message);
      },
    });
    if (tls) {
      // A failed handshake (no shared cipher, a client refusing the certificate) ends that
      // connection only; Node closes it.
      this.#app.server.on('tlsClientError', (err: NodeJS.ErrnoException) => ctx.log.debug({ code: err.code, reason: err.message }, 'TLS handshake failed'));
      // Before the HTTP parser's listener: the connection's record exists before its first request.
      this.#app.server.prependListener('secureConnection', (socket: TLSSocket) => handshakes.secured(socket));
    }
    // No route is registered: Fastify sees only requests with other methods, and answers 404.
  }

  readonly tls: boolean;
  /** Set by listen(): how this bind shares its port with the other worker threads (null: it does not). */
  #sharing: BindSharing | null = null;

  /**
   * The bind's certificates from a newly applied snapshot: the next handshake uses them; open
   * connections keep the certificate they were opened with.
   */
  useTls(tls: BindTls): void {
    this.#tls = tls;
    // The default (no SNI) context is the server's own: replaced only when it, or whether
    // handshakes ask for a client certificate, changed.
    if (tls.fallback !== this.#fallback || tls.requestCert !== this.#requestCert) {
      (this.#app.server as unknown as TlsServer).setSecureContext(serverContextOptions(tls));
      this.#fallback = tls.fallback;
      this.#requestCert = tls.requestCert;
    }
  }

  /** Listens; a failure is a catalog error naming the bind, its listeners and the fix. */
  async listen(listeners: readonly string[], sharing: BindSharing | null = null, probe = true): Promise<void> {
    this.#sharing = sharing;
    try {
      if (probe) await probePort(sharing, this.address, this.port);
      await this.#app.listen(listenAt(sharing, this.address, this.port));
    } catch (err) {
      throw bindError(err as NodeJS.ErrnoException, this.address, this.port, listeners);
    }
  }

  /** Stops accepting new connections now (the port is free again); open ones carry on. */
  stopAccepting(): void {
    // The listening socket only: http.Server#close() would also close the idle kept-alive
    // connections at once, and a client sending its next request on one just then gets a
    // reset instead of an answer. close() below gives them their grace first.
    if (this.#app.server.listening) NetServer.prototype.close.call(this.#app.server);
  }

  /**
   * Listens again on the port `stopAccepting()` freed: a reload that gave the port to another
   * kind of server and then failed puts this one back. The bound port is kept, so a bind on
   * port 0 gets the same port again.
   */
  async resumeAccepting(port: number): Promise<void> {
    const server = this.#app.server;
    if (server.listening) return;
    await new Promise<void>((resolve, reject) => {
      const fail = (err: Error): void => reject(err);
      server.once('error', fail);
      server.listen(listenAt(this.#sharing && { port: () => port, probe: false }, this.address, port), () => {
        server.off('error', fail);
        resolve();
      });
    });
  }

  /**
   * Stops accepting; for `idleMs` a request on an open connection is still served (with
   * `Connection: close`, so the client's next one opens a connection elsewhere); then the idle
   * connections are closed and in-flight requests finish; at `deadlineMs` what is left is cut.
   *
   * Closing an idle HTTP/1.1 connection races with a client sending its next request on it,
   * which then fails with a reset though no server ever received it. A client that keeps
   * sending (the usual case behind a Service, where a pod's kept-alive connections outlive
   * its endpoint) is moved off during the grace without that race.
   */
  async close(times: DrainTimes): Promise<void> {
    this.#closing = true;
    // At the deadline the WebSockets this bind accepted close as well: the server's count of
    // open connections includes them, so the drain would otherwise wait for their clients.
    const timer = setTimeout(() => {
      this.#app.server.closeAllConnections();
      this.ctx.upgrades.closeBind(this);
      this.#h2?.destroyAll();
    }, times.deadlineMs);
    this.#h2?.goAway();
    try {
      this.stopAccepting();
      if (times.idleMs > 0) await this.#lastConnectionGone(times.idleMs);
      // Closes the connections idle now and waits for those with a request in flight.
      await this.#app.close();
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * Resolves once no client connection is open, or after `ms`. A server that no longer listens
   * emits 'close' when its last connection ends (net.Server), and the count cannot rise again.
   */
  async #lastConnectionGone(ms: number): Promise<void> {
    const server = this.#app.server;
    const open = await new Promise<number>((resolve) => server.getConnections((err, n) => resolve(err ? 0 : n)));
    if (open === 0) return;
    await new Promise<void>((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        server.off('close', done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      server.once('close', done);
    });
  }

  get boundPort(): number {
    const addr = this.#app.server.address();
    return typeof addr === 'object' && addr ? addr.port : this.port;
  }
}

function bindError(e: NodeJS.ErrnoException, address: string, port: number, listeners: readonly string[]): TollgateError {
  const bind = `bind ${address}:${port} (listener${listeners.length === 1 ? '' : 's'} ${listeners.join(', ')})`;
  switch (e.code) {
    case 'EADDRINUSE':
      return new TollgateError('TG_BIND_IN_USE', `${bind} is already in use; stop the other process on port ${port} or change binds[].port`, { cause: e });
    case 'EACCES':
      return new TollgateError('TG_BIND_DENIED', `${bind}: not allowed to listen on port ${port}; use a port above 1023 or run with the privilege to bind low ports`, { cause: e });
    case 'EADDRNOTAVAIL':
      return new TollgateError('TG_BIND_FAILED', `${bind}: cannot listen on ${address}: it is not an address of this machine (EADDRNOTAVAIL); change binds[].address`, { cause: e });
    default:
      return new TollgateError('TG_BIND_FAILED', `${bind}: cannot listen on ${address}:${port}: ${e.message}`, { cause: e });
  }
}
