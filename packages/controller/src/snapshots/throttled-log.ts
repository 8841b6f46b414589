// Warnings about what clients do (refused streams, limits reached) are logged at most once per
// interval for each kind: a client that retries in a loop must not fill the log. The lines left
// out are counted and the count is given with the next line of that kind; the metrics count
// every one.
import type { Logger } from 'pino';

export class ThrottledLog {
  readonly #last = new Map<string, { at: number; suppressed: number }>();

  constructor(
    private readonly log: Logger,
    private readonly intervalMs = 1000,
    private readonly now: () => number = Date.now,
  ) {}

  warn(kind: string, fields: Record<string, unknown>, message: string): void {
    const t = this.now();
    const last = this.#last.get(kind);
    if (last && t - last.at < this.intervalMs) {
      last.suppressed++;
      return;
    }
    this.log.warn(last?.suppressed ? { ...fields, suppressed: last.suppressed } : fields, last?.suppressed ? `${message} (${last.suppressed} more like it not logged)` : message);
    this.#last.set(kind, { at: t, suppressed: 0 });
  }
}
