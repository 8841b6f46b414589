// The upstream call: one undici dispatch whose handler writes the response straight to the
// client socket as it arrives, so bodies stream both ways without buffering (an SSE chunk
// reaches the client when the backend sends it) and backpressure flows through: a slow
// client pauses the upstream read. A client that goes away aborts the upstream request.
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex, Readable } from 'node:stream';
import type { Dispatcher } from 'undici';
import { ClientGone, ERRORS, type ErrorSpec } from '../errors.js';
import { endToEnd } from './headers.js';
import { tlsFailureKind } from './backend-tls.js';
import { NO_APPLICATION_PROTOCOL, NO_H2_CODE } from './h2-tls.js';
import { endGrpcCall, isGrpcRequest, sendGrpcError, takeTrailersOnly } from './grpc.js';

export interface ForwardRequest {
  readonly method: string;
  /** Path and query. */
  readonly path: string;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly body: Readable | Buffer | null;
  /** Time to the response headers (timeouts.backendRequest); 0: none. */
  readonly headersTimeoutMs: number;
  readonly bodyTimeoutMs: number;
  /** Whole-exchange deadline (route timeouts.request), or null. */
  readonly requestTimeoutMs: number | null;
  /** A TLS backend's name (Endpoint#servername): undici would otherwise take the Host header as SNI. */
  readonly servername?: string;
  /**
   * The protocol a client asked to upgrade to (`websocket`): sent as `Connection: upgrade` and
   * `Upgrade`; a 101 goes to ForwardHooks.onUpgrade, any other answer is relayed as usual.
   */
  readonly upgrade?: string;
}

export interface TransportError {
  /** Catalog code, e.g. TG_UPSTREAM_REFUSED. */
  readonly kind: string;
  readonly message: string;
  /** The catalog entry to answer with when nothing was sent yet. */
  readonly spec?: ErrorSpec;
}

export interface ForwardResult {
  /** Status sent to the client (the backend's, or the error status). */
  readonly status: number;
  /** Status the backend answered, null when it never answered. */
  readonly upstreamStatus: number | null;
  readonly error: TransportError | null;
  /** False when nothing reached the client yet: the caller must answer (with error.spec). */
  readonly responded: boolean;
  /**
   * True when the request failed before undici handed it to a connection (refused, reset or
   * timed out while connecting): not one byte of it was written, so it may be sent to another
   * endpoint whatever its method, and its body (a stream too) was not read.
   */
  readonly unsent: boolean;
  /**
   * True when ForwardHooks.judge discarded the answer (another attempt follows): nothing reached
   * the client; `upstreamStatus` is the answer's status.
   */
  readonly discarded: boolean;
}

/** What a ResponseProcessor made of the response's head: go on (its headers edited in place), or an answer in its place. */
export type ProcessedHead =
  | { readonly replace: false }
  | { readonly replace: true; readonly status: number; readonly headers: Record<string, string>; readonly body: Buffer };

/** The response may not go on: answered with `spec` when nothing was sent yet, else the connection is cut. */
export class ProcessorRefusal extends Error {
  constructor(
    readonly spec: ErrorSpec,
    message: string,
  ) {
    super(message);
    this.name = 'ProcessorRefusal';
  }
}

/**
 * A party that sees the response and may change it asynchronously (an external processor,
 * ext-proc/response.ts): its steps run in order, the backend's body paused while one runs.
 * Rejects with ProcessorRefusal.
 */
export interface ResponseProcessor {
  /** After onResponseHeaders: may edit `headers` in place, or replace the answer. */
  head(status: number, headers: Record<string, string | string[] | undefined>): Promise<ProcessedHead>;
  /** What to send of a chunk (after `transform`); `end`: the last (possibly empty). */
  body(chunk: Buffer, end: boolean): Promise<Buffer>;
}

