// A keyed entry's key table in shared mode (the rules are ./keyed-table.ts's): one
// SharedArrayBuffer every worker thread reads and writes under the memory's lock.
//
// Records (a key and its state) never move once placed, since a request in flight holds the
// state it met by its place: a record is taken from a free list or the next never-used one, and
// freed when its key is swept. The keys are found through an open-addressing index (linear
// probing, at most half full) of record numbers; a sweep deletes with backward shift, which
// moves index slots only, so lookups stay correct with no tombstones to clean up.
//
// A request bucket has no holds count (as in the Map table): once its window refilled it, a key
// may be swept while a request that took its token is still in flight. Should that request then
// be refunded (another limit refused it), the Map table gives the token back to an orphaned
// bucket, this table to whatever key took the record since: at most one request more for that
// key, and only for a refund that crosses a window's end while the table is full.
//
// Memory: the buffer is sized for maxKeys records at creation. A SharedArrayBuffer is zeroed
// memory the OS hands out page by page on first touch, so the figure below is address space
// (virtual); what is resident grows with the keys in use, since records are taken in order. For
// 100,000 keys: 256 B of key (128 UTF-16 code units), 12 B of hash, length and free-list link
// and 8 B per state field (2 for requests; 2 + 2 per worker for tokens: 18 with 8 workers) a
// record, plus a 1 MiB index: about 30 MB virtual for requests, 42 MB for tokens with 8 workers,
// per keyed entry, none of it resident when made (measured: ten such tables, 0 MB of RSS).
// Resident: the index (touched all over by hashing, up to 1 MiB) and ~0.3-0.4 KB per key in use.
import type { LocalRateLimitUnit } from '@tollgate/api';
import { MAX_KEY_LENGTH } from '../key.js';
import type { KeyLimits } from './key-limits.js';
import { unitMs, type KeyState, type KeyTable } from './keyed-table.js';
import type { StateRecord } from './state-record.js';
import { releaseWorkerColumns } from './token-window.js';

// Int32 header fields.
const MAX_KEYS = 0;
const CAPACITY = 1;
const SLOTS = 2;
const WORKERS = 3;
const SIZE = 4;
/** Records 1..NEXT_UNUSED-1 have been used; the rest are still untouched zeroed memory. */
const NEXT_UNUSED = 5;
/** The first free record (freed by a sweep), 0 for none: record 0 is the overflow budget's, never freed. */
const FREE_HEAD = 6;
// Float64 header fields (bytes 32..47).
const ORIGIN = 4;
/** The window index of the last sweep: one sweep per window at most. */
const SWEPT = 5;
const HEADER_BYTES = 64;
const KEY_UNITS = MAX_KEY_LENGTH;
/** An empty index slot; a used one holds its record's number (never 0: the overflow record is not indexed). */
const EMPTY = 0;

interface Layout {
  readonly records: number;
  readonly capacity: number;
  readonly slots: number;
  readonly statesAt: number;
  readonly indexAt: number;
  readonly hashesAt: number;
  readonly lengthsAt: number;
  readonly linksAt: number;
  readonly keysAt: number;
  readonly bytes: number;
}

function layoutOf(maxKeys: number, slots: number): Layout {
  const records = maxKeys + 1;
  let capacity = 8;
  while (capacity < 2 * maxKeys) capacity *= 2;
  const statesAt = HEADER_BYTES;
  const indexAt = statesAt + records * slots * 8;
  const hashesAt = indexAt + capacity * 4;
  const lengthsAt = hashesAt + records * 4;
  const linksAt = lengthsAt + records * 4;
  const keysAt = linksAt + records * 4;
  return { records, capacity, slots, statesAt, indexAt, hashesAt, lengthsAt, linksAt, keysAt, bytes: keysAt + records * KEY_UNITS * 2 };
}

/** FNV-1a over the UTF-16 code units, then murmur3's finaliser so the low bits (the home slot) mix well. */
function hashKey(key: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193);
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return (h ^ (h >>> 16)) | 0;
}

