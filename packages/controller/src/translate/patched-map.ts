// A map in key order made from another by a few keys set or removed, without copying it. The
// maps of the routes by key (./key-order.ts) and of their status (./routes-part.ts) are made
// again for every route added among thousands, and a JavaScript Map keeps the order of
// insertion, so each was built anew in key order: thousands of entries hashed before the
// snapshot could go out. A patched map holds a whole map (its base, in key order) and the keys
// changed since; a lookup looks at the changes, then the base; the entries in key order are
// merged the first time they are walked (a reader after the snapshot went out: the status
// writer, a test). Patching a patched map starts from its base with both sets of changes, so no
// map holds the one before it, and past MAX_CHANGES changes the map is made whole again.

import { compareStrings } from './keys.js';

/** The most changes a patched map holds over its base; past them it is made whole (once per so many changes). */
export const MAX_CHANGES = 256;

const GONE: unique symbol = Symbol('removed');
type Change<V> = V | typeof GONE;

class PatchedMap<V> implements ReadonlyMap<string, V> {
  #whole: ReadonlyMap<string, V> | undefined;

  constructor(
    /** A map in key order, never a PatchedMap. */
    readonly base: ReadonlyMap<string, V>,
    /** The keys set (a value) or removed (GONE) since the base. */
    readonly changes: ReadonlyMap<string, Change<V>>,
    readonly size: number,
  ) {}

  get(key: string): V | undefined {
    const c = this.changes.get(key);
    if (c === undefined) return this.changes.has(key) ? undefined : this.base.get(key);
    return c === GONE ? undefined : c;
  }

  has(key: string): boolean {
    const c = this.changes.get(key);
    if (c === undefined && !this.changes.has(key)) return this.base.has(key);
    return c !== GONE;
  }

  /** The entries in key order: the base's and the changes' merged, once. */
  whole(): ReadonlyMap<string, V> {
    if (this.#whole) return this.#whole;
    const keys = [...this.changes.keys()].sort(compareStrings);
    const out = new Map<string, V>();
    let k = 0;
    for (const [key, value] of this.base) {
      for (; k < keys.length && compareStrings(keys[k]!, key) < 0; k++) put(out, keys[k]!, this.changes.get(keys[k]!)!);
      if (k < keys.length && keys[k] === key) put(out, key, this.changes.get(keys[k++]!)!);
      else out.set(key, value);
    }
    for (; k < keys.length; k++) put(out, keys[k]!, this.changes.get(keys[k]!)!);
    return (this.#whole = out);
  }

  entries(): MapIterator<[string, V]> {
    return this.whole().entries();
  }

  keys(): MapIterator<string> {
    return this.whole().keys();
  }

  values(): MapIterator<V> {
    return this.whole().values();
  }

  [Symbol.iterator](): MapIterator<[string, V]> {
    return this.whole().entries();
  }

  forEach(callback: (value: V, key: string, map: ReadonlyMap<string, V>) => void, thisArg?: unknown): void {
    for (const [key, value] of this.whole()) callback.call(thisArg, value, key, this);
  }

  get [Symbol.toStringTag](): string {
    return 'Map';
  }
}

function put<V>(out: Map<string, V>, key: string, c: Change<V>): void {
  if (c !== GONE) out.set(key, c);
}

/**
 * `before` (a map in key order) with the keys of `set` given their values and those of
 * `removed` taken out (a key in both is set), in key order; never changes `before`.
 */
export function patchedMap<V>(before: ReadonlyMap<string, V>, set: Iterable<readonly [string, V]>, removed: Iterable<string> = []): ReadonlyMap<string, V> {
  const patched = before instanceof PatchedMap ? (before as PatchedMap<V>) : null;
  const base = patched ? patched.base : before;
  const changes = new Map<string, Change<V>>(patched?.changes);
  // Whether a key is in the map as patched so far (the changes start as `before`'s own).
  const present = (key: string): boolean => (changes.has(key) ? changes.get(key) !== GONE : base.has(key));
  let size = before.size;
  for (const key of removed) {
    if (present(key)) size--;
    changes.set(key, GONE);
  }
  for (const [key, value] of set) {
    if (!present(key)) size++;
    changes.set(key, value);
  }
  const out = new PatchedMap(base, changes, size);
  return changes.size > MAX_CHANGES ? out.whole() : out;
}
