// The local limits of one attachment point (a listener's gateway-level policy, or a route's).
// A check is synchronous: every tokens window must be within budget and every request bucket
// must have a token; only then are the request tokens taken and the token reservations made,
// so a refused request consumes nothing and concurrent requests can never be admitted past a
// bucket's capacity. What an admitted request took is held in a `LocalHold` until the request
// ends: refunded when another limit refuses it, settled with its usage when it completes.
import type { LocalRateLimitIR, RateLimitUnit } from '@tollgate/api';
import { UNIT_SECONDS } from '@tollgate/api';
import type { Clock } from '../clock.js';
import type { LimitStatus } from '../headers.js';
import { RequestBucket } from './request-bucket.js';
import { TokenWindow } from './token-window.js';

export type LimitLevel = 'gateway' | 'route';

export type LocalEntry =
  | { readonly kind: 'requests'; readonly config: LocalRateLimitIR; readonly bucket: RequestBucket; readonly limitText: string }
  | { readonly kind: 'tokens'; readonly config: LocalRateLimitIR; readonly window: TokenWindow; readonly limitText: string };

export type LocalCheck =
  | { readonly allowed: true; readonly hold: LocalHold }
  | { readonly allowed: false; /** The kind of entry that refused. */ readonly refusedBy: LocalEntry['kind'] };

/**
 * What one admitted request holds in one local limiter: a token of each request bucket and a
 * reservation in each tokens window. `Admissions` ends it exactly once: `refund` (the gateway
 * refused the request after all: nothing is counted), or `settle` (the request went upstream:
 * it keeps its request tokens, and its reservations become its usage, or vanish when nothing
 * is charged).
 */
export interface LocalHold {
  refund(): void;
  /** `tokens`: the usage to charge, or null when the response is not charged (not 2xx, failed). */
  settle(tokens: number | null): void;
  /**
   * A hold for a copy of the request (a mirror): the same token reservation again in each
   * window, no request token (the copy was not admitted on its own). Settled by the copy.
   */
  copy(): LocalHold;
}

/** What a copy holds in a limiter without tokens entries: nothing. */
const NOTHING_HELD: LocalHold = {
  refund() {},
  settle() {},
  copy: () => NOTHING_HELD,
};

/** The hold of a limiter without tokens entries: no per-request state, one per limiter. */
class RequestsHold implements LocalHold {
  constructor(
    private readonly buckets: readonly RequestBucket[],
    private readonly clock: Clock,
  ) {}

  refund(): void {
    const now = this.clock();
    for (const b of this.buckets) b.giveBack(now);
  }

  settle(): void {}

  copy(): LocalHold {
    return NOTHING_HELD;
  }
}

/** The hold of a limiter with tokens entries: the reservation and the windows it is in. */
class TokensHold implements LocalHold {
  constructor(
    private readonly requests: LocalHold,
    private readonly windows: readonly TokenWindow[],
    private readonly amount: number,
    /** Per window, the start of the window the reservation was made in. */
    private readonly reservedIn: readonly number[],
    private readonly clock: Clock,
  ) {}

  refund(): void {
    this.requests.refund();
    const now = this.clock();
    for (let i = 0; i < this.windows.length; i++) this.windows[i]!.release(this.amount, this.reservedIn[i]!, now);
  }

  settle(tokens: number | null): void {
    const now = this.clock();
    for (let i = 0; i < this.windows.length; i++) {
      if (tokens === null) this.windows[i]!.release(this.amount, this.reservedIn[i]!, now);
      else this.windows[i]!.settle(this.amount, this.reservedIn[i]!, tokens, now);
    }
  }

  copy(): LocalHold {
    const now = this.clock();
    return new TokensHold(NOTHING_HELD, this.windows, this.amount, this.windows.map((w) => w.reserve(this.amount, now)), this.clock);
  }
}

function unitMs(unit: RateLimitUnit): number {
  return UNIT_SECONDS[unit] * 1000;
}