export interface ForwardHooks {
  /**
   * May change the response headers before they are sent (ResponseHeaderModifier). Returns true
   * to hold the status and headers until the body's end (a translated body, whose status may
   * still change): `transform` then returns nothing, and `flush` the whole body.
   */
  readonly onResponseHeaders?: (status: number, headers: Record<string, string | string[] | undefined>) => boolean | void;
  /** The status to send for a held response, asked once its body ended. */
  readonly finalStatus?: () => number;
  /** Sees each response chunk and returns what to send (the LLM usage meter). */
  readonly transform?: (chunk: Buffer) => Buffer;
  /** Returns what is left to send when the upstream response ends (a promise: send it once settled). */
  readonly flush?: () => Buffer | Promise<Buffer>;
  /**
   * The backend switched protocols (101, ForwardRequest.upgrade): its headers (end to end, as
   * onResponseHeaders sees them), the protocol its Upgrade header names, and its connection,
   * now the hook's to join with the client's.
   */
  readonly onUpgrade?: (headers: Record<string, string | string[] | undefined>, protocol: string | undefined, socket: Duplex) => void;
  /**
   * Sees an answer's status and headers before anything of it reaches the client; true discards
   * it (another attempt follows): nothing is sent, its body is read and dropped (at most
   * DISCARD_MAX_BYTES within DISCARD_MAX_MS, so the connection can be used again; beyond that the
   * exchange is cut) and the result says `discarded`. The other hooks never see a discarded answer.
   */
  readonly judge?: (status: number, headers: IncomingHttpHeaders) => boolean;
  /** Sees the response after the hooks above and may change or replace it (ResponseProcessor). */
  readonly processor?: ResponseProcessor;
}

/** The most of a discarded answer's body read to keep its connection (an error body is small). */
export const DISCARD_MAX_BYTES = 64 * 1024;
/** The longest a discarded answer's body is waited for before its exchange is cut. */
export const DISCARD_MAX_MS = 1_000;

const EMPTY = Buffer.alloc(0);

/**
 * The body idle timeout is checked this many times over its length: a chunk counts itself (a
 * field written), and a check that saw neither a chunk nor the body held back re-arms; the
 * exchange is cut after this many quiet checks in a row, between the timeout and a quarter more.
 */
const BODY_IDLE_CHECKS = 4;

class RequestTimeout extends Error {
  readonly code = 'TG_REQUEST_TIMEOUT';
}
class BackendTimeout extends Error {
  readonly code = 'TG_UPSTREAM_TIMEOUT';
}
/** Classified as undici's own body timeout was: the backend stopped sending mid-body. */
class BodyIdleTimeout extends Error {
  readonly code = 'UND_ERR_BODY_TIMEOUT';
}
/** Cuts a discarded answer whose body is too long or too slow to drain. */
class DiscardCut extends Error {}

/** Maps an upstream failure to its catalog entry. */
export function classify(err: Error & { code?: string }): ErrorSpec {
  switch (err.code) {
    case 'ECONNREFUSED':
      return ERRORS.upstreamRefused;
    case 'UND_ERR_CONNECT_TIMEOUT':
      return ERRORS.upstreamConnectTimeout;
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return ERRORS.upstreamUnresolved;
    case 'UND_ERR_HEADERS_TIMEOUT':
    case 'TG_UPSTREAM_TIMEOUT':
      return ERRORS.upstreamTimeout;
    case 'TG_REQUEST_TIMEOUT':
      return ERRORS.requestTimeout;
    case NO_H2_CODE:
    case NO_APPLICATION_PROTOCOL:
      return ERRORS.upstreamNoH2;
    case 'UND_ERR_SOCKET':
    case 'ECONNRESET':
    case 'EPIPE':
    case 'UND_ERR_CLOSED':
      return ERRORS.upstreamReset;
    default: {
      const tls = tlsFailureKind(err.code);
      if (tls) return tls === 'certificate' ? ERRORS.upstreamCertificate : ERRORS.upstreamTls;
      return err.code?.startsWith('HPE_') || err.code === 'UND_ERR_RES_CONTENT_LENGTH_MISMATCH' ? ERRORS.upstreamBadResponse : ERRORS.upstreamReset;
    }
  }
}

/**
 * Answers with a catalog entry; returns the headers sent (for the trace). A response already
 * started (or a connection already gone) is left alone: the first answer stands. The body is
 * the entry's text exactly (with the detail, when given), without a trailing newline, as
 * Envoy's local replies (spec: a 429 body is exactly `rate limit exceeded`); the code is in
 * `x-tollgate-error`, as on the admin servers' errors, so a client can tell a refusal of the
 * gateway (whichever limit or check) from a backend's answer with the same status.
 */
