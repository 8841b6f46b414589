// Who may open the stream of a Gateway: the proxies of that Gateway only. A proxy presents
// its projected ServiceAccount token (audience `tollgate`) as `authorization: Bearer <token>`
// metadata; the API server says whose it is (TokenReview); it must be the ServiceAccount the
// deployer made for that Gateway. The answers, each with a message saying what to fix:
//   UNAUTHENTICATED    no token, a token the API server refuses (garbage, expired, another
//                      audience), a token not issued for `tollgate`
//   PERMISSION_DENIED  a valid token of anyone but that Gateway's ServiceAccount
//   UNAVAILABLE        the review could not be made (the API server away), or not now (more new
//                      tokens than the reviews per second the controller makes): the proxy retries
// Tokens never appear in these messages, the logs or the metrics.
//
// A review costs the API server a request, and whoever reaches the port chooses the token: what
// the token says of itself (unverified) is checked first, and a token that is too long, not a
// JWT, expired, for another audience or for another ServiceAccount than the Gateway's is refused
// without a review; so is any token for a Gateway the controller does not know. Only a token
// that claims to be what the Gateway's proxies present is reviewed, and only the review admits.
import * as grpc from '@grpc/grpc-js';
import { describeApiError } from '../kube/errors.js';
import { clip } from './clip.js';
import { ReviewThrottled, STREAM_AUDIENCE, unverifiedClaims, type ReviewOptions, type TokenReviewer } from './token-review.js';

/** Longest token reviewed (a projected ServiceAccount token is about 1 KiB). */
export const MAX_TOKEN_BYTES = 16 * 1024;

export interface ServiceAccountRef {
  readonly namespace: string;
  readonly name: string;
}

export type AuthDecision =
  | { readonly ok: true; readonly serviceAccount: ServiceAccountRef }
  | { readonly ok: false; readonly code: grpc.status; readonly result: 'unauthenticated' | 'permission_denied' | 'unavailable' | 'throttled'; readonly message: string };

export interface StreamAuthenticator {
  /**
   * May the holder of `token` (undefined: none sent) open the stream of `gateway` (<ns>/<name>)?
   * `fresh`: the stream is open and re-checked; the API server is asked again.
   */
  check(token: string | undefined, gateway: string, options?: ReviewOptions): Promise<AuthDecision>;
}

/** `system:serviceaccount:<ns>:<name>` -> its parts; null for any other user. */
export function serviceAccountOf(username: string): ServiceAccountRef | null {
  const m = /^system:serviceaccount:([a-z0-9]([-a-z0-9]*[a-z0-9])?):([a-z0-9]([-a-z0-9.]*[a-z0-9])?)$/.exec(username);
  return m ? { namespace: m[1]!, name: m[3]! } : null;
}

/** The value of an `authorization: Bearer <token>` metadata entry; undefined when absent or another scheme. */
export function bearerToken(values: readonly (string | Buffer)[]): string | undefined {
  const v = values[0];
  if (typeof v !== 'string') return undefined;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(v);
  return m?.[1];
}

/**
 * The ServiceAccount whose proxies serve `gateway`, or a sentence saying why there is none
 * (the controller looks the Gateway up in its caches and names it as the deployer does).
 */
export type ExpectedServiceAccount = (gateway: string) => ServiceAccountRef | string;

const unauthenticated = (message: string): AuthDecision => ({ ok: false, code: grpc.status.UNAUTHENTICATED, result: 'unauthenticated', message });
const denied = (message: string): AuthDecision => ({ ok: false, code: grpc.status.PERMISSION_DENIED, result: 'permission_denied', message });
const sa = (r: ServiceAccountRef) => `${r.namespace}/${r.name}`;

/** Why `username` may not open the stream of `gateway`, whose proxies run as `want`; undefined when it may. */
function refusal(username: string, gateway: string, want: ServiceAccountRef | string): AuthDecision | undefined {
  const who = serviceAccountOf(username);
  if (!who) return denied(`${username} is not a ServiceAccount; only the proxies of Gateway ${gateway} may open its stream`);
  if (typeof want === 'string') return denied(`ServiceAccount ${sa(who)} may not open the stream of Gateway ${gateway}: ${want}`);
  if (want.namespace !== who.namespace || want.name !== who.name) return denied(`ServiceAccount ${sa(who)} may not open the stream of Gateway ${gateway}; its proxies run as ServiceAccount ${sa(want)}`);
  return undefined;
}

export class TokenReviewAuthenticator implements StreamAuthenticator {
  constructor(
    private readonly reviewer: TokenReviewer,
    private readonly expected: ExpectedServiceAccount,
    private readonly now: () => number = Date.now,
  ) {}

  async check(token: string | undefined, gateway: string, options: ReviewOptions = {}): Promise<AuthDecision> {
    if (!token) {
      return unauthenticated(`no token: a proxy sends its projected ServiceAccount token (audience ${STREAM_AUDIENCE}) as "authorization: Bearer <token>" metadata; check --controller-token and the pod's token volume`);
    }
    if (token.length > MAX_TOKEN_BYTES) return unauthenticated(`the token is ${token.length} bytes, more than the ${MAX_TOKEN_BYTES} a ServiceAccount token may be`);
    const early = this.#claimed(token, gateway);
    if (early) return early;
    let review;
    try {
      review = await this.reviewer.review(token, options);
    } catch (err) {
      if (err instanceof ReviewThrottled) return { ok: false, code: grpc.status.UNAVAILABLE, result: 'throttled', message: `the token was not checked now: ${err.message}; retry` };
      return { ok: false, code: grpc.status.UNAVAILABLE, result: 'unavailable', message: `the token could not be checked (TokenReview failed: ${describeApiError(err, 200)}); retry` };
    }
    if (!review.authenticated) {
      return unauthenticated(`the API server refused the token (${review.error.slice(0, 300)}); a proxy presents a current ServiceAccount token issued for audience ${STREAM_AUDIENCE}`);
    }
    if (!review.audiences.includes(STREAM_AUDIENCE)) {
      return unauthenticated(`the token is not issued for audience ${STREAM_AUDIENCE} (it is for ${review.audiences.join(', ') || 'no audience'})`);
    }
    const who = serviceAccountOf(review.username);
    // Looked up again: the Gateway may have gone during the review.
    const want = this.expected(gateway);
    return refusal(review.username, gateway, want) ?? { ok: true, serviceAccount: who! };
  }

  /** A refusal decided from the Gateway and what the token says of itself, without a review. */
  #claimed(token: string, gateway: string): AuthDecision | undefined {
    const want = this.expected(gateway);
    if (typeof want === 'string') return denied(`the stream of Gateway ${gateway} cannot be opened: ${want}`);
    const claims = unverifiedClaims(token);
    const present = `a proxy presents its current projected ServiceAccount token (audience ${STREAM_AUDIENCE})`;
    if (!claims) return unauthenticated(`the token is not a ServiceAccount token (a JWT); ${present}`);
    if (claims.exp !== undefined && claims.exp <= this.now()) return unauthenticated(`the token expired at ${new Date(claims.exp).toISOString()}; ${present}`);
    if (claims.aud && !claims.aud.includes(STREAM_AUDIENCE)) return unauthenticated(`the token is not issued for audience ${STREAM_AUDIENCE} (it is for ${clip(claims.aud.join(', '))}); ${present}`);
    return claims.sub === undefined ? undefined : refusal(clip(claims.sub), gateway, want);
  }
}
