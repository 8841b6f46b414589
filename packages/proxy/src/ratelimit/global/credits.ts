// Token credits of this replica on the rate limit service's Tokens counters. With
// `tokenReservation: Estimate` a request's Tokens descriptors are charged its estimate when it is
// admitted (so concurrent requests on every replica meet a counter that already holds each
// other's reservations), and its real usage when it ends. The service's counters only grow: when
// the usage is below the estimate (or the request never reached a backend) the difference stays
// counted, so this replica owes the key that many tokens. It pays them back by charging the next
// reservations of that key less, while the window the tokens were counted in lasts. Nothing
// else may reduce a charge, so the service's counter is never below the real usage: a budget can
// be refused early by what a replica still holds (at most about one request's estimate per key
// and replica once traffic settles), never overspent by it.

/** Default bound on the keys holding credit (about 200 bytes each). */
export const DEFAULT_MAX_CREDIT_KEYS = 10_000;

const NONE = { taken: 0, until: 0 } as const;

interface Credit {
  tokens: number;
  /** When the service's window the tokens were counted in ends (ms since the epoch). */
  until: number;
}

export class TokenCredits {
  readonly #byKey = new Map<string, Credit>();
  /** Keys the service last found over their limit, until the end of that window. */
  readonly #spent = new Map<string, number>();

  constructor(
    readonly max: number = DEFAULT_MAX_CREDIT_KEYS,
    private readonly now: () => number = Date.now,
  ) {}

  get size(): number {
    return this.#byKey.size;
  }

  /**
   * Takes up to `want` tokens of `key`'s credit in the current window: how many, and the end of
   * the window they belong to (to give them back if the charge they stand in for fails).
   */
  take(key: string, want: number): { readonly taken: number; readonly until: number } {
    const c = this.#byKey.get(key);
    if (c === undefined || want <= 0) return NONE;
    if (this.now() >= c.until) {
      this.#byKey.delete(key);
      return NONE;
    }
    const taken = Math.min(c.tokens, want);
    c.tokens -= taken;
    if (c.tokens === 0) this.#byKey.delete(key);
    return { taken, until: c.until };
  }

  /**
   * `tokens` more of `key` are counted by the service and not used, in the window that ends at
   * `until`. Credit of an earlier window is worth nothing in a later one and is replaced. A key
   * dropped for the bound loses its credit: the budget stays counted high, never low.
   */
  give(key: string, tokens: number, until: number): void {
    if (!(tokens > 0) || !(until > this.now())) return;
    const c = this.#byKey.get(key);
    if (c !== undefined && c.until === until) {
      c.tokens += tokens;
      // Most recently given last: the first in the map goes when it is full.
      this.#byKey.delete(key);
      this.#byKey.set(key, c);
      return;
    }
    this.#byKey.delete(key);
    if (this.#byKey.size >= this.max) this.#byKey.delete(this.#byKey.keys().next().value!);
    this.#byKey.set(key, { tokens, until });
  }

  /**
   * The service found `key`'s budget spent, in the window that ends at `until`: until a check
   * finds it within again, requests of the key are checked without a reservation, so a client
   * that keeps asking while refused adds nothing to the counter (the service counts a refused
   * request's hits, and a budget raised later would find them counted).
   */
  markSpent(key: string, until: number): void {
    if (!(until > this.now())) return;
    this.#spent.delete(key);
    if (this.#spent.size >= this.max) this.#spent.delete(this.#spent.keys().next().value!);
    this.#spent.set(key, until);
  }

  /** A check found `key` within its budget again. */
  markWithin(key: string): void {
    this.#spent.delete(key);
  }

  /** Whether the service last found `key`'s budget spent in the current window. */
  spent(key: string): boolean {
    const until = this.#spent.get(key);
    if (until === undefined) return false;
    if (this.now() < until) return true;
    this.#spent.delete(key);
    return false;
  }

  /** The credit `key` holds now (admin view and tests). */
  held(key: string): number {
    const c = this.#byKey.get(key);
    return c !== undefined && this.now() < c.until ? c.tokens : 0;
  }
}
