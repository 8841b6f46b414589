// Tokens and a reviewer standing in for the API server's TokenReview, for the stream's
// authentication tests (the real TokenReview is exercised in e2e/snapshot-stream.test.ts).
import type { ReviewResult, TokenReviewer } from '../src/snapshots/token-review.js';

export const GW = 'apps/gw';
export const GW_SA = 'system:serviceaccount:apps:gw-tollgate';
export const OK: ReviewResult = { authenticated: true, username: GW_SA, audiences: ['tollgate'] };

/** A JWT-shaped token with these claims; `sig` tells tokens with the same claims apart. */
export const token = (claims: Record<string, unknown>, sig: string) => `eyJhbGciOiJFUzI1NiJ9.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.${sig}`;

/** Answers from a table; throws for tokens named `down`. */
export class TableReviewer implements TokenReviewer {
  calls: string[] = [];
  constructor(private readonly table: Record<string, ReviewResult>) {}
  async review(token: string): Promise<ReviewResult> {
    this.calls.push(token);
    if (token === 'down' || token.endsWith('.down')) throw Object.assign(new Error('connect ECONNREFUSED'), { code: undefined });
    return this.table[token] ?? { authenticated: false, error: 'invalid bearer token' };
  }
}

export const expected = (gateway: string) => (gateway === GW ? { namespace: 'apps', name: 'gw-tollgate' } : `the controller knows no Gateway ${gateway}`);
