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
import type { Clock } from '../clock.js';

export class TokenWindow {
  #used = 0;
  #reserved = 0;
  /** Requests holding a reservation here, whichever window: released or settled, each once. */
  #holds = 0;
  #windowStart: number;

  constructor(
    readonly unitMs: number,
    private readonly clock: Clock,
    /** The first window's start: the creation, a UTC midnight for Days, the window of its keyed table. */
    start = clock(),
  ) {
    this.#windowStart = start;
  }

  #roll(now: number): void {
    const elapsed = Math.floor((now - this.#windowStart) / this.unitMs);
    if (elapsed > 0) {
      this.#used = 0;
      this.#reserved = 0;
      this.#windowStart += elapsed * this.unitMs;
    }
  }

  /** Within budget while usage plus reservations is at or below the limit. */
  admits(tokens: number, now = this.clock()): boolean {
    this.#roll(now);
    return this.#used + this.#reserved <= tokens;
  }

  /**
   * Holds `amount` tokens for an admitted request; returns the start of the window it is held
   * in, which identifies the reservation to `release` and `settle`.
   */
  reserve(amount: number, now = this.clock()): number {
    this.#roll(now);
    this.#reserved += amount;
    this.#holds++;
    return this.#windowStart;
  }

  /** Gives a reservation back without charging anything (refused or failed request). */
  release(amount: number, reservedIn: number, now = this.clock()): void {
    this.#roll(now);
    if (reservedIn === this.#windowStart) this.#reserved = Math.max(0, this.#reserved - amount);
    this.#holds = Math.max(0, this.#holds - 1);
  }

  /**
   * Nothing used in the current window and no request in flight that will charge it: dropping
   * it from a keyed table and making it again later gives nobody anything. A request admitted
   * in an earlier window still holds it, since its usage is charged where its response ends.
   */
  idle(_tokens: number, now = this.clock()): boolean {
    this.#roll(now);
    return this.#used === 0 && this.#holds === 0;
  }

  /** Replaces a reservation with the usage the response reported (or was estimated at). */
  settle(amount: number, reservedIn: number, tokens: number, now = this.clock()): void {
    this.release(amount, reservedIn, now);
    this.#used += tokens;
  }

  used(now = this.clock()): number {
    this.#roll(now);
    return this.#used;
  }

  reserved(now = this.clock()): number {
    this.#roll(now);
    return this.#reserved;
  }

  /** Tokens left for new requests: the budget minus usage and reservations. */
  remaining(tokens: number, now = this.clock()): number {
    this.#roll(now);
    return Math.max(0, tokens - this.#used - this.#reserved);
  }

  resetSeconds(now = this.clock()): number {
    this.#roll(now);
    return Math.max(0, Math.ceil((this.#windowStart + this.unitMs - now) / 1000));
  }
}
