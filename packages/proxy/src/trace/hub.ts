// Armed trace sessions. Each `GET /debug/trace` arms one; the next request that reaches the
// proxy and passes the session's filter is claimed by the first-armed matching session. With
// no session armed, the data plane pays one property read per request.
import type { TraceEvent } from '@tollgate/api';
import type { TraceFilter, TraceRequestView } from './filter.js';

export interface TraceSink {
  send(event: TraceEvent): void;
  end(): void;
}

export class TraceSession {
  /** null while armed; the request it captured once claimed. */
  claimed: string | null = null;
  closed = false;
  constructor(
    readonly id: number,
    readonly filter: TraceFilter | null,
    readonly filterText: string | null,
    readonly sink: TraceSink,
    readonly armedAt: number,
  ) {}
}

export class TraceHub {
  #armed: TraceSession[] = [];
  #nextId = 1;
  /** Sessions that captured a request and are still streaming. */
  readonly active = new Set<TraceSession>();

  /** True when at least one session waits: the data plane's only per-request cost. */
  get armed(): boolean {
    return this.#armed.length > 0;
  }

  arm(filter: TraceFilter | null, filterText: string | null, sink: TraceSink): TraceSession {
    const s = new TraceSession(this.#nextId++, filter, filterText, sink, Date.now());
    this.#armed.push(s);
    return s;
  }

  disarm(session: TraceSession): void {
    session.closed = true;
    this.#armed = this.#armed.filter((s) => s !== session);
    this.active.delete(session);
  }

  /** The first armed session whose filter accepts the request, removed from the armed list. */
  claim(req: TraceRequestView, requestLabel: string): TraceSession | null {
    const i = this.#armed.findIndex((s) => s.filter === null || s.filter(req));
    if (i < 0) return null;
    const [s] = this.#armed.splice(i, 1);
    s!.claimed = requestLabel;
    this.active.add(s!);
    return s!;
  }

  finish(session: TraceSession): void {
    this.active.delete(session);
    if (!session.closed) session.sink.end();
    session.closed = true;
  }

  waiting(): readonly TraceSession[] {
    return this.#armed;
  }
}
