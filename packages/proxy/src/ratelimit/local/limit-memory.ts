// Where the local limits' state lives (the buckets, windows and key tables of a LimiterStore),
// chosen when the store is made:
// - ./local-memory.ts: this thread's objects, as a proxy on one thread has always kept them;
//   it has no lock.
// - ./shared-memory.ts: SharedArrayBuffers every worker thread of the proxy reads and writes
//   under one lock, so a limit of 5 admits 5 whatever the number of threads, with no message
//   between threads per request (a round trip costs more than a whole request).
//
// A memory keeps the state of each entry by the identity the store computes for it (LimiterStore
// .entry), across configs: what a new config still uses is kept, the rest dropped at `commit`.
import type { LocalRateLimitUnit } from '@tollgate/api';
import type { Clock } from '../clock.js';
import type { KeyState, KeyTable } from './keyed-table.js';
import { RequestBucket } from './request-bucket.js';
import type { StateRecord } from './state-record.js';
import { TokenWindow } from './token-window.js';

/** Held around every read or write of state: a check of several budgets is all-or-nothing. Never across an await. */
export interface Lock {
  acquire(): void;
  release(): void;
}

/** Runs `f` holding `lock`. Callers with no lock (one thread) call their work directly: no closure on that path. */
export function underLock<T>(lock: Lock, f: () => T): T {
  lock.acquire();
  try {
    return f();
  } finally {
    lock.release();
  }
}

/** A kind of state: how many fields its record has, and how to place one on a record. */
export interface StateType<S> {
  readonly kind: 'requests' | 'tokens';
  slots(workers: number): number;
  /** `start` for a new state (its record zeroed); without it, a view of a record that holds one. */
  make(unitMs: number, clock: Clock, record: StateRecord, start?: number): S;
}

export const BUCKET: StateType<RequestBucket> = {
  kind: 'requests',
  slots: () => RequestBucket.slots(),
  make: (unitMs, clock, record, start) => new RequestBucket(unitMs, clock, record, start),
};

export const WINDOW: StateType<TokenWindow> = {
  kind: 'tokens',
  slots: (workers) => TokenWindow.slots(workers),
  make: (unitMs, clock, record, start) => new TokenWindow(unitMs, clock, record, start),
};

/** The state of one unkeyed entry. */
export interface StateSpec<S> {
  /** The entry's identity (LimiterStore.entry). */
  readonly id: string;
  readonly type: StateType<S>;
  readonly unit: LocalRateLimitUnit;
  readonly unitMs: number;
  readonly clock: Clock;
  /** Where a new state's first window starts (windowOrigin). */
  readonly origin: number;
}

/** The key table of one keyed entry. */
export interface TableSpec<S> extends StateSpec<S> {
  /** config.maxRateLimitKeys. */
  readonly maxKeys: number;
  /** A request was given the overflow budget. */
  readonly overflowed: () => void;
}

export interface LimitMemory {
  readonly mode: 'local' | 'shared';
  /** The lock of every state of this memory; null when no other thread reads it (nothing to wait for, nothing to pay). */
  readonly lock: Lock | null;
  /** The state of an unkeyed entry: the one its id has (kept across configs), else a new one. */
  state<S>(spec: StateSpec<S>): S;
  /** The key table of a keyed entry: the one its id has, else a new one. */
  table<L, S extends KeyState<L>>(spec: TableSpec<S>): KeyTable<L, S>;
  /** A new config is in place: the state it did not ask for is dropped. */
  commit(): void;
  /** A new config was refused: forget what it asked for. */
  discard(): void;
}
