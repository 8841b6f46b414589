// Values keyed by hostname, looked up by request host most specific first: the precise name,
// then wildcards from the longest suffix to the shortest, then the catch-all. Each step is a
// map lookup, so the cost depends on the host's label count, not on how many names exist.
import { isWildcard, wildcardSuffix } from './hostname.js';

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

  /** The value kept for a hostname (null: any host), if any. */
  get(hostname: string | null): T | undefined {
    if (hostname === null) return this.#any;
    return isWildcard(hostname) ? this.#wildcard.get(wildcardSuffix(hostname)) : this.#exact.get(hostname);
  }

  delete(hostname: string | null): void {
    if (hostname === null) this.#any = undefined;
    else if (isWildcard(hostname)) this.#wildcard.delete(wildcardSuffix(hostname));
    else this.#exact.delete(hostname);
  }

  get size(): number {
    return this.#exact.size + this.#wildcard.size + (this.#any === undefined ? 0 : 1);
  }

  /**
   * The first value serving `host`, most specific first, for which `accept` returns a result
   * (plain loops, no generator: this runs on every request).
   */
  find<R>(host: string, accept: (v: T) => R | null): R | null {
    const exact = this.#exact.get(host);
    if (exact !== undefined) {
      const r = accept(exact);
      if (r !== null) return r;
    }
    if (this.#wildcard.size) {
      for (let i = host.indexOf('.'); i >= 0; i = host.indexOf('.', i + 1)) {
        const v = this.#wildcard.get(host.slice(i));
        if (v !== undefined) {
          const r = accept(v);
          if (r !== null) return r;
        }
      }
    }
    return this.#any !== undefined ? accept(this.#any) : null;
  }

  first(host: string): T | undefined {
    return this.find(host, (v) => v) ?? undefined;
  }

  values(): T[] {
    return [...this.#exact.values(), ...this.#wildcard.values(), ...(this.#any === undefined ? [] : [this.#any])];
  }
}
