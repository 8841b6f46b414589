// Trace sessions of one proxy. Each `GET /debug/trace` arms one; the next request that reaches
// the proxy and passes the session's filter is claimed by the first-armed matching session.
// The hub subscribes to the request path's diagnostics channels only while a session exists:
// with none, the data plane pays one `hasSubscribers` read per request.
import type { PipelineDeps, RequestContext } from '../pipeline/context.js';
import {
  channels,
  type BackendResultMessage,
  type BackendStartMessage,
  type ExtProcMessage,
  type FinishMessage,
  type RequestSnapshotMessage,
  type ResponseSnapshotMessage,
  type RouteMessage,
  type StartMessage,
} from '../pipeline/events.js';
import type { TraceFilter } from './filter.js';
import { TraceSession, type TraceSink } from './session.js';
import type { SharedClaim } from './shared-claim.js';
import { RequestTracer, type TraceEnv } from './tracer.js';

/** Armed sessions are capped: each one costs every request a filter evaluation. */
export class TooManyTraceSessions extends Error {
  constructor(readonly limit: number) {
    super(`${limit} trace sessions are already waiting; close one or raise config.maxTraceSessions`);
    this.name = 'TooManyTraceSessions';
  }
}

type Handler = (message: unknown) => void;

export class TraceHub {
  #armed: TraceSession[] = [];
  #nextId = 1;
  /** Sessions that captured a request and are still streaming. */
  readonly active = new Set<TraceSession>();
  readonly #tracers = new WeakMap<RequestContext, RequestTracer>();
  #subscribed = false;
  readonly #handlers: [keyof typeof channels, Handler][];
  /** The runtime whose requests this hub traces (channels are process-wide). */
  owner: PipelineDeps | null = null;

  constructor(
    readonly env: TraceEnv,
    readonly maxArmed = 32,
  ) {
    const on = <M extends { ctx: RequestContext }>(f: (t: RequestTracer, m: M) => void): Handler => (message) => {
      const m = message as M;
      const t = this.#tracers.get(m.ctx);
      if (t) f(t, m);
    };
    this.#handlers = [
      ['start', (message) => this.#onStart((message as StartMessage).ctx)],
      ['requestSnapshot', on<RequestSnapshotMessage>((t, m) => t.requestSnapshot(m.stage, m.ctx))],
      ['route', on<RouteMessage>((t, m) => t.routeSelection(m.ctx))],
      ['policy', on<RouteMessage>((t, m) => t.policySelection(m.ctx))],
      ['backendStart', on<BackendStartMessage>((t, m) => t.backendCallStart(m.target))],
      ['backendResult', on<BackendResultMessage>((t, m) => t.backendCallResult(m.status, m.error))],
      ['extProc', on<ExtProcMessage>((t, m) => t.extProcPhase(m.phase))],
      ['responseSnapshot', on<ResponseSnapshotMessage>((t, m) => t.responseSnapshot(m.stage, m.status, m.headers, m.ctx))],
      ['finish', on<FinishMessage>((t, m) => this.#onFinish(t, m.ctx))],
    ];
  }

  /** True when at least one session waits for a request. */
  get armed(): boolean {
    return this.#armed.length > 0;
  }

  /** `claim` and `id`: a session the main thread armed on every thread (its id, and how one thread takes it). */
  arm(filter: TraceFilter | null, filterText: string | null, sink: TraceSink, claim: SharedClaim | null = null, id = this.#nextId++): TraceSession {
    // A session another thread took streams there: it stays in #armed only until this thread
    // forgets it, and counts no more than a session streaming here does.
    if (this.#armed.filter((s) => s.claim?.taker == null).length >= this.maxArmed) throw new TooManyTraceSessions(this.maxArmed);
    const s = new TraceSession(id, filter, filterText, sink, Date.now(), claim);
    this.#armed.push(s);
    this.#sync();
    return s;
  }

  disarm(session: TraceSession): void {
    session.closed = true;
    this.#armed = this.#armed.filter((s) => s !== session);
    this.active.delete(session);
    this.#sync();
  }

  waiting(): readonly TraceSession[] {
    return this.#armed;
  }

  /** Subscribed while any session is armed or streaming, and only then. */
  #sync(): void {
    const want = this.#armed.length > 0 || this.active.size > 0;
    if (want === this.#subscribed) return;
    this.#subscribed = want;
    for (const [name, handler] of this.#handlers) {
      if (want) channels[name].subscribe(handler);
      else channels[name].unsubscribe(handler);
    }
  }

  #onStart(ctx: RequestContext): void {
    if (ctx.deps !== this.owner || !this.#armed.length) return;
    let session: TraceSession | undefined;
    for (let i = 0; i < this.#armed.length; i++) {
      const s = this.#armed[i]!;
      if (s.filter !== null && !s.filter(ctx)) continue;
      this.#armed.splice(i--, 1);
      // Another thread took it first: it is that thread's to stream; this one forgets it.
      if (s.claim && !s.claim.take()) continue;
      session = s;
      break;
    }
    if (!session) {
      this.#sync();
      return;
    }
    session.claimed = `${ctx.method} ${ctx.req.url ?? '/'}`;
    this.active.add(session);
    ctx.observed = true;
    ctx.entry.traced = session.id;
    const tracer = new RequestTracer(session, process.hrtime.bigint(), ctx.req, this.env);
    this.#tracers.set(ctx, tracer);
    tracer.started();
  }

  #onFinish(tracer: RequestTracer, ctx: RequestContext): void {
    tracer.finished();
    this.#tracers.delete(ctx);
    const session = tracer.session;
    this.active.delete(session);
    if (!session.closed) session.sink.end();
    session.closed = true;
    this.#sync();
  }
}
