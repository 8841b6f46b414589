// Values keyed by hostname, looked up by request host most specific first: the precise name,
// then wildcards from the longest suffix to the shortest, then the catch-all. Each step is a
// map lookup, so the cost depends on the host's label count, not on how many names exist.
import { isWildcard, wildcardKeys, wildcardSuffix } from './hostname.js';

export class HostTable<T> {
  readonly #exact = new Map<string, T>();
  readonly #wildcard = new Map<string, T>();
  #any: T | undefined;

  /** The value for a hostname (null: any host), created by `make` on first use. */
  upsert(hostname: string | null, make: () => T): T {
    if (hostname === null) return (this.#any ??= make());
    const map = isWildcard(hostname) ? this.#wildcard : this.#exact;
    const key = isWildcard(hostname) ? wildcardSuffix(hostname) : hostname;
    let v = map.get(key);
    if (v === undefined) map.set(key, (v = make()));
    return v;
  }

  /** Every value serving `host`, most specific first. */
  *lookup(host: string): Generator<T> {
    const exact = this.#exact.get(host);
    if (exact !== undefined) yield exact;
    if (this.#wildcard.size) {
      for (const key of wildcardKeys(host)) {
        const v = this.#wildcard.get(key);
        if (v !== undefined) yield v;
      }
    }
    if (this.#any !== undefined) yield this.#any;
  }

  first(host: string): T | undefined {
    for (const v of this.lookup(host)) return v;
    return undefined;
  }

  values(): T[] {
    return [...this.#exact.values(), ...this.#wildcard.values(), ...(this.#any === undefined ? [] : [this.#any])];
  }
}
