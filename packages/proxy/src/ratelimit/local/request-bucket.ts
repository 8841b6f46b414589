// A `requests` entry: a token bucket of capacity requests + burst, refilled with `requests`
// tokens at each unit boundary (counted from `start`: the bucket's creation, a UTC midnight for
// Days, the window of its table for a keyed limit's), never above capacity.
// Each admitted request takes one token; with none left the request is refused. A request
// refused later by another limit gets its token back.
import type { Clock } from '../clock.js';

export class RequestBucket {
  #tokens: number;
  #windowStart: number;

  constructor(
    readonly requests: number,
    readonly burst: number,
    readonly unitMs: number,
    private readonly clock: Clock,
    start = clock(),
  ) {
    this.#tokens = requests + burst;
    this.#windowStart = start;
  }

  get capacity(): number {
    return this.requests + this.burst;
  }

  #refill(now: number): void {
    const elapsed = Math.floor((now - this.#windowStart) / this.unitMs);
    if (elapsed > 0) {
      this.#tokens = Math.min(this.capacity, this.#tokens + elapsed * this.requests);
      this.#windowStart += elapsed * this.unitMs;
    }
  }

  /** Takes a token if one is left. Synchronous, so concurrent requests can never overdraw. */
  take(now = this.clock()): boolean {
    this.#refill(now);
    if (this.#tokens < 1) return false;
    this.#tokens--;
    return true;
  }

  /**
   * Gives back a token taken for a request that was then refused by another limit of the same
   * request: a request the gateway did not let through is not counted. Never above capacity.
   */
  giveBack(now = this.clock()): void {
    this.#refill(now);
    this.#tokens = Math.min(this.capacity, this.#tokens + 1);
  }

  /** Full: dropping it from a keyed table and making it again later gives nobody anything. */
  idle(now = this.clock()): boolean {
    this.#refill(now);
    return this.#tokens >= this.capacity;
  }

  remaining(now = this.clock()): number {
    this.#refill(now);
    return this.#tokens;
  }

  /** Whole seconds until the next refill. */
  resetSeconds(now = this.clock()): number {
    this.#refill(now);
    return Math.max(0, Math.ceil((this.#windowStart + this.unitMs - now) / 1000));
  }
}
