// The limit of each key value of a keyed local entry: its override, else the entry's own amount
// (the default, also the limit of the overflow budget and of the empty key without an
// override). Built once per config; the budgets (./keyed-table.ts) outlive it.
export class KeyLimits<L> {
  readonly #overrides: ReadonlyMap<string, L>;

  constructor(
    readonly fallback: L,
    overrides: Iterable<readonly [string, L]> = [],
  ) {
    this.#overrides = new Map(overrides);
  }

  of(key: string): L {
    return this.#overrides.get(key) ?? this.fallback;
  }
}
