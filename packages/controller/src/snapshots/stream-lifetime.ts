// How long an admitted stream lives. A stream is authenticated when it opens; after that:
// - it is checked again every reauth interval (the token reviewed anew and the Gateway's
//   ServiceAccount looked up again): a refusal (the ServiceAccount deleted, the token revoked,
//   the Gateway gone) ends it; a review that cannot be made now keeps it until the next check;
// - it ends when the token it was opened with expires (the `exp` the token states; the kubelet
//   renews a projected token well before, so the proxy reconnects with its current one);
// - it ends at its maximum age in any case.
// The proxy keeps serving what it has and reconnects at once; its hello names the version it
// serves, so nothing is sent again unless it changed.
import * as grpc from '@grpc/grpc-js';
import type { AuthDecision } from './stream-auth.js';
import { formatDuration } from './stream-limits.js';
import { tokenExpiry } from './token-review.js';

/** Why the controller ended a stream (the `reason` label of tollgate_controller_stream_ended_total). */
export type EndReason = 'max_age' | 'token_expired' | 'reauth_refused';

export interface LifetimeOptions {
  readonly maxAgeMs: number;
  /** With TLS: the token the stream opened with, the interval, and the check to make again. */
  readonly reauth?: {
    readonly token: string | undefined;
    readonly intervalMs: number;
    readonly check: () => Promise<AuthDecision>;
    /** Each re-check's result (metrics, logs). */
    readonly checked: (d: AuthDecision) => void;
  };
  readonly end: (reason: EndReason, code: grpc.status, message: string) => void;
  readonly now?: () => number;
}

/** setTimeout fires at once for delays above 2^31-1 ms. */
const MAX_DELAY = 2 ** 31 - 1;

export class StreamLifetime {
  readonly #timers = new Set<NodeJS.Timeout>();
  #over = false;

  constructor(private readonly o: LifetimeOptions) {
    const now = o.now ?? Date.now;
    this.#after(o.maxAgeMs * (0.9 + Math.random() * 0.1), () =>
      this.#end('max_age', grpc.status.UNAVAILABLE, `the stream reached its maximum age (${formatDuration(o.maxAgeMs)}, --snapshot-max-stream-age); reconnect`),
    );
    const r = o.reauth;
    if (!r) return;
    const exp = r.token === undefined ? undefined : tokenExpiry(r.token);
    if (exp !== undefined) {
      this.#after(exp - now(), () => this.#end('token_expired', grpc.status.UNAVAILABLE, `the token this stream was opened with expired at ${new Date(exp).toISOString()}; reconnect with the current one`));
    }
    this.#scheduleCheck();
  }

  /** The stream ended (for any reason): nothing more happens to it. */
  stop(): void {
    this.#over = true;
    for (const t of this.#timers) clearTimeout(t);
    this.#timers.clear();
  }

  #scheduleCheck(): void {
    const r = this.o.reauth!;
    this.#after(r.intervalMs * (0.9 + Math.random() * 0.2), () => void this.#check());
  }

  async #check(): Promise<void> {
    const r = this.o.reauth!;
    const d = await r.check();
    if (this.#over) return;
    r.checked(d);
    // Not checked now (the API server away, reviews paced): kept until the next check; its
    // token's expiry and its age still bound it.
    if (d.ok || d.code === grpc.status.UNAVAILABLE) return this.#scheduleCheck();
    this.#end('reauth_refused', d.code, `re-authentication refused: ${d.message}`);
  }

  #after(ms: number, fn: () => void): void {
    const t = setTimeout(() => {
      this.#timers.delete(t);
      fn();
    }, Math.min(Math.max(ms, 0), MAX_DELAY));
    t.unref();
    this.#timers.add(t);
  }

  #end(reason: EndReason, code: grpc.status, message: string): void {
    if (this.#over) return;
    this.stop();
    this.o.end(reason, code, message);
  }
}
