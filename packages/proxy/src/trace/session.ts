// One trace session: what `GET /debug/trace` armed (its filter and where its events go) and,
// once a request matched, which request it captured. The hub arms and ends sessions; the
// request's tracer writes to the session's sink.
import type { TraceEvent } from '@tollgate/api';
import type { TraceFilter } from './filter.js';
import type { SharedClaim } from './shared-claim.js';

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
    /** When other threads wait for the same session's request: which of them takes it (null: this thread alone serves the session). */
    readonly claim: SharedClaim | null = null,
  ) {}
}
