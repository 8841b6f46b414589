// A gRPC channel to a service a policy calls (a rate limit service, an external authorization
// service, an external processor), kept connected for as long as a config names the service.
// It speaks gRPC's HTTP/2 mapping itself over one node:http2 session (prior knowledge, h2c):
// a call is a stream with `content-type: application/grpc`, length-prefixed messages
// (./framing.ts) and its status in the trailers. A general gRPC client library costs several
// times the CPU of the call itself on the request path (a call through one measured 2.5x the
// stream alone); these services need unary calls and one bidirectional stream, no name
// resolution, balancing or retries.
//
// It connects as soon as it is made (a config naming the service was compiled), never lazily
// at the first call: a lazy connect makes the first call after start outlast its deadline and
// take the failure mode. A lost connection is made again at once, then with a backoff (200 ms
// doubling to 2 s) while the service stays away. A call made while the channel is connecting
// waits for the connection within its deadline; one made while the service is down (the last
// attempt failed, the next not yet made) fails at once with UNAVAILABLE, which the caller turns
// into its failure mode. A ping every 30 s (5 s to answer) finds a connection that died silently.
import { connect, constants, type ClientHttp2Session, type ClientHttp2Stream, type IncomingHttpHeaders, type IncomingHttpStatusHeader } from 'node:http2';
import { GrpcCallError, grpcStatusName, httpStatusToGrpc } from './status.js';
import { MessageReader, frame } from './framing.js';

export { GrpcCallError } from './status.js';

const INITIAL_BACKOFF_MS = 200;
const MAX_BACKOFF_MS = 2000;
const KEEPALIVE_MS = 30_000;
const KEEPALIVE_TIMEOUT_MS = 5_000;
/** gRPC's default largest message received, as a library would apply it. */
const DEFAULT_MAX_MESSAGE_BYTES = 4 * 1024 * 1024;

export interface ChannelOptions {
  /** Largest message read from the service; a larger one fails the call RESOURCE_EXHAUSTED. */
  readonly maxReceiveBytes?: number;
  /** Largest message sent; a larger one fails the call RESOURCE_EXHAUSTED before it is sent. */
  readonly maxSendBytes?: number;
}

type State = 'connecting' | 'ready' | 'down' | 'closed';

/** A call waiting for the connection: it is started, or failed, when the attempt ends. */
type Waiter = (session: ClientHttp2Session | null) => void;

export class GrpcChannel {
  #session: ClientHttp2Session | null = null;
  #state: State = 'connecting';
  #connected = false;
  #attempted = false;
  #backoffMs = INITIAL_BACKOFF_MS;
  #retry: NodeJS.Timeout | null = null;
  #keepalive: NodeJS.Timeout | null = null;
  readonly #waiters = new Set<Waiter>();
  readonly #maxReceive: number;
  readonly #maxSend: number;

  /** `role` names the service in errors (e.g. "rate limit service"). */
  constructor(
    readonly address: string,
    readonly role: string,
    options: ChannelOptions = {},
  ) {
    this.#maxReceive = options.maxReceiveBytes ?? DEFAULT_MAX_MESSAGE_BYTES;
    this.#maxSend = options.maxSendBytes ?? DEFAULT_MAX_MESSAGE_BYTES;
    this.#connect();
  }

  /** The channel has connected at least once: the service answered. */
  get connected(): boolean {
    return this.#connected;
  }

  /** The first connection attempt has concluded: connected, or failed. */
  get attempted(): boolean {
    return this.#attempted;
  }

  /** The channel is connected now. */
  get connectedNow(): boolean {
    return this.#state === 'ready';
  }

