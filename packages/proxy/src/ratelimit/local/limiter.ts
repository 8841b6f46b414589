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
  | { readonly kind: 'requests'; readonly config: LocalRateLimitIR; readonly bucket: RequestBucket }
  | { readonly kind: 'tokens'; readonly config: LocalRateLimitIR; readonly window: TokenWindow };

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
      return { kind: 'requests', config, bucket: state };
    }
    if (!(state instanceof TokenWindow)) state = new TokenWindow(config.tokens, unitMs(config.unit), this.clock);
    this.#next.set(key, state);
    return { kind: 'tokens', config, window: state };
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

export class LocalLimiter {
  readonly hasTokens: boolean;
  constructor(
    readonly level: LimitLevel,
    readonly scope: string,
    readonly entries: readonly LocalEntry[],
  ) {
    this.hasTokens = entries.some((e) => e.kind === 'tokens');
  }

  static compile(level: LimitLevel, scope: string, configs: readonly LocalRateLimitIR[], store: LimiterStore): LocalLimiter {
    return new LocalLimiter(level, scope, configs.map((c, i) => store.entry(`${level}:${scope}`, i, c)));
  }

  check(): LocalCheck {
    for (const e of this.entries) {
      if (e.kind === 'tokens' && !e.window.admits()) return { allowed: false, refusedBy: 'tokens' };
      if (e.kind === 'requests' && e.bucket.remaining() < 1) return { allowed: false, refusedBy: 'requests' };
    }
    for (const e of this.entries) if (e.kind === 'requests') e.bucket.take();
    return { allowed: true, refusedBy: null };
  }

  addTokens(n: number): void {
    for (const e of this.entries) if (e.kind === 'tokens') e.window.add(n);
  }

  /** The status of every entry, for the x-ratelimit-* headers. */
  statuses(): LimitStatus[] {
    return this.entries.map((e) =>
      e.kind === 'requests'
        ? { limit: String(e.bucket.capacity), remaining: e.bucket.remaining(), resetSeconds: e.bucket.resetSeconds() }
        : { limit: String(e.window.tokens), remaining: e.window.remaining(), resetSeconds: e.window.resetSeconds() },
    );
  }
}
