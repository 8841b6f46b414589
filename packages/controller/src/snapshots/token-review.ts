// Who a proxy's token belongs to, as the API server says (TokenReview, audience `tollgate`).
// Results are cached briefly by the token's SHA-256 (never the token itself): proxies of a
// Gateway reconnect together, and one review per token and minute is enough. A positive
// result is never kept past the token's own expiry; a failed review (API server away) is not
// cached at all, so the next attempt asks again.
//
// Every token nobody has shown before costs the API server a review, and whoever reaches the
// port may send a new one on every attempt: reviews of new tokens are paced by a token bucket
// (`reviewsPerSecond`, burst as large); beyond it the review is not made (ReviewThrottled) and
// the proxy is told to retry. Re-checks of open streams (`fresh`) skip the cache and the
// bucket: there are no more of them than streams the controller admits.
import { createHash } from 'node:crypto';
import { AuthenticationV1Api, type KubeConfig } from '@kubernetes/client-node';

/** The audience proxies' projected tokens are issued for. */
export const STREAM_AUDIENCE = 'tollgate';

export type ReviewResult =
  | { readonly authenticated: true; readonly username: string; readonly audiences: readonly string[] }
  | { readonly authenticated: false; readonly error: string };

export interface ReviewOptions {
  /** Ask the API server even when a result is cached (re-checking an open stream). */
  readonly fresh?: boolean;
}

export interface TokenReviewer {
  /** Rejects only when the review itself failed (the API server could not be asked) or was not made (ReviewThrottled). */
  review(token: string, options?: ReviewOptions): Promise<ReviewResult>;
}

/** A review not made: more new tokens than `reviewsPerSecond` arrived. */
export class ReviewThrottled extends Error {
  constructor(readonly perSecond: number) {
    super(`more new tokens than the ${perSecond} reviews per second the controller makes (--snapshot-token-reviews-per-second)`);
  }
}

export class KubeTokenReviewer implements TokenReviewer {
  readonly #api: AuthenticationV1Api;
  constructor(kc: KubeConfig) {
    this.#api = kc.makeApiClient(AuthenticationV1Api);
  }

  async review(token: string): Promise<ReviewResult> {
    const r = await this.#api.createTokenReview({ body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', spec: { token, audiences: [STREAM_AUDIENCE] } } });
    const s = r.status;
    if (s?.authenticated && s.user?.username) return { authenticated: true, username: s.user.username, audiences: s.audiences ?? [] };
    return { authenticated: false, error: s?.error || 'the API server did not authenticate the token' };
  }
}

/** The `result` label of tollgate_controller_stream_token_reviews_total. */
export type ReviewCount = 'new' | 'recheck' | 'throttled';

export interface CacheOptions {
  /** How long an accepted token's result is kept (default 60 s; never past the token's exp). */
  readonly positiveTtlMs?: number;
  /** How long a refused token's result is kept (default 10 s). */
  readonly negativeTtlMs?: number;
  /** Entries kept at most (default 4096); the oldest go first. */
  readonly maxEntries?: number;
  /** Reviews of tokens not in the cache, per second (default 50; the burst is as large). */
  readonly reviewsPerSecond?: number;
  /** Told of each review: of a new token, a re-check of an open stream's, or not made for the rate (metrics). */
  readonly counted?: (result: ReviewCount) => void;
  readonly now?: () => number;
}

interface Entry {
  readonly result: ReviewResult;
  readonly until: number;
}

export class CachingTokenReviewer implements TokenReviewer {
  readonly #inner: TokenReviewer;
  readonly #positiveTtl: number;
  readonly #negativeTtl: number;
  readonly #max: number;
  readonly #now: () => number;
  readonly #cache = new Map<string, Entry>();
  /** Reviews under way, so a reconnect storm with one token asks once. */
  readonly #inflight = new Map<string, Promise<ReviewResult>>();
  readonly #perSecond: number;
  readonly #counted: (result: ReviewCount) => void;
  /** Reviews the bucket allows now, and when it was last filled. */
  #allowance: number;
  #filledAt: number;
  /** API reviews made (tests and metrics read it). */
  reviews = 0;
  /** Reviews not made for the rate (tests and metrics read it). */
  throttled = 0;