  #connect(): void {
    this.#retry = null;
    if (this.#state === 'closed') return;
    this.#state = 'connecting';
    const session = connect(`http://${this.address}`);
    this.#session = session;
    // Neither the session nor its timers keep the process alive: the proxy's servers do.
    session.unref();
    session.once('connect', () => {
      if (this.#session !== session) return;
      this.#state = 'ready';
      this.#connected = this.#attempted = true;
      this.#backoffMs = INITIAL_BACKOFF_MS;
      this.#startKeepalive(session);
      this.#wake(session);
    });
    // The error comes before the close; what follows is the close's.
    session.on('error', () => undefined);
    session.once('close', () => this.#lost(session));
    session.once('goaway', () => this.#lost(session));
  }

  /** The session ended (closed, refused, went away): calls on it end with it; the next attempt is scheduled. */
  #lost(session: ClientHttp2Session): void {
    if (this.#session !== session) return;
    this.#session = null;
    this.#stopKeepalive();
    if (!session.destroyed) session.close();
    if (this.#state === 'closed') return;
    const wasReady = this.#state === 'ready';
    this.#attempted = true;
    // A connection that was up is made again at once (the service restarted); an attempt that
    // failed waits, and calls meanwhile fail fast.
    if (wasReady) return this.#connect();
    this.#state = 'down';
    this.#wake(null);
    this.#retry = setTimeout(() => this.#connect(), this.#backoffMs);
    this.#retry.unref();
    this.#backoffMs = Math.min(this.#backoffMs * 2, MAX_BACKOFF_MS);
  }

  #startKeepalive(session: ClientHttp2Session): void {
    this.#keepalive = setInterval(() => {
      const timer = setTimeout(() => session.destroy(), KEEPALIVE_TIMEOUT_MS);
      timer.unref();
      const sent = session.ping((err) => {
        clearTimeout(timer);
        if (err) session.destroy();
      });
      if (!sent) clearTimeout(timer);
    }, KEEPALIVE_MS);
    this.#keepalive.unref();
  }

  #stopKeepalive(): void {
    if (this.#keepalive) clearInterval(this.#keepalive);
    this.#keepalive = null;
  }

  #wake(session: ClientHttp2Session | null): void {
    const waiting = [...this.#waiters];
    this.#waiters.clear();
    for (const w of waiting) w(session);
  }

  #error(code: string, detail: string): GrpcCallError {
    return new GrpcCallError(this.address, code, detail, this.role);
  }

  /** The session to start a call on now, or after the attempt in progress (null: fail UNAVAILABLE). */
  #withSession(then: Waiter): void {
    if (this.#state === 'ready' && this.#session) return then(this.#session);
    if (this.#state === 'connecting') {
      this.#waiters.add(then);
      return;
    }
    then(null);
  }