/** The views of one table's buffer. */
class Views {
  readonly i32: Int32Array;
  readonly f64: Float64Array;
  readonly states: Float64Array;
  readonly index: Int32Array;
  readonly hashes: Int32Array;
  readonly lengths: Int32Array;
  readonly links: Int32Array;
  readonly keys: Uint16Array;
  readonly layout: Layout;

  constructor(readonly buffer: SharedArrayBuffer) {
    this.i32 = new Int32Array(buffer, 0, 8);
    this.f64 = new Float64Array(buffer, 0, HEADER_BYTES / 8);
    const l = (this.layout = layoutOf(this.i32[MAX_KEYS]!, this.i32[SLOTS]!));
    this.states = new Float64Array(buffer, l.statesAt, l.records * l.slots);
    this.index = new Int32Array(buffer, l.indexAt, l.capacity);
    this.hashes = new Int32Array(buffer, l.hashesAt, l.records);
    this.lengths = new Int32Array(buffer, l.lengthsAt, l.records);
    this.links = new Int32Array(buffer, l.linksAt, l.records);
    this.keys = new Uint16Array(buffer, l.keysAt, l.records * KEY_UNITS);
  }
}

/** Places a state on record `r` of a table's buffer (`start` for a new one). */
export type PlaceState<S> = (record: StateRecord, start?: number) => S;

export class SharedKeyedTable<L, S extends KeyState<L>> implements KeyTable<L, S> {
  readonly #v: Views;
  readonly #unitMs: number;
  readonly #worker: number;
  /** This thread's view of each record's state, made on first use (a view holds no state of its own). */
  readonly #states: (S | undefined)[] = [];
  readonly maxKeys: number;
  readonly overflow: S;

  /** A new table's buffer, its overflow budget's first window starting at `origin`. The leader makes it, before any thread uses it. */
  static create(maxKeys: number, slots: number, workers: number, origin: number): SharedArrayBuffer {
    const l = layoutOf(maxKeys, slots);
    const buffer = new SharedArrayBuffer(l.bytes);
    const i32 = new Int32Array(buffer, 0, 8);
    i32[MAX_KEYS] = maxKeys;
    i32[CAPACITY] = l.capacity;
    i32[SLOTS] = slots;
    i32[WORKERS] = workers;
    i32[NEXT_UNUSED] = 1;
    const f64 = new Float64Array(buffer, 0, HEADER_BYTES / 8);
    f64[ORIGIN] = origin;
    f64[SWEPT] = -1;
    return buffer;
  }

  /** Zeroes worker `w`'s reservations and holds in every record of a tokens table's buffer (under the lock). */
  static releaseWorker(buffer: SharedArrayBuffer, w: number): void {
    const v = new Views(buffer);
    const workers = v.i32[WORKERS]!;
    const slots = v.layout.slots;
    for (let r = 0, end = v.i32[NEXT_UNUSED]!; r < end; r++) releaseWorkerColumns(v.states, r * slots, workers, w);
  }

  /**
   * A thread's view of a table made by `create`. `fresh`: this thread made it (the overflow
   * record gets its first window); else another did.
   */
  constructor(
    buffer: SharedArrayBuffer,
    unit: LocalRateLimitUnit,
    worker: number,
    private readonly place: PlaceState<S>,
    private readonly overflowed: () => void,
    fresh: boolean,
  ) {
    this.#v = new Views(buffer);
    this.#unitMs = unitMs(unit);
    this.#worker = worker;
    this.maxKeys = this.#v.i32[MAX_KEYS]!;
    this.overflow = fresh ? this.#placed(0, this.#v.f64[ORIGIN]!) : this.#state(0);
  }

  get size(): number {
    return this.#v.i32[SIZE]!;
  }

  #record(r: number): StateRecord {
    return { f64: this.#v.states, at: r * this.#v.layout.slots, worker: this.#worker, workers: this.#v.i32[WORKERS]! };
  }

  #state(r: number): S {
    return (this.#states[r] ??= this.place(this.#record(r)));
  }

  /** A new state on record `r` (zeroed first: it may have been freed by a sweep). */
  #placed(r: number, start: number): S {
    const slots = this.#v.layout.slots;
    this.#v.states.fill(0, r * slots, (r + 1) * slots);
    const s = this.place(this.#record(r), start);
    this.#states[r] = s;
    return s;
  }