/** Keeps limiter state across config reloads: an unchanged entry keeps its counters. */
export class LimiterStore {
  #live = new Map<string, RequestBucket | TokenWindow>();
  #next = new Map<string, RequestBucket | TokenWindow>();
  constructor(readonly clock: Clock) {}

  entry(scope: string, index: number, config: LocalRateLimitIR): LocalEntry {
    const key = `${scope}#${index}:${JSON.stringify(config)}`;
    let state = this.#next.get(key) ?? this.#live.get(key);
    if (config.kind === 'requests') {
      if (!(state instanceof RequestBucket)) state = new RequestBucket(config.requests, config.burst, unitMs(config.unit), this.clock);
      this.#next.set(key, state);
      return { kind: 'requests', config, bucket: state, limitText: String(state.capacity) };
    }
    if (!(state instanceof TokenWindow)) state = new TokenWindow(config.tokens, unitMs(config.unit), this.clock);
    this.#next.set(key, state);
    return { kind: 'tokens', config, window: state, limitText: String(state.tokens) };
  }

  /** Called once a new config is in place: state no entry of it uses is dropped. */
  commit(): void {
    this.#live = this.#next;
    this.#next = new Map();
  }

  /** Called when a new config is refused: forget what it prepared. */
  discard(): void {
    this.#next = new Map();
  }
}

const REFUSED_BY_TOKENS: LocalCheck = { allowed: false, refusedBy: 'tokens' };
const REFUSED_BY_REQUESTS: LocalCheck = { allowed: false, refusedBy: 'requests' };

export class LocalLimiter {
  readonly hasTokens: boolean;
  readonly #windows: readonly TokenWindow[];
  readonly #requestsHold: RequestsHold;
  readonly #admitted: LocalCheck;

  constructor(
    readonly level: LimitLevel,
    readonly scope: string,
    readonly entries: readonly LocalEntry[],
    private readonly clock: Clock,
  ) {
    this.#windows = entries.flatMap((e) => (e.kind === 'tokens' ? [e.window] : []));
    this.hasTokens = this.#windows.length > 0;
    this.#requestsHold = new RequestsHold(
      entries.flatMap((e) => (e.kind === 'requests' ? [e.bucket] : [])),
      clock,
    );
    this.#admitted = { allowed: true, hold: this.#requestsHold };
  }

  static compile(level: LimitLevel, scope: string, configs: readonly LocalRateLimitIR[], store: LimiterStore): LocalLimiter {
    return new LocalLimiter(level, scope, configs.map((c, i) => store.entry(`${level}:${scope}`, i, c)), store.clock);
  }

  /** `reservation`: the tokens an admitted request holds in each tokens window until settled. */
  check(reservation: number): LocalCheck {
    const now = this.clock();
    for (const e of this.entries) {
      if (e.kind === 'tokens' && !e.window.admits(now)) return REFUSED_BY_TOKENS;
      if (e.kind === 'requests' && e.bucket.remaining(now) < 1) return REFUSED_BY_REQUESTS;
    }
    for (const e of this.entries) if (e.kind === 'requests') e.bucket.take(now);
    // Without tokens entries the hold has no per-request state: nothing is allocated.
    if (!this.hasTokens) return this.#admitted;
    const reservedIn = this.#windows.map((w) => w.reserve(reservation, now));
    return { allowed: true, hold: new TokensHold(this.#requestsHold, this.#windows, reservation, reservedIn, this.clock) };
  }

  /** The status of every entry, for the x-ratelimit-* headers. */
  statuses(): LimitStatus[] {
    const now = this.clock();
    return this.entries.map((e) =>
      e.kind === 'requests'
        ? { limit: e.limitText, remaining: e.bucket.remaining(now), resetSeconds: e.bucket.resetSeconds(now) }
        : { limit: e.limitText, remaining: e.window.remaining(now), resetSeconds: e.window.resetSeconds(now) },
    );
  }
}