  constructor(inner: TokenReviewer, o: CacheOptions = {}) {
    this.#inner = inner;
    this.#positiveTtl = o.positiveTtlMs ?? 60_000;
    this.#negativeTtl = o.negativeTtlMs ?? 10_000;
    this.#max = o.maxEntries ?? 4096;
    this.#now = o.now ?? Date.now;
    this.#counted = o.counted ?? (() => undefined);
    this.#perSecond = o.reviewsPerSecond ?? 50;
    this.#allowance = this.#perSecond;
    this.#filledAt = this.#now();
  }

  async review(token: string, options: ReviewOptions = {}): Promise<ReviewResult> {
    const key = createHash('sha256').update(token).digest('base64');
    const now = this.#now();
    const hit = this.#cache.get(key);
    if (hit && hit.until > now && !options.fresh) return hit.result;
    if (hit && !options.fresh) this.#cache.delete(key);
    const running = this.#inflight.get(key);
    if (running) return running;
    if (!options.fresh && !this.#take(now)) {
      this.throttled++;
      this.#counted('throttled');
      throw new ReviewThrottled(this.#perSecond);
    }
    const p = this.#inner.review(token).finally(() => this.#inflight.delete(key));
    this.#inflight.set(key, p);
    this.reviews++;
    this.#counted(options.fresh ? 'recheck' : 'new');
    const result = await p;
    const ttl = result.authenticated ? this.#positiveTtl : this.#negativeTtl;
    const exp = result.authenticated ? tokenExpiry(token) : undefined;
    const until = Math.min(this.#now() + ttl, exp ?? Infinity);
    if (until > this.#now()) {
      this.#cache.set(key, { result, until });
      while (this.#cache.size > this.#max) this.#cache.delete(this.#cache.keys().next().value!);
    }
    return result;
  }

  #take(now: number): boolean {
    this.#allowance = Math.min(this.#perSecond, this.#allowance + ((now - this.#filledAt) / 1000) * this.#perSecond);
    this.#filledAt = now;
    if (this.#allowance < 1) return false;
    this.#allowance--;
    return true;
  }
}

/** What a JWT says of itself, read without verifying it (only the API server verifies). */
export interface UnverifiedClaims {
  /** ms since the epoch. */
  readonly exp?: number;
  readonly aud?: readonly string[];
  readonly sub?: string;
}

/**
 * The claims of a JWT, read without verifying (the API server verifies); undefined when the
 * token is not a JWT with a JSON object as its payload. Used only to refuse early what a
 * review would refuse anyway, and to bound how long a result is kept.
 */
export function unverifiedClaims(token: string): UnverifiedClaims | undefined {
  const parts = token.split('.');
  if (parts.length !== 3 || !parts[0] || !parts[2]) return undefined;
  let claims: unknown;
  try {
    claims = JSON.parse(Buffer.from(parts[1]!, 'base64url').toString('utf8'));
  } catch {
    return undefined;
  }
  if (claims === null || typeof claims !== 'object' || Array.isArray(claims)) return undefined;
  const c = claims as { exp?: unknown; aud?: unknown; sub?: unknown };
  const aud = typeof c.aud === 'string' ? [c.aud] : Array.isArray(c.aud) && c.aud.every((a) => typeof a === 'string') ? c.aud : undefined;
  return {
    ...(typeof c.exp === 'number' && Number.isFinite(c.exp) ? { exp: c.exp * 1000 } : {}),
    ...(aud ? { aud } : {}),
    ...(typeof c.sub === 'string' ? { sub: c.sub } : {}),
  };
}

/** The `exp` claim of a JWT, in ms (unverified: see unverifiedClaims); undefined when absent. */
export function tokenExpiry(token: string): number | undefined {
  return unverifiedClaims(token)?.exp;
}
