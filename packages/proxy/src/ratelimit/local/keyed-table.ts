// The budgets of a keyed local limit: one state (a request bucket or a token window) per key
// value, at most `maxKeys` of them (config.maxRateLimitKeys), all on the same windows.
//
// A client may send a new key value with every request, so the table is bounded; what it must
// not allow is a way around the limit. So:
// - a key whose budget is in use is never dropped: used in the current window (a bucket not
//   full, a window with usage), or held by a request in flight;
// - when the table is full, keys no longer in use are dropped, at most once per window (the
//   sweep costs a pass over the table; in use or not changes only at a window's end);
// - a new key that still finds no room shares one overflow budget with every other such key,
//   of the limit's size, so cycling key values spends that budget, never resets anyone's.
// Dropping an idle key loses nothing: its budget is what a new one would start with.
//
// The table keeps usage only; each key's limit (the entry's amount, or the key's override) is
// the config's and given with each call (./key-limits.ts), so a new config keeps the table.
//
// Two tables keep these rules (`KeyTable`): the Map below, for one thread (local mode), and
// ./shared-keyed-table.ts, in a SharedArrayBuffer every worker thread reads and writes under the
// memory's lock (shared mode).
import type { LocalRateLimitUnit } from '@tollgate/api';
import { UNIT_SECONDS } from '@tollgate/api';
import type { KeyLimits } from './key-limits.js';

export interface KeyState<L> {
  /** Equal to a new state under `limit`: nothing used in the current window, no request holding it. */
  idle(limit: L, now: number): boolean;
}

/** The budgets of a keyed entry's key values, whichever memory keeps them. */
export interface KeyTable<L, S extends KeyState<L>> {
  readonly maxKeys: number;
  /** The budget every key that finds the table full shares. */
  readonly overflow: S;
  readonly size: number;
  /** Every key and its state, for reading only (GET /budgets): iterating changes nothing. */
  entries(): IterableIterator<[string, S]>;
  /**
   * The state of `key`, made on first use; the overflow budget when the table has no room.
   * `limits`: the config's limit of each key, to tell which keys are idle.
   */
  get(key: string, now: number, limits: KeyLimits<L>): S;
}

const DAY_MS = 86_400_000;

export function unitMs(unit: LocalRateLimitUnit): number {
  return UNIT_SECONDS[unit] * 1000;
}

/**
 * Where a local limit's windows start. Days are fixed UTC days (midnight to midnight); the
 * shorter units count from the limit's creation, as they always have.
 */
export function windowOrigin(unit: LocalRateLimitUnit, now: number): number {
  return unit === 'Days' ? Math.floor(now / DAY_MS) * DAY_MS : now;
}

export class KeyedTable<L, S extends KeyState<L>> implements KeyTable<L, S> {
  readonly #states = new Map<string, S>();
  readonly #unitMs: number;
  /** The window index of the last sweep: one sweep per window at most. */
  #swept = -1;
  /** The budget every key that finds the table full shares. */
  readonly overflow: S;

  constructor(
    readonly maxKeys: number,
    unit: LocalRateLimitUnit,
    /** Start of the table's first window (windowOrigin). */
    private readonly origin: number,
    /** A new state whose first window starts at the given time. */
    private readonly make: (start: number) => S,
    /** Called each time a request is given the overflow budget. */
    private readonly overflowed: () => void,
  ) {
    this.#unitMs = unitMs(unit);
    this.overflow = make(origin);
  }

  get size(): number {
    return this.#states.size;
  }

  /** Every key and its state, for reading only (GET /budgets): iterating changes nothing. */
  entries(): IterableIterator<[string, S]> {
    return this.#states.entries();
  }

  #window(now: number): number {
    return Math.floor((now - this.origin) / this.#unitMs);
  }

  /**
   * The state of `key`, made on first use; the overflow budget when the table has no room.
   * `limits`: the config's limit of each key, to tell which keys are idle.
   */
  get(key: string, now: number, limits: KeyLimits<L>): S {
    const found = this.#states.get(key);
    if (found !== undefined) return found;
    if (this.#states.size >= this.maxKeys && !this.#sweep(now, limits)) {
      this.overflowed();
      return this.overflow;
    }
    const made = this.make(this.origin + this.#window(now) * this.#unitMs);
    this.#states.set(key, made);
    return made;
  }

  /** Drops the idle keys, once per window; whether there is room now. */
  #sweep(now: number, limits: KeyLimits<L>): boolean {
    const w = this.#window(now);
    if (w !== this.#swept) {
      this.#swept = w;
      for (const [key, state] of this.#states) if (state.idle(limits.of(key), now)) this.#states.delete(key);
    }
    return this.#states.size < this.maxKeys;
  }
}
