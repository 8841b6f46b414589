// Who a proxy's token belongs to, as the API server says (TokenReview, audience `tollgate`).
// Results are cached briefly by the token's SHA-256 (never the token itself): proxies of a
// Gateway reconnect together, and one review per token and minute is enough. A positive
// result is never kept past the token's own expiry; a failed review (API server away) is not
// cached at all, so the next attempt asks again.
import { createHash } from 'node:crypto';
import { AuthenticationV1Api, type KubeConfig } from '@kubernetes/client-node';

/** The audience proxies' projected tokens are issued for. */
export const STREAM_AUDIENCE = 'tollgate';

export type ReviewResult =
  | { readonly authenticated: true; readonly username: string; readonly audiences: readonly string[] }
  | { readonly authenticated: false; readonly error: string };

export interface TokenReviewer {
  /** Rejects only when the review itself failed (the API server could not be asked). */
  review(token: string): Promise<ReviewResult>;
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

export interface CacheOptions {
  /** How long an accepted token's result is kept (default 60 s; never past the token's exp). */
  readonly positiveTtlMs?: number;
  /** How long a refused token's result is kept (default 10 s). */
  readonly negativeTtlMs?: number;
  /** Entries kept at most (default 4096); the oldest go first. */
  readonly maxEntries?: number;
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
  /** API reviews made (tests and metrics read it). */
  reviews = 0;

  constructor(inner: TokenReviewer, o: CacheOptions = {}) {
    this.#inner = inner;
    this.#positiveTtl = o.positiveTtlMs ?? 60_000;
    this.#negativeTtl = o.negativeTtlMs ?? 10_000;
    this.#max = o.maxEntries ?? 4096;
    this.#now = o.now ?? Date.now;
  }

  async review(token: string): Promise<ReviewResult> {
    const key = createHash('sha256').update(token).digest('base64');
    const now = this.#now();
    const hit = this.#cache.get(key);
    if (hit && hit.until > now) return hit.result;
    if (hit) this.#cache.delete(key);
    const running = this.#inflight.get(key);
    if (running) return running;
    const p = this.#inner.review(token).finally(() => this.#inflight.delete(key));
    this.#inflight.set(key, p);
    this.reviews++;
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
}

/**
 * The `exp` claim of a JWT, in ms, read without verifying (the API server verified it); only
 * used to bound how long a result is cached. Undefined when the token is not a JWT with exp.
 */
export function tokenExpiry(token: string): number | undefined {
  const parts = token.split('.');
  if (parts.length !== 3) return undefined;
  try {
    const claims = JSON.parse(Buffer.from(parts[1]!, 'base64url').toString('utf8')) as { exp?: unknown };
    return typeof claims.exp === 'number' && Number.isFinite(claims.exp) ? claims.exp * 1000 : undefined;
  } catch {
    return undefined;
  }
}
