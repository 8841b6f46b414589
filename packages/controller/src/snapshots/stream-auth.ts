// Who may open the stream of a Gateway: the proxies of that Gateway only. A proxy presents
// its projected ServiceAccount token (audience `tollgate`) as `authorization: Bearer <token>`
// metadata; the API server says whose it is (TokenReview); it must be the ServiceAccount the
// deployer made for that Gateway. The answers, each with a message saying what to fix:
//   UNAUTHENTICATED    no token, a token the API server refuses (garbage, expired, another
//                      audience), a token not issued for `tollgate`
//   PERMISSION_DENIED  a valid token of anyone but that Gateway's ServiceAccount
//   UNAVAILABLE        the review could not be made (the API server away): the proxy retries
// Tokens never appear in these messages, the logs or the metrics.
import * as grpc from '@grpc/grpc-js';
import { describeApiError } from '../kube/errors.js';
import { STREAM_AUDIENCE, type TokenReviewer } from './token-review.js';

export interface ServiceAccountRef {
  readonly namespace: string;
  readonly name: string;
}

export type AuthDecision =
  | { readonly ok: true; readonly serviceAccount: ServiceAccountRef }
  | { readonly ok: false; readonly code: grpc.status; readonly result: 'unauthenticated' | 'permission_denied' | 'unavailable'; readonly message: string };

export interface StreamAuthenticator {
  /** May the holder of `token` (undefined: none sent) open the stream of `gateway` (<ns>/<name>)? */
  check(token: string | undefined, gateway: string): Promise<AuthDecision>;
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

export class TokenReviewAuthenticator implements StreamAuthenticator {
  constructor(
    private readonly reviewer: TokenReviewer,
    private readonly expected: ExpectedServiceAccount,
  ) {}

  async check(token: string | undefined, gateway: string): Promise<AuthDecision> {
    if (!token) {
      return unauthenticated(`no token: a proxy sends its projected ServiceAccount token (audience ${STREAM_AUDIENCE}) as "authorization: Bearer <token>" metadata; check --controller-token and the pod's token volume`);
    }
    let review;
    try {
      review = await this.reviewer.review(token);
    } catch (err) {
      return { ok: false, code: grpc.status.UNAVAILABLE, result: 'unavailable', message: `the token could not be checked (TokenReview failed: ${describeApiError(err, 200)}); retry` };
    }
    if (!review.authenticated) {
      return unauthenticated(`the API server refused the token (${review.error.slice(0, 300)}); a proxy presents a current ServiceAccount token issued for audience ${STREAM_AUDIENCE}`);
    }
    if (!review.audiences.includes(STREAM_AUDIENCE)) {
      return unauthenticated(`the token is not issued for audience ${STREAM_AUDIENCE} (it is for ${review.audiences.join(', ') || 'no audience'})`);
    }
    const who = serviceAccountOf(review.username);
    if (!who) return denied(`${review.username} is not a ServiceAccount; only the proxies of Gateway ${gateway} may open its stream`);
    const want = this.expected(gateway);
    if (typeof want === 'string') return denied(`ServiceAccount ${sa(who)} may not open the stream of Gateway ${gateway}: ${want}`);
    if (want.namespace !== who.namespace || want.name !== who.name) {
      return denied(`ServiceAccount ${sa(who)} may not open the stream of Gateway ${gateway}; its proxies run as ServiceAccount ${sa(want)}`);
    }
    return { ok: true, serviceAccount: who };
  }
}