export function sendError(res: ServerResponse, spec: ErrorSpec, extraHeaders?: Record<string, string>, detail?: string): Record<string, string> {
  const body = detail ? `${spec.body}: ${detail}` : spec.body;
  // A gRPC call gets the same answer as a gRPC status (grpc.ts).
  if (isGrpcRequest((res as ServerResponse & { req?: IncomingMessage }).req?.headers)) return sendGrpcError(res, spec.status, body, { 'x-tollgate-error': spec.code, ...extraHeaders });
  const headers: Record<string, string> = {
    'content-type': 'text/plain; charset=utf-8',
    'content-length': String(Buffer.byteLength(body)),
    'x-tollgate-error': spec.code,
    ...extraHeaders,
  };
  // HTTP/2 has no connection-specific header (RFC 9113 §8.2.2; node:http2 drops it with a
  // process warning): a refusal that ends its connection there ends its stream instead
  // (server/http2.ts endAfterAnswer).
  if (headers.connection !== undefined && res.req?.httpVersionMajor === 2) delete headers.connection;
  if (res.headersSent || res.destroyed) return headers;
  res.writeHead(spec.status, headers);
  res.end(body);
  return headers;
}

/**
 * One upstream exchange: the undici dispatch handler and the client-side bookkeeping. A class
 * (methods on the prototype) rather than a handler literal of closures, since one is created
 * per request on the hot path.
 */
