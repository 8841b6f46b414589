// A map in key order made from another by a few keys set or removed, without copying it. The
// maps of the routes by key (./key-order.ts) and of their status (./routes-part.ts) are made
// again for every route added among thousands, and a JavaScript Map keeps the order of
// insertion, so each was built anew in key order: thousands of entries hashed before the
// snapshot could go out. A patched map holds its entries in key order in chunks of about CHUNK;
// a patch copies the list of chunks and the chunks it changes, and shares the others with the
// map before, which stays as it was. A lookup is a binary search (chunk, then key). No map holds
// an entry the one it was made from had and it has not (a deleted route, the object an edit
// replaced): those go with the maps before.

import { firstIndex } from '@tollgate/api';
import { compareStrings } from './keys.js';

/** Entries per chunk as made from a whole map; a chunk that grows to twice this is split. */
export const CHUNK = 64;

interface Chunk<V> {
  /** Sorted (compareStrings), never empty; changed only by the patch that made the chunk. */
  readonly keys: string[];
  readonly values: V[];
}

class PatchedMap<V> implements ReadonlyMap<string, V> {
  #whole: ReadonlyMap<string, V> | undefined;

  constructor(
    readonly chunks: readonly Chunk<V>[],
    readonly size: number,
  ) {}

  static of<V>(map: ReadonlyMap<string, V>): PatchedMap<V> {
    if (map instanceof PatchedMap) return map as PatchedMap<V>;
    const chunks: Chunk<V>[] = [];
    let c: Chunk<V> | undefined;
    for (const [key, value] of map) {
      if (!c || c.keys.length === CHUNK) chunks.push((c = { keys: [], values: [] }));
      c.keys.push(key);
      c.values.push(value);
    }
    return new PatchedMap(chunks, map.size);
  }

  get(key: string): V | undefined {
    const c = this.chunks[chunkOf(this.chunks, key)];
    if (!c) return undefined;
    const at = keyIndex(c.keys, key);
    return c.keys[at] === key ? c.values[at] : undefined;
  }

  has(key: string): boolean {
    const c = this.chunks[chunkOf(this.chunks, key)];
    return c !== undefined && c.keys[keyIndex(c.keys, key)] === key;
  }

  /** The entries as a Map in key order, made the first time they are walked. */
  whole(): ReadonlyMap<string, V> {
    if (this.#whole) return this.#whole;
    const out = new Map<string, V>();
    for (const c of this.chunks) for (let i = 0; i < c.keys.length; i++) out.set(c.keys[i]!, c.values[i]!);
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

/** The chunk a key is in or goes to: the last whose first key does not sort after it (0 before them all). */
function chunkOf<V>(chunks: readonly Chunk<V>[], key: string): number {
  return Math.max(0, firstIndex(chunks.length, (i) => compareStrings(chunks[i]!.keys[0]!, key) <= 0) - 1);
}

/** Where a key is or goes in a chunk's sorted keys. */
function keyIndex(keys: readonly string[], key: string): number {
  return firstIndex(keys.length, (i) => compareStrings(keys[i]!, key) < 0);
}

/**
 * `before` (a map in key order) with the keys of `set` given their values and those of
 * `removed` taken out (a key in both is set), in key order; never changes `before`.
 */
export function patchedMap<V>(before: ReadonlyMap<string, V>, set: Iterable<readonly [string, V]>, removed: Iterable<string> = []): ReadonlyMap<string, V> {
  const from = PatchedMap.of(before);
  const chunks = from.chunks.slice();
  // The chunks this patch made: changed in place until it returns.
  const own = new Set<Chunk<V>>();
  const owned = (i: number): Chunk<V> => {
    let c = chunks[i]!;
    if (!own.has(c)) own.add((c = chunks[i] = { keys: c.keys.slice(), values: c.values.slice() }));
    return c;
  };
  let size = from.size;
  for (const key of removed) {
    const i = chunkOf(chunks, key);
    const c = chunks[i];
    const at = c ? keyIndex(c.keys, key) : -1;
    if (!c || c.keys[at] !== key) continue;
    const mine = owned(i);
    mine.keys.splice(at, 1);
    mine.values.splice(at, 1);
    size--;
    if (!mine.keys.length) chunks.splice(i, 1);
  }
  for (const [key, value] of set) {
    if (!chunks.length) {
      const c = { keys: [key], values: [value] };
      own.add(c);
      chunks.push(c);
      size++;
      continue;
    }
    const i = chunkOf(chunks, key);
    const c = owned(i);
    const at = keyIndex(c.keys, key);
    if (c.keys[at] === key) {
      c.values[at] = value;
      continue;
    }
    c.keys.splice(at, 0, key);
    c.values.splice(at, 0, value);
    size++;
    if (c.keys.length >= 2 * CHUNK) {
      const half = c.keys.length >> 1;
      const second = { keys: c.keys.splice(half), values: c.values.splice(half) };
      own.add(second);
      chunks.splice(i + 1, 0, second);
    }
  }
  return new PatchedMap(chunks, size);
}