  #unavailable(): GrpcCallError {
    return this.#error('UNAVAILABLE', this.#state === 'closed' ? 'the channel is closed' : 'the service is not reachable');
  }

  /** One unary call with a deadline of `timeoutMs`; rejects with GrpcCallError. */
  unary<Req, Res>(path: string, serialize: (req: Req) => Buffer, deserialize: (bytes: Buffer) => Res, request: Req, timeoutMs: number): Promise<Res> {
    return new Promise((resolve, reject) => {
      const body = serialize(request);
      if (body.length > this.#maxSend) return reject(this.#error('RESOURCE_EXHAUSTED', `the request of ${body.length} bytes is over ${this.#maxSend}`));
      let done = false;
      let stream: ClientHttp2Stream | null = null;
      const finish = (err: GrpcCallError | null, res?: Res): void => {
        if (done) return;
        done = true;
        clearTimeout(deadline);
        this.#waiters.delete(start);
        // A call given up (deadline, a bound) is cancelled; an answered one closes by itself.
        if (err && stream && !stream.closed) stream.close(constants.NGHTTP2_CANCEL);
        if (err) reject(err);
        else resolve(res!);
      };
      const deadline = setTimeout(() => finish(this.#error('DEADLINE_EXCEEDED', `no answer within ${timeoutMs}ms`)), timeoutMs);
      const start: Waiter = (session) => {
        if (done) return;
        if (!session) return finish(this.#unavailable());
        const call = new CallReader(this.#maxReceive);
        stream = openStream(session, path, timeoutMs);
        call.attach(stream, (status) => {
          if (status.error) return finish(this.#error(status.error.code, status.error.detail));
          const [message] = call.messages;
          if (!message) return finish(this.#error('INTERNAL', 'empty response'));
          let decoded: Res;
          try {
            decoded = deserialize(message);
          } catch (err) {
            return finish(this.#error('INTERNAL', `the response does not decode: ${(err as Error).message}`));
          }
          finish(null, decoded);
        });
        stream.end(frame(body));
      };
      this.#withSession(start);
    });
  }

  /** A bidirectional stream without a deadline: its caller times each message (ext-proc/stream.ts). */
  duplex<Req, Res>(path: string, serialize: (req: Req) => Buffer, deserialize: (bytes: Buffer) => Res, events: DuplexEvents<Res>): GrpcDuplex<Req, Res> {
    return new GrpcDuplex(this, path, serialize, deserialize, events, this.#maxReceive, this.#maxSend);
  }

  /** For GrpcDuplex: the session to open a stream on (see #session_). */
  sessionFor(then: Waiter): () => void {
    this.#withSession(then);
    return () => this.#waiters.delete(then);
  }

  close(): void {
    this.#state = 'closed';
    if (this.#retry) clearTimeout(this.#retry);
    this.#retry = null;
    this.#stopKeepalive();
    const session = this.#session;
    this.#session = null;
    this.#wake(null);
    // Calls in flight end now: their services are no longer named by any config.
    session?.destroy();
  }
}

/** What a duplex stream reports: each message, then exactly one end (status OK as null). */
export interface DuplexEvents<Res> {
  readonly message: (res: Res) => void;
  readonly end: (error: GrpcCallError | null) => void;
}

/** One bidirectional call: messages written as they come, each answer reported as it arrives. */
export class GrpcDuplex<Req, Res> {
  #stream: ClientHttp2Stream | null = null;
  /** Messages written before the stream opened. */
  #pending: Buffer[] = [];
  #halfClosed = false;
  #ended = false;
  #cancelWait: () => void = () => undefined;

  constructor(
    private readonly channel: GrpcChannel,
    path: string,
    private readonly serialize: (req: Req) => Buffer,
    deserialize: (bytes: Buffer) => Res,
    private readonly events: DuplexEvents<Res>,
    maxReceive: number,
    private readonly maxSend: number,
  ) {
    // Opened on the next turn: a channel that is down fails the call at once, and its owner
    // must have the call in hand before any event reaches it.
    queueMicrotask(() => {
      if (!this.#ended) this.#cancelWait = channel.sessionFor((session) => this.#open(session, path, deserialize, maxReceive));
    });
  }

  #open(session: ClientHttp2Session | null, path: string, deserialize: (bytes: Buffer) => Res, maxReceive: number): void {
    const { channel } = this;
    if (this.#ended) return;
    if (!session) return this.#end(new GrpcCallError(channel.address, 'UNAVAILABLE', 'the service is not reachable', channel.role));
    const stream = openStream(session, path, null);
    this.#stream = stream;
    const reader = new CallReader(maxReceive, (bytes) => {
      let decoded: Res;
      try {
        decoded = deserialize(bytes);
      } catch (err) {
        this.#end(new GrpcCallError(channel.address, 'INTERNAL', `a message does not decode: ${(err as Error).message}`, channel.role));
        return false;
      }
      this.events.message(decoded);
      return true;
    });
    reader.attach(stream, (status) => this.#end(status.error ? new GrpcCallError(channel.address, status.error.code, status.error.detail, channel.role) : null));
    for (const b of this.#pending) stream.write(b);
    this.#pending = [];
    if (this.#halfClosed) stream.end();
  }

  write(req: Req): void {
    if (this.#ended) return;
    const body = this.serialize(req);
    if (body.length > this.maxSend) return this.#end(new GrpcCallError(this.channel.address, 'RESOURCE_EXHAUSTED', `a message of ${body.length} bytes is over ${this.maxSend}`, this.channel.role));
    const framed = frame(body);
    if (this.#stream) this.#stream.write(framed);
    else this.#pending.push(framed);
  }

  /** No more messages from this side (half-close). */
  end(): void {
    if (this.#halfClosed) return;
    this.#halfClosed = true;
    this.#stream?.end();
  }

  /** Ends the call at once, reporting nothing more. */
  cancel(): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#cancelWait();
    const s = this.#stream;
    if (s && !s.closed) s.close(constants.NGHTTP2_CANCEL);
  }

  #end(error: GrpcCallError | null): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#cancelWait();
    const s = this.#stream;
    if (s && !s.closed) s.close(constants.NGHTTP2_CANCEL);
    this.events.end(error);
  }
}

function openStream(session: ClientHttp2Session, path: string, timeoutMs: number | null): ClientHttp2Stream {
  return session.request({
    ':method': 'POST',
    ':path': path,
    'content-type': 'application/grpc',
    te: 'trailers',
    ...(timeoutMs !== null ? { 'grpc-timeout': `${Math.max(1, Math.ceil(timeoutMs))}m` } : {}),
  });
}

interface CallStatus {
  readonly error: { readonly code: string; readonly detail: string } | null;
}

/**
 * Reads one call's answer: the response headers (HTTP 200 and a gRPC content type, or a
 * Trailers-Only answer with its status there), the messages, and the status in the trailers.
 * `onMessage` (streams) gets each message as it is read and may stop the call by returning
 * false; without it messages are kept in `messages` (unary calls).
 */
class CallReader {
  readonly messages: Buffer[] = [];
  #status: CallStatus | null = null;
  #httpStatus = 0;

  constructor(
    private readonly maxReceive: number,
    private readonly onMessage?: (message: Buffer) => boolean,
  ) {}

  /** The status of an answer whose HTTP status is not 200 (gRPC's HTTP-to-gRPC mapping); null otherwise. */
  #httpFailure(): CallStatus | null {
    const status = this.#httpStatus;
    return status && status !== 200 ? { error: { code: httpStatusToGrpc(status), detail: `the service answered HTTP ${status}` } } : null;
  }

  attach(stream: ClientHttp2Stream, done: (status: CallStatus) => void): void {
    let finished = false;
    const finish = (status: CallStatus): void => {
      if (finished) return;
      finished = true;
      done(status);
    };
    const reader = new MessageReader(this.maxReceive);
    stream.on('response', (headers: IncomingHttpHeaders & IncomingHttpStatusHeader) => {
      this.#httpStatus = Number(headers[':status']);
      // Trailers-Only: the status is in the only HEADERS frame.
      if (headers['grpc-status'] !== undefined) this.#status = statusOf(headers);
    });
    stream.on('data', (chunk: Buffer) => {
      const read = reader.push(chunk);
      if (typeof read === 'string') {
        finish({ error: { code: 'RESOURCE_EXHAUSTED', detail: read } });
        stream.close(constants.NGHTTP2_CANCEL);
        return;
      }
      for (const m of read) {
        if (this.onMessage) {
          if (!this.onMessage(m)) return;
        } else if (this.messages.length) {
          // A unary answer is one message: more is the service's error, and unbounded.
          finish({ error: { code: 'INTERNAL', detail: 'more than one message in a unary answer' } });
          stream.close(constants.NGHTTP2_CANCEL);
          return;
        } else this.messages.push(m);
      }
    });
    // The server's status ends the call, whether or not this side has finished sending: a
    // stream whose other side is still open would not close.
    stream.on('trailers', (trailers: IncomingHttpHeaders) => {
      this.#status = statusOf(trailers);
    });
    stream.on('end', () => {
      if (this.#status) finish(this.#status);
      else {
        const http = this.#httpFailure();
        if (http) finish(http);
      }
    });
    stream.on('error', () => undefined);
    stream.on('close', () => {
      if (this.#status) return finish(this.#status);
      const http = this.#httpFailure();
      if (http) return finish(http);
      const rst = stream.rstCode;
      if (rst === constants.NGHTTP2_REFUSED_STREAM || !this.#httpStatus) return finish({ error: { code: 'UNAVAILABLE', detail: 'the stream was refused or the connection closed' } });
      if (rst === constants.NGHTTP2_CANCEL) return finish({ error: { code: 'CANCELLED', detail: 'the stream was cancelled' } });
      finish({ error: { code: 'INTERNAL', detail: `the stream ended without a status${rst ? ` (HTTP/2 error ${rst})` : ''}` } });
    });
  }
}

function statusOf(headers: IncomingHttpHeaders): CallStatus {
  const code = Number(headers['grpc-status']);
  if (code === 0) return { error: null };
  const raw = headers['grpc-message'];
  let detail = typeof raw === 'string' ? raw : '';
  try {
    detail = decodeURIComponent(detail);
  } catch {
    // Not percent-encoded as it should be: shown as sent.
  }
  return { error: { code: grpcStatusName(code), detail: detail || `status ${code}` } };
}
