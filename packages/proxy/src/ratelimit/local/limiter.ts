// The local limits of one attachment point (a listener's gateway-level policy, or a route's).
// A check is synchronous: every tokens window must be within budget and every request bucket
// must have a token; only then are the request tokens taken, so a refused request consumes
// nothing and concurrent requests can never be admitted past a bucket's capacity.
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

export interface LocalCheck {
  readonly allowed: boolean;
  /** The entry that refused, when one did. */
  readonly refusedBy: LocalEntry['kind'] | null;
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

const ALLOWED: LocalCheck = { allowed: true, refusedBy: null };
const REFUSED_BY_TOKENS: LocalCheck = { allowed: false, refusedBy: 'tokens' };
const REFUSED_BY_REQUESTS: LocalCheck = { allowed: false, refusedBy: 'requests' };

export class LocalLimiter {
  readonly hasTokens: boolean;
  constructor(
    readonly level: LimitLevel,
    readonly scope: string,
    readonly entries: readonly LocalEntry[],
    private readonly clock: Clock,
  ) {
    this.hasTokens = entries.some((e) => e.kind === 'tokens');
  }

  static compile(level: LimitLevel, scope: string, configs: readonly LocalRateLimitIR[], store: LimiterStore): LocalLimiter {
    return new LocalLimiter(level, scope, configs.map((c, i) => store.entry(`${level}:${scope}`, i, c)), store.clock);
  }

  check(): LocalCheck {
    const now = this.clock();
    for (const e of this.entries) {
      if (e.kind === 'tokens' && !e.window.admits(now)) return REFUSED_BY_TOKENS;
      if (e.kind === 'requests' && e.bucket.remaining(now) < 1) return REFUSED_BY_REQUESTS;
    }
    for (const e of this.entries) if (e.kind === 'requests') e.bucket.take(now);
    return ALLOWED;
  }

  addTokens(n: number): void {
    const now = this.clock();
    for (const e of this.entries) if (e.kind === 'tokens') e.window.add(n, now);
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
