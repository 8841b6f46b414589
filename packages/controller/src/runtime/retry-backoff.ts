// One retry schedule for work that fails against the API server (a deployer pass, a status
// pass, a read at start): after each failure the next attempt comes after a delay that doubles
// from `initialMs` to `maxMs`; a success resets it. At most one attempt is scheduled at a time.
export interface RetryOptions {
  readonly initialMs: number;
  readonly maxMs: number;
}

export class RetryBackoff {
  #delayMs = 0;
  #timer: NodeJS.Timeout | undefined;

  constructor(private readonly o: RetryOptions) {}

  /** Schedules `attempt` after the next delay (replacing one scheduled); returns the delay. */
  failed(attempt: () => void): number {
    this.cancel();
    this.#delayMs = this.#delayMs ? Math.min(this.#delayMs * 2, this.o.maxMs) : this.o.initialMs;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      attempt();
    }, this.#delayMs);
    this.#timer.unref();
    return this.#delayMs;
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
