// At most one warn line per interval for one recurring condition (a service down, a backend
// over-reporting its usage), with the count of the occurrences left unlogged in between: a
// condition a request can cause must not flood the log at the request rate.
export class WarnThrottle {
  #last = -Infinity;
  #suppressed = 0;
  constructor(
    private readonly intervalMs: number,
    private readonly now: () => number,
  ) {}

  /** Whether to log this occurrence at warn, and how many were suppressed since the last one. */
  take(): { log: boolean; suppressed: number } {
    const t = this.now();
    if (t - this.#last >= this.intervalMs) {
      this.#last = t;
      const suppressed = this.#suppressed;
      this.#suppressed = 0;
      return { log: true, suppressed };
    }
    this.#suppressed++;
    return { log: false, suppressed: 0 };
  }
}