  #key(r: number): string {
    const at = r * KEY_UNITS;
    return String.fromCharCode(...this.#v.keys.subarray(at, at + this.#v.lengths[r]!));
  }

  #holds(r: number, key: string, hash: number): boolean {
    const v = this.#v;
    if (v.hashes[r] !== hash || v.lengths[r] !== key.length) return false;
    const at = r * KEY_UNITS;
    for (let i = 0; i < key.length; i++) if (v.keys[at + i] !== key.charCodeAt(i)) return false;
    return true;
  }

  *entries(): IterableIterator<[string, S]> {
    const index = this.#v.index;
    for (let i = 0; i < index.length; i++) {
      const r = index[i]!;
      if (r !== EMPTY) yield [this.#key(r), this.#state(r)];
    }
  }

  #window(now: number): number {
    return Math.floor((now - this.#v.f64[ORIGIN]!) / this.#unitMs);
  }

  get(key: string, now: number, limits: KeyLimits<L>): S {
    // key.ts bounds every key value; a longer one here would be a bug, not a client's doing.
    if (key.length > KEY_UNITS) throw new Error(`a rate limit key of ${key.length} characters (at most ${KEY_UNITS})`);
    const v = this.#v;
    const hash = hashKey(key);
    const mask = v.layout.capacity - 1;
    for (let i = hash & mask; ; i = (i + 1) & mask) {
      const r = v.index[i]!;
      if (r === EMPTY) break;
      if (this.#holds(r, key, hash)) return this.#state(r);
    }
    if (v.i32[SIZE]! >= this.maxKeys && !this.#sweep(now, limits)) {
      this.overflowed();
      return this.overflow;
    }
    const r = this.#take();
    const at = r * KEY_UNITS;
    for (let i = 0; i < key.length; i++) v.keys[at + i] = key.charCodeAt(i);
    v.lengths[r] = key.length;
    v.hashes[r] = hash;
    // Probed again: a sweep may have shifted the slots.
    let i = hash & mask;
    while (v.index[i] !== EMPTY) i = (i + 1) & mask;
    v.index[i] = r;
    v.i32[SIZE]!++;
    return this.#placed(r, v.f64[ORIGIN]! + this.#window(now) * this.#unitMs);
  }

  /** A record for a new key: a freed one, else the next never used. There is one: SIZE < maxKeys. */
  #take(): number {
    const v = this.#v;
    const free = v.i32[FREE_HEAD]!;
    if (free !== 0) {
      v.i32[FREE_HEAD] = v.links[free]!;
      return free;
    }
    return v.i32[NEXT_UNUSED]!++;
  }

  /** Drops the idle keys, once per window; whether there is room now. */
  #sweep(now: number, limits: KeyLimits<L>): boolean {
    const v = this.#v;
    const w = this.#window(now);
    if (w !== v.f64[SWEPT]) {
      v.f64[SWEPT] = w;
      const idle: number[] = [];
      for (const r of v.index) if (r !== EMPTY && this.#state(r).idle(limits.of(this.#key(r)), now)) idle.push(r);
      for (const r of idle) this.#remove(r);
    }
    return v.i32[SIZE]! < this.maxKeys;
  }

  /** Takes record `r` out of the index (backward shift: later keys of its probe run move up) and frees it. */
  #remove(r: number): void {
    const v = this.#v;
    const index = v.index;
    const mask = v.layout.capacity - 1;
    let hole = v.hashes[r]! & mask;
    while (index[hole] !== r) hole = (hole + 1) & mask;
    index[hole] = EMPTY;
    for (let j = (hole + 1) & mask; index[j] !== EMPTY; j = (j + 1) & mask) {
      const moved = index[j]!;
      const home = v.hashes[moved]! & mask;
      // `moved` stays where it is if its home is cyclically in (hole, j]: the hole is not on its probe path.
      const stays = hole <= j ? hole < home && home <= j : hole < home || home <= j;
      if (stays) continue;
      index[hole] = moved;
      index[j] = EMPTY;
      hole = j;
    }
    v.links[r] = v.i32[FREE_HEAD]!;
    v.i32[FREE_HEAD] = r;
    v.i32[SIZE]!--;
  }
}
