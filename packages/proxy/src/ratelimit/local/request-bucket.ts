// A `requests` entry: a token bucket of capacity requests + burst, refilled with `requests`
// tokens at each unit boundary (counted from `start`: the bucket's creation, a UTC midnight for
// Days, the window of its table for a keyed limit's), never above capacity.
// Each admitted request takes one token; with none left the request is refused. A request
// refused later by another limit gets its token back.
//
// The bucket keeps what has been taken (not what is left) and is given its limit at every call:
// the limit is the config's, the usage the bucket's, so a config that raises or lowers the
// limit keeps what was used (docs/rate-limiting.md, "Changing a budget at runtime"): raised,
// the key has the difference left at once; lowered under what was used, it is refused at once.
import type { Clock } from '../clock.js';
import { fieldsOf, type StateRecord } from './state-record.js';

/** A bucket's size: `requests` a unit, `burst` more at once. */
export interface BucketLimit {
  readonly requests: number;
  readonly burst: number;
}

// The fields of a bucket's record.
const START = 0;
/** Tokens taken and not yet refilled: capacity minus what is left, for any capacity. */
const TAKEN = 1;

export class RequestBucket {
  /** The fields of a bucket's record, whatever the number of workers. */
  static slots(): number {
    return 2;
  }

  readonly #f: Float64Array;

  /**
   * `start`: the first window's start, for a new bucket (its record is zeroed). Without it the
   * bucket is a view of a record that already holds a bucket (another thread's, in shared mode).
   */
  constructor(
    readonly unitMs: number,
    private readonly clock: Clock,
    record: StateRecord,
    start?: number,
  ) {
    this.#f = fieldsOf(record, RequestBucket.slots());
    if (start !== undefined) {
      this.#f[START] = start;
      this.#f[TAKEN] = 0;
    }
  }

  #refill(limit: BucketLimit, now: number): void {
    const f = this.#f;
    const start = f[START]!;
    // Still in the window (nearly every call): a comparison, not a division.
    if (now - start < this.unitMs) return;
    const elapsed = Math.floor((now - start) / this.unitMs);
    if (elapsed > 0) {
      // A limit lowered under what was taken leaves nothing now, and `requests` at the boundary.
      f[TAKEN] = Math.max(0, Math.min(f[TAKEN]!, limit.requests + limit.burst) - elapsed * limit.requests);
      f[START] = start + elapsed * this.unitMs;
    }
  }

  /** Takes a token if one is left. Synchronous (and under the memory's lock), so concurrent requests can never overdraw. */
  take(limit: BucketLimit, now = this.clock()): boolean {
    if (this.remaining(limit, now) < 1) return false;
    this.#f[TAKEN]!++;
    return true;
  }

  /**
   * Gives back a token taken for a request that was then refused by another limit of the same
   * request: a request the gateway did not let through is not counted. Never above capacity.
   */
  giveBack(limit: BucketLimit, now = this.clock()): void {
    this.#refill(limit, now);
    this.#f[TAKEN] = Math.max(0, this.#f[TAKEN]! - 1);
  }

  /** Full: dropping it from a keyed table and making it again later gives nobody anything. */
  idle(limit: BucketLimit, now = this.clock()): boolean {
    this.#refill(limit, now);
    return this.#f[TAKEN] === 0;
  }

  remaining(limit: BucketLimit, now = this.clock()): number {
    this.#refill(limit, now);
    return Math.max(0, limit.requests + limit.burst - this.#f[TAKEN]!);
  }

  /** Whole seconds until the next refill. */
  resetSeconds(now = this.clock()): number {
    const windowStart = this.#f[START]!;
    const start = windowStart + Math.max(0, Math.floor((now - windowStart) / this.unitMs)) * this.unitMs;
    return Math.max(0, Math.ceil((start + this.unitMs - now) / 1000));
  }
}
