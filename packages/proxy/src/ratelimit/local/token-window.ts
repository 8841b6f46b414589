// A `tokens` entry: a budget of LLM tokens per fixed window of one unit (spec §3.1). A request
// is admitted while the window is within budget (usage plus reservations at or below it); on
// admission it reserves what it may spend (prompt estimate plus max_tokens when set), and when
// its response completes the reservation is replaced by the usage it reported. The request
// whose usage crosses the budget has already succeeded; later requests in the window are
// refused until the window resets by itself.
//
// A reservation belongs to the window it was made in: when the window rolls, reservations
// still held vanish with it, and a request admitted in the old window charges its usage to the
// window its response completes in (as before reservations existed). So a reservation never
// outlives one window, even if its request is never settled.
//
// The window keeps usage and reservations; the budget is given to each check (`admits`,
// `remaining`), so a config that changes the budget keeps what the window has used.
//
// Reservations and holds are kept per worker thread (./state-record.ts): a thread only ever
// releases or settles its own, and `releaseWorkerColumns` gives back those of a thread that died
// (its requests will never settle). The window is within budget while usage plus every
// worker's reservations is at or below it.
import type { Clock } from '../clock.js';
import { fieldsOf, type StateRecord } from './state-record.js';

// The fields of a window's record: its start, its usage, then one reservations column and one
// holds column per worker.
const START = 0;
const USED = 1;
const RESERVED = 2;

/** Gives back what worker `w` reserved and holds in the window at `at` (the worker died: its requests will never settle). */
export function releaseWorkerColumns(f64: Float64Array, at: number, workers: number, w: number): void {
  f64[at + RESERVED + w] = 0;
  f64[at + RESERVED + workers + w] = 0;
}

export class TokenWindow {
  /** The fields of a window's record. */
  static slots(workers: number): number {
    return RESERVED + 2 * workers;
  }

  readonly #f: Float64Array;
  /** This worker's reservations column. */
  readonly #mine: number;
  /** This worker's holds column: requests holding a reservation here, whichever window; released or settled, each once. */
  readonly #myHolds: number;
  readonly #workers: number;

  /**
   * `start`: the first window's start (the creation, a UTC midnight for Days, the window of its
   * keyed table), for a new window. Without it the window is a view of a record that already
   * holds one (another thread's, in shared mode).
   */
  constructor(
    readonly unitMs: number,
    private readonly clock: Clock,
    record: StateRecord,
    start?: number,
  ) {
    this.#f = fieldsOf(record, TokenWindow.slots(record.workers));
    this.#workers = record.workers;
    this.#mine = RESERVED + record.worker;
    this.#myHolds = this.#mine + record.workers;
    if (start !== undefined) {
      this.#f.fill(0);
      this.#f[START] = start;
    }
  }

  #roll(now: number): void {
    const f = this.#f;
    const start = f[START]!;
    // Still in the window (nearly every call): a comparison, not a division.
    if (now - start < this.unitMs) return;
    const elapsed = Math.floor((now - start) / this.unitMs);
    if (elapsed > 0) {
      f[USED] = 0;
      f.fill(0, RESERVED, RESERVED + this.#workers);
      f[START] = start + elapsed * this.unitMs;
    }
  }

  /** Every worker's reservations in the current window. */
  #reserved(): number {
    const f = this.#f;
    const workers = this.#workers;
    // One column: local mode, on every check.
    if (workers === 1) return f[RESERVED]!;
    let sum = 0;
    for (let i = RESERVED, end = RESERVED + workers; i < end; i++) sum += f[i]!;
    return sum;
  }

  /** Within budget while usage plus reservations is at or below the limit. */
  admits(tokens: number, now = this.clock()): boolean {
    this.#roll(now);
    return this.#f[USED]! + this.#reserved() <= tokens;
  }

  /**
   * Holds `amount` tokens for an admitted request; returns the start of the window it is held
   * in, which identifies the reservation to `release` and `settle`.
   */
  reserve(amount: number, now = this.clock()): number {
    this.#roll(now);
    this.#f[this.#mine]! += amount;
    this.#f[this.#myHolds]!++;
    return this.#f[START]!;
  }

  /** Gives a reservation back without charging anything (refused or failed request). */
  release(amount: number, reservedIn: number, now = this.clock()): void {
    this.#roll(now);
    const f = this.#f;
    if (reservedIn === f[START]) f[this.#mine] = Math.max(0, f[this.#mine]! - amount);
    f[this.#myHolds] = Math.max(0, f[this.#myHolds]! - 1);
  }

  /**
   * Nothing used in the current window and no request in flight that will charge it: dropping
   * it from a keyed table and making it again later gives nobody anything. A request admitted
   * in an earlier window still holds it, since its usage is charged where its response ends.
   */
  idle(_tokens: number, now = this.clock()): boolean {
    this.#roll(now);
    const f = this.#f;
    if (f[USED] !== 0) return false;
    for (let i = RESERVED + this.#workers, end = i + this.#workers; i < end; i++) if (f[i] !== 0) return false;
    return true;
  }

  /** Replaces a reservation with the usage the response reported (or was estimated at). */
  settle(amount: number, reservedIn: number, tokens: number, now = this.clock()): void {
    this.release(amount, reservedIn, now);
    this.#f[USED]! += tokens;
  }

  used(now = this.clock()): number {
    this.#roll(now);
    return this.#f[USED]!;
  }

  reserved(now = this.clock()): number {
    this.#roll(now);
    return this.#reserved();
  }

  /** Tokens left for new requests: the budget minus usage and reservations. */
  remaining(tokens: number, now = this.clock()): number {
    this.#roll(now);
    return Math.max(0, tokens - this.#f[USED]! - this.#reserved());
  }

  resetSeconds(now = this.clock()): number {
    this.#roll(now);
    return Math.max(0, Math.ceil((this.#f[START]! + this.unitMs - now) / 1000));
  }
}
