// A `tokens` entry: a budget of LLM tokens per fixed window of one unit. Usage is added after
// each response; the request whose usage crosses the budget has already succeeded, and later
// requests in the window are refused until the window resets by itself (spec §3.1).
import type { Clock } from '../clock.js';

export class TokenWindow {
  #used = 0;
  #windowStart: number;

  constructor(
    readonly tokens: number,
    readonly unitMs: number,
    private readonly clock: Clock,
  ) {
    this.#windowStart = clock();
  }

  #roll(now: number): void {
    const elapsed = Math.floor((now - this.#windowStart) / this.unitMs);
    if (elapsed > 0) {
      this.#used = 0;
      this.#windowStart += elapsed * this.unitMs;
    }
  }

  /** Within budget while usage is at or below the limit. */
  admits(now = this.clock()): boolean {
    this.#roll(now);
    return this.#used <= this.tokens;
  }

  add(tokens: number, now = this.clock()): void {
    this.#roll(now);
    this.#used += tokens;
  }

  used(now = this.clock()): number {
    this.#roll(now);
    return this.#used;
  }

  remaining(now = this.clock()): number {
    return Math.max(0, this.tokens - this.used(now));
  }

  resetSeconds(now = this.clock()): number {
    this.#roll(now);
    return Math.max(0, Math.ceil((this.#windowStart + this.unitMs - now) / 1000));
  }
}