class Exchange implements Dispatcher.DispatchHandler {
  #controller: Dispatcher.DispatchController | null = null;
  #upstreamStatus: number | null = null;
  #settled = false;
  #pendingAbort: Error | null = null;
  #timer: NodeJS.Timeout | undefined;
  #headersTimer: NodeJS.Timeout | undefined;
  #drainTimer: NodeJS.Timeout | undefined;
  #bodyTimer: NodeJS.Timeout | undefined;
  /** Body chunks and processor steps so far, and their count at the last idle check. */
  #activity = 0;
  #activityChecked = 0;
  #quietChecks = 0;
  /** Processor steps queued or running: the body is paused for them, and its idle timeout waits. */
  #stepsInFlight = 0;
  /** The headers of a held response (ForwardHooks.onResponseHeaders), written at its end. */
  #heldHeaders: Record<string, string | string[] | undefined> | null = null;
  /** Bytes of a discarded answer's body read so far; -1 while the answer is not discarded. */
  #discarded = -1;
  /** Trailers to send at the end: the backend's, and the status fields of a gRPC Trailers-Only answer. */
  #trailers: Record<string, string> | null = null;
  /** The processor's steps, in order (ForwardHooks.processor); null without one. */
  #steps: Promise<void> | null = null;
  /** The processor answered in the upstream's place or refused: the exchange is over, whatever undici says next. */
  #stopped = false;
  readonly #onClientClose = (): void => {
    if (!this.res.writableFinished) this.#abort(new ClientGone('client disconnected'));
  };

  constructor(
    private readonly req: ForwardRequest,
    private readonly res: ServerResponse,
    private readonly hooks: ForwardHooks,
    private readonly resolve: (r: ForwardResult) => void,
  ) {
    res.on('close', this.#onClientClose);
    if (req.requestTimeoutMs !== null) {
      this.#timer = setTimeout(() => this.#abort(new RequestTimeout('route request timeout elapsed')), req.requestTimeoutMs);
    }
    // The exchange keeps the backend's headers and body idle timeouts itself, undici none (0):
    // undici's timers are objects on a wheel that drops them about a second after they are
    // cleared, and it makes a new one each time a connection's timeout changes (headers, then
    // body, then keep-alive): two objects a request that live long enough to be promoted to
    // the old generation, filling it up until a full collection (the tail of the plain route).
    // A timer of Node's is cleared at once and dies young; undici's wheel also turned a 250 ms
    // timeouts.backendRequest into 0.5-1 s.
    if (req.headersTimeoutMs > 0) {
      this.#headersTimer = setTimeout(() => this.#abort(new BackendTimeout('no response headers within the backend timeout')), req.headersTimeoutMs);
    }
  }

  #finish(result: ForwardResult): void {
    if (this.#settled) return;
    this.#settled = true;
    if (this.#timer) clearTimeout(this.#timer);
    if (this.#headersTimer) clearTimeout(this.#headersTimer);
    if (this.#drainTimer) clearTimeout(this.#drainTimer);
    if (this.#bodyTimer) clearTimeout(this.#bodyTimer);
    this.res.off('close', this.#onClientClose);
    this.resolve(result);
  }

  #abort(reason: Error): void {
    if (this.#controller) this.#controller.abort(reason);
    else this.#pendingAbort = reason;
  }

  failToDispatch(err: Error): void {
    const spec = ERRORS.upstreamBadResponse;
    this.#finish({ status: spec.status, upstreamStatus: null, error: { kind: spec.code, message: err.message, spec }, responded: false, unsent: false, discarded: false });
  }

  onRequestStart(c: Dispatcher.DispatchController): void {
    this.#controller = c;
    if (this.#pendingAbort) c.abort(this.#pendingAbort);
  }

  onResponseStart(c: Dispatcher.DispatchController, statusCode: number, headers: IncomingHttpHeaders): void {
    if (statusCode < 200) return; // 1xx informational: not relayed
    if (this.#headersTimer) clearTimeout(this.#headersTimer);
    this.#upstreamStatus = statusCode;
    if (this.hooks.judge?.(statusCode, headers) === true) {
      this.#discarded = 0;
      this.#drainTimer = setTimeout(() => this.#abort(new DiscardCut('discarded answer still sending')), DISCARD_MAX_MS);
      return;
    }
    if (this.req.bodyTimeoutMs > 0) this.#bodyTimer = setTimeout(() => this.#checkBodyIdle(), Math.max(1, Math.ceil(this.req.bodyTimeoutMs / BODY_IDLE_CHECKS)));
    const out = endToEnd(headers);
    this.#trailers = takeTrailersOnly(this.res, out);
    if (this.hooks.onResponseHeaders?.(statusCode, out) === true) {
      this.#heldHeaders = out;
      return;
    }
    const p = this.hooks.processor;
    if (p) return this.#step(c, () => p.head(statusCode, out).then((head) => this.#writeHead(statusCode, out, head)));
    this.#writeHead(statusCode, out, null);
  }

  #writeHead(status: number, headers: Record<string, string | string[] | undefined>, head: ProcessedHead | null): void {
    if (head?.replace) return this.#replace(head);
    if (this.res.headersSent || this.res.destroyed) return;
    this.res.writeHead(status, headers as Record<string, string | string[]>);
    if (this.req.method === 'HEAD') this.res.flushHeaders();
  }

  /**
   * The body idle timeout: quiet when no chunk came and no processor step ran since the last
   * check, and the body is not held back by a client that reads slowly (as undici's own timeout
   * does not run while the body is paused).
   */
  #checkBodyIdle(): void {
    if (this.#settled) return;
    if (this.#activity !== this.#activityChecked || this.#stepsInFlight > 0 || this.res.writableNeedDrain) {
      this.#activityChecked = this.#activity;
      this.#quietChecks = 0;
    } else if (++this.#quietChecks >= BODY_IDLE_CHECKS) {
      return this.#abort(new BodyIdleTimeout(`no response body data from the backend for ${this.req.bodyTimeoutMs} ms`));
    }
    this.#bodyTimer?.refresh();
  }

  /** Runs a processor step after the ones before it, the backend's body paused meanwhile. */
  #step(c: Dispatcher.DispatchController | null, run: () => Promise<void>): void {
    this.#activity++;
    this.#stepsInFlight++;
    c?.pause();
    this.#steps = (this.#steps ?? Promise.resolve())
      .then(() => (this.#stopped ? undefined : run()))
      .then(
        () => {
          this.#stepsInFlight--;
          if (!this.#stopped) c?.resume();
        },
        (err: unknown) => {
          this.#stepsInFlight--;
          this.#refused(err);
        },
      );
  }

  /** Writes `b` and waits while the client's side is full (or gone). */
  #write(b: Buffer): Promise<void> {
    if (!b.length || this.res.destroyed || this.res.write(b)) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        this.res.off('drain', done);
        this.res.off('close', done);
        resolve();
      };
      this.res.on('drain', done);
      this.res.on('close', done);
    });
  }

  /** The processor answered in the backend's place: its answer is sent, the backend's dropped. */
  #replace(head: Extract<ProcessedHead, { replace: true }>): void {
    this.#stopped = true;
    this.#abort(new DiscardCut('replaced by the processor'));
    if (!this.res.headersSent && !this.res.destroyed) {
      this.res.writeHead(head.status, { ...head.headers, 'content-length': String(head.body.length) });
      this.res.end(head.body);
    } else this.res.destroy();
    this.#finish({ status: head.status, upstreamStatus: this.#upstreamStatus, error: null, responded: true, unsent: false, discarded: false });
  }

  /** The processor refused the response: answered by the caller when nothing was sent, else cut. */
  #refused(err: unknown): void {
    if (this.#stopped) return;
    this.#stopped = true;
    this.#abort(new DiscardCut('refused by the processor'));
    const spec = err instanceof ProcessorRefusal ? err.spec : ERRORS.upstreamReset;
    const error = { kind: spec.code, message: err instanceof Error ? err.message : String(err), spec };
    const sent = this.res.headersSent || this.res.destroyed;
    if (sent) this.res.destroy();
    this.#finish({ status: sent ? (this.#upstreamStatus ?? spec.status) : spec.status, upstreamStatus: this.#upstreamStatus, error, responded: sent, unsent: false, discarded: false });
  }

  onRequestUpgrade(_c: Dispatcher.DispatchController, statusCode: number, headers: IncomingHttpHeaders, socket: Duplex): void {
    if (this.#headersTimer) clearTimeout(this.#headersTimer);
    this.#upstreamStatus = statusCode;
    const upgrade: string | string[] | undefined = headers.upgrade;
    if (!this.hooks.onUpgrade || this.res.destroyed) {
      // Nobody to join it with (the client left while the backend answered).
      socket.destroy();
      this.#finish({ status: 499, upstreamStatus: statusCode, error: { kind: 'TG_CLIENT_GONE', message: 'client disconnected' }, responded: true, unsent: false, discarded: false });
      return;
    }
    // Settled first: the hook owns the client's connection from here, and the Exchange lets go of it.
    this.#finish({ status: statusCode, upstreamStatus: statusCode, error: null, responded: true, unsent: false, discarded: false });
    this.hooks.onUpgrade(endToEnd(headers), typeof upgrade === 'string' ? upgrade : upgrade?.[0], socket);
  }

  onResponseData(c: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.#discarded >= 0) {
      this.#discarded += chunk.length;
      if (this.#discarded > DISCARD_MAX_BYTES) this.#abort(new DiscardCut('discarded answer too long'));
      return;
    }
    if (this.#stopped) return;
    this.#activity++;
    const out = this.hooks.transform ? this.hooks.transform(chunk) : chunk;
    const p = this.hooks.processor;
    if (p) return this.#step(c, () => p.body(out, false).then((b) => this.#write(b)));
    if (out.length && !this.res.write(out)) {
      c.pause();
      this.res.once('drain', () => c.resume());
    }
  }

  onResponseEnd(c: Dispatcher.DispatchController, trailers: IncomingHttpHeaders): void {
    if (this.#discarded >= 0) return this.#finishDiscarded();
    if (this.#stopped) return;
    this.#keepTrailers(c, trailers);
    const p = this.hooks.processor;
    if (p) return this.#step(null, () => this.#processEnd(p));
    const rest = this.hooks.flush?.();
    if (rest instanceof Promise) void rest.then((r) => this.#end(r), () => this.#end(undefined));
    else this.#end(rest);
  }

  /**
   * The backend's trailers (grpc-status, grpc-message of a gRPC answer), relayed at the end.
   * undici parses HTTP/1.1 trailers into `trailers` but hands HTTP/2 ones over unparsed, as the
   * object Node's stream gave (controller.rawTrailers).
   */
  #keepTrailers(c: Dispatcher.DispatchController, trailers: IncomingHttpHeaders): void {
    const raw = (c as Dispatcher.DispatchController & { rawTrailers?: unknown }).rawTrailers;
    const source: IncomingHttpHeaders = raw && typeof raw === 'object' && !Array.isArray(raw) ? raw : trailers;
    // End to end only, and nothing that frames the message: a hostile backend's
    // `connection` or `content-length` trailer would make the client's HTTP/2 stream fail.
    const fields = endToEnd(source);
    for (const name in fields) {
      const value = fields[name];
      if (value === undefined || name === 'content-length' || name === 'host') continue;
      (this.#trailers ??= {})[name] = Array.isArray(value) ? value.join(',') : value;
    }
  }

  /** The body's end through the processor; a held response (a translation) meets it whole here. */
  async #processEnd(p: ResponseProcessor): Promise<void> {
    const rest = (await this.hooks.flush?.()) ?? EMPTY;
    const held = this.#heldHeaders;
    if (held) {
      this.#heldHeaders = null;
      const status = this.hooks.finalStatus?.() ?? this.#upstreamStatus ?? 502;
      const head = await p.head(status, held);
      if (head.replace) return this.#replace(head);
      this.#writeHead(status, held, null);
    }
    const last = await p.body(rest, true);
    if (!this.#stopped) this.#end(last);
  }

  #end(rest: Buffer | undefined): void {
    let status = this.#upstreamStatus ?? 502;
    const held = this.#heldHeaders;
    if (held) {
      status = this.hooks.finalStatus?.() ?? status;
      if (!this.res.headersSent && !this.res.destroyed) this.res.writeHead(status, held as Record<string, string | string[]>);
    }
    // HTTP/1.1 sends trailers only after a chunked body (Node drops them otherwise).
    if (this.#trailers && !this.res.destroyed) this.res.addTrailers(this.#trailers);
    if (rest?.length) this.res.end(rest);
    else this.res.end();
    this.#finish({ status, upstreamStatus: this.#upstreamStatus, error: null, responded: true, unsent: false, discarded: false });
  }

  #finishDiscarded(): void {
    const status = this.#upstreamStatus!;
    this.#finish({ status, upstreamStatus: status, error: null, responded: false, unsent: false, discarded: true });
  }

  onResponseError(_c: Dispatcher.DispatchController, err: Error & { code?: string }): void {
    if (this.#stopped) return;
    const upstreamStatus = this.#upstreamStatus;
    if (err instanceof ClientGone) {
      this.#finish({ status: upstreamStatus ?? 499, upstreamStatus, error: { kind: err.code, message: err.message }, responded: true, unsent: false, discarded: false });
      return;
    }
    // A discarded answer that failed (or was cut) while draining: it was discarded all the same.
    if (this.#discarded >= 0) return this.#finishDiscarded();
    const spec = classify(err);
    const error = { kind: spec.code, message: err.message || spec.body, spec };
    if (!this.res.headersSent && !this.res.destroyed) {
      // The caller answers with the catalog entry (so it can trace the final response).
      // undici calls onRequestStart just before it writes the request on a connected socket.
      this.#finish({ status: spec.status, upstreamStatus, error, responded: false, unsent: this.#controller === null, discarded: false });
    } else {
      // Mid-body failure: the status is already sent, so the client learns of it by the
      // connection closing before the body completes; a gRPC call over HTTP/2, by its status
      // in trailers (grpc.ts).
      if (!endGrpcCall(this.res, spec, err.message || spec.body)) this.res.destroy(err);
      this.#finish({ status: upstreamStatus ?? spec.status, upstreamStatus, error, responded: true, unsent: false, discarded: false });
    }
  }
}

export function forward(dispatcher: Dispatcher, req: ForwardRequest, res: ServerResponse, hooks: ForwardHooks = {}): Promise<ForwardResult> {
  return new Promise<ForwardResult>((resolve) => {
    const exchange = new Exchange(req, res, hooks, resolve);
    try {
      dispatcher.dispatch(
        {
          method: req.method,
          path: req.path,
          headers: req.headers,
          body: req.body,
          // The Exchange keeps both (see its constructor).
          headersTimeout: 0,
          bodyTimeout: 0,
          // Read by undici's request, not in its types.
          servername: req.servername,
          ...(req.upgrade ? { upgrade: req.upgrade } : {}),
        } as Dispatcher.DispatchOptions,
        exchange,
      );
    } catch (err) {
      exchange.failToDispatch(err as Error);
    }
  });
}
