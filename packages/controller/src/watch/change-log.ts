// What changed in one kind's cache, for the status writer: a number that moves with every change,
// and the keys of the objects changed since any recent number. The status pass after a route edit
// then looks at the objects whose cached copy changed (its own writes coming back, someone else's
// edits) instead of reading every object of the kind.

/** Changes whose keys are kept: more than a burst of status writes between two passes. */
export const CHANGE_HISTORY = 8192;

export class ChangeLog {
  #count = 0;
  /** Each change's number and the key of its object, in order (at most `history`). */
  #log: { readonly n: number; readonly key: string }[] = [];
  /** Changes numbered up to this one are not all in #log. */
  #floor = 0;

  constructor(private readonly history = CHANGE_HISTORY) {}

  /** Moves with every change. */
  get count(): number {
    return this.#count;
  }

  /** An object changed (added, updated, deleted). */
  changed(key: string): void {
    const n = ++this.#count;
    this.#log.push({ n, key });
    if (this.#log.length > this.history) {
      // The older half goes: a reader whose last look is older is told nothing (null).
      const drop = this.#log.length - Math.floor(this.history / 2);
      this.#floor = this.#log[drop - 1]!.n;
      this.#log = this.#log.slice(drop);
    }
  }

  /** Anything may have changed (a list after a lost watch): what changed before is not told. */
  reset(): void {
    this.#floor = ++this.#count;
    this.#log = [];
  }

  /** The keys of the objects changed since `count` was `n`; null when that is not known (older than the history, or a reset since). */
  since(n: number): ReadonlySet<string> | null {
    if (n < this.#floor || n > this.#count) return null;
    const log = this.#log;
    // The first change numbered above n (numbers increase along the log).
    let lo = 0;
    let hi = log.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (log[mid]!.n <= n) lo = mid + 1;
      else hi = mid;
    }
    const keys = new Set<string>();
    for (let i = lo; i < log.length; i++) keys.add(log[i]!.key);
    return keys;
  }
}
