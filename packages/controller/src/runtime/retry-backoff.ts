// One retry schedule for work that fails against the API server (a deployer pass, a status
// pass, a read at start, a list and watch): after each failure the next attempt comes after a
// delay that doubles from `initialMs` to `maxMs`; a success resets it. At most one attempt is
// scheduled at a time.
export interface RetryOptions {
  readonly initialMs: number;
  readonly maxMs: number;
  /**
   * Spread of each wait around its delay, as a fraction (0.2: 80 % to 120 % of it), so that
   * many watches failing at once do not all come back at the same instant. None by default.
   */
  readonly jitter?: number;
}

export class RetryBackoff {
  #delayMs = 0;
  #timer: NodeJS.Timeout | undefined;

  constructor(private readonly o: RetryOptions) {}

  /** Schedules `attempt` after the next delay (replacing one scheduled); returns the delay (before jitter). */
  failed(attempt: () => void): number {
    this.cancel();
    this.#delayMs = this.#delayMs ? Math.min(this.#delayMs * 2, this.o.maxMs) : this.o.initialMs;
    const jitter = this.o.jitter ?? 0;
    const waitMs = jitter ? this.#delayMs * (1 - jitter + Math.random() * 2 * jitter) : this.#delayMs;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      attempt();
    }, waitMs);
    this.#timer.unref();
    return this.#delayMs;
  }

  /** True while an attempt is scheduled. */
  get pending(): boolean {
    return this.#timer !== undefined;
  }

  /** The work succeeded: the next failure waits `initialMs` again. */
  succeeded(): void {
    this.#delayMs = 0;
  }

  /** Drops the scheduled attempt (the work runs now for another reason, or stops). */
  cancel(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }
}
