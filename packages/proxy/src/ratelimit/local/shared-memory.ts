// Shared mode (./limit-memory.ts): the state of every local limit in SharedArrayBuffers that
// the proxy's worker threads all read and write under one lock (./shared-lock.ts).
//
// Allocation has one owner, so that two threads never make two budgets for one entry: the
// leader (worker 0, the main thread, which applies each config first) makes each entry's buffer
// by its id, as its store compiles the config. After commit, `layout()` lists them (plus the
// lock's buffer): the main thread posts it with the snapshot, and each follower `adopt`s it
// before compiling the same snapshot, placing its views on exactly those buffers. A follower
// asked for an id the layout lacks throws, naming it: its config is not the leader's.
//
// Each buffer holds one entry: an unkeyed entry's record (./state-record.ts) or a keyed entry's
// table (./shared-keyed-table.ts). Token windows keep reservations per worker, so
// `releaseWorker(w)` can give back everything a dead worker held.
import type { KeyState, KeyTable } from './keyed-table.js';
import type { LimitMemory, StateSpec, StateType, TableSpec } from './limit-memory.js';
import { SharedKeyedTable } from './shared-keyed-table.js';
import { SharedLock } from './shared-lock.js';
import { releaseWorkerColumns } from './token-window.js';

/** One entry's buffer, as the layout carries it. */
export interface LayoutEntry {
  readonly id: string;
  /**
   * The leader's allocation number: a new one when the leader makes a new buffer for an id (it
   * was dropped by a config, then used again), so a follower places new views on it.
   */
  readonly serial: number;
  readonly kind: StateType<unknown>['kind'];
  readonly keyed: boolean;
  readonly buffer: SharedArrayBuffer;
}

/** What a follower adopts: structured-cloneable (postMessage shares the buffers, copying nothing). */
export interface LimitLayout {
  /** The maximum number of workers: the columns of every token window. */
  readonly workers: number;
  readonly lock: SharedArrayBuffer;
  readonly entries: readonly LayoutEntry[];
}

export interface SharedMemoryOptions {
  /** The most worker threads there will be (the leader included): fixed, it sizes every token window. */
  readonly workers: number;
}

interface Placed {
  readonly entry: LayoutEntry;
  /** This thread's state or table on the entry's buffer. */
  readonly object: unknown;
}

/** A leader's or a follower's memory. */
export abstract class SharedLimitMemory implements LimitMemory {
  readonly mode = 'shared';
  protected live = new Map<string, Placed>();
  protected next = new Map<string, Placed>();

  constructor(
    /** This thread's index: its column in every token window. */
    readonly worker: number,
    readonly workers: number,
  ) {
    if (!Number.isInteger(workers) || workers < 1) throw new Error(`shared limit memory: workers must be a positive integer, not ${workers}`);
    if (!Number.isInteger(worker) || worker < 0 || worker >= workers) throw new Error(`shared limit memory: worker ${worker} is not in 0..${workers - 1}`);
  }

  abstract readonly lock: SharedLock;
  abstract state<S>(spec: StateSpec<S>): S;
  abstract table<L, S extends KeyState<L>>(spec: TableSpec<S>): KeyTable<L, S>;

  /** This thread's view of an unkeyed entry's buffer. */
  protected placeState<S>(spec: StateSpec<S>, entry: LayoutEntry, fresh: boolean): S {
    const record = { f64: new Float64Array(entry.buffer), at: 0, worker: this.worker, workers: this.workers };
    return spec.type.make(spec.unitMs, spec.clock, record, fresh ? spec.origin : undefined);
  }

  protected placeTable<L, S extends KeyState<L>>(spec: TableSpec<S>, entry: LayoutEntry, fresh: boolean): KeyTable<L, S> {
    const { type, unitMs, clock } = spec;
    return new SharedKeyedTable<L, S>(entry.buffer, spec.unit, this.worker, (record, start) => type.make(unitMs, clock, record, start), spec.overflowed, fresh);
  }

  commit(): void {
    this.live = this.next;
    this.next = new Map();
  }

  discard(): void {
    this.next = new Map();
  }

  /**
   * Gives back every reservation and hold of worker `w`, whose thread has exited (call it only
   * then: its requests will never settle), in every token window and every key of every keyed
   * tokens table this memory knows (the leader knows them all). Request tokens its admitted
   * requests took stay taken. Takes the lock from `w` if it died holding it. A new thread may
   * then be worker `w`: its columns start empty.
   */
  releaseWorker(w: number): void {
    if (!Number.isInteger(w) || w < 0 || w >= this.workers) throw new Error(`releaseWorker: worker ${w} is not in 0..${this.workers - 1}`);
    const lock = this.lock;
    lock.acquireFrom(w);
    try {
      for (const { entry } of this.known()) {
        if (entry.kind !== 'tokens') continue;
        if (entry.keyed) SharedKeyedTable.releaseWorker(entry.buffer, w);
        else releaseWorkerColumns(new Float64Array(entry.buffer), 0, this.workers, w);
      }
    } finally {
      lock.release();
    }
  }

  /** Every buffer of the live config and of one being compiled. */
  protected *known(): Iterable<Placed> {
    yield* this.live.values();
    for (const [id, p] of this.next) if (this.live.get(id)?.entry.buffer !== p.entry.buffer) yield p;
  }
}

/** Worker 0's memory: it makes the buffers, and lists them for the followers after each commit. */
export class LeaderLimitMemory extends SharedLimitMemory {
  readonly lock: SharedLock;
  #serial = 0;

  constructor(options: SharedMemoryOptions) {
    super(0, options.workers);
    this.lock = new SharedLock(SharedLock.buffer(), 0);
  }

  state<S>(spec: StateSpec<S>): S {
    const kept = this.#kept(spec.id);
    if (kept) return kept.object as S;
    const entry = this.#entry(spec, false, new SharedArrayBuffer(spec.type.slots(this.workers) * 8));
    return this.#place(entry, this.placeState(spec, entry, true));
  }

  table<L, S extends KeyState<L>>(spec: TableSpec<S>): KeyTable<L, S> {
    const kept = this.#kept(spec.id);
    if (kept) return kept.object as KeyTable<L, S>;
    const entry = this.#entry(spec, true, SharedKeyedTable.create(spec.maxKeys, spec.type.slots(this.workers), this.workers, spec.origin));
    return this.#place(entry, this.placeTable(spec, entry, true));
  }

  /** What the config being compiled (a repeated entry), else the live one, placed for `id`. */
  #kept(id: string): Placed | undefined {
    const p = this.next.get(id) ?? this.live.get(id);
    if (p) this.next.set(id, p);
    return p;
  }

  #entry(spec: StateSpec<unknown>, keyed: boolean, buffer: SharedArrayBuffer): LayoutEntry {
    return { id: spec.id, serial: ++this.#serial, kind: spec.type.kind, keyed, buffer };
  }

  #place<T>(entry: LayoutEntry, object: T): T {
    this.next.set(entry.id, { entry, object });
    return object;
  }

  /** The buffers of the config in force (call after commit), for the followers to adopt. */
  layout(): LimitLayout {
    return { workers: this.workers, lock: this.lock.buffer, entries: [...this.live.values()].map((p) => p.entry) };
  }
}

/** A worker's memory other than the leader's: it makes no buffer, it uses the layout's. */
export class FollowerLimitMemory extends SharedLimitMemory {
  #lock: SharedLock | null = null;
  #adopted = new Map<string, LayoutEntry>();

  constructor(options: SharedMemoryOptions & { readonly worker: number }) {
    super(options.worker, options.workers);
    if (options.worker === 0) throw new Error('shared limit memory: worker 0 is the leader (LeaderLimitMemory)');
  }

  get lock(): SharedLock {
    if (!this.#lock) throw new Error(`shared limit memory of worker ${this.worker}: no layout adopted yet (adopt the leader's layout before compiling a config)`);
    return this.#lock;
  }

  /** The leader's layout after its commit of the snapshot this worker is about to compile. */
  adopt(layout: LimitLayout): void {
    if (layout.workers !== this.workers) throw new Error(`shared limit memory of worker ${this.worker}: the layout is for ${layout.workers} workers, this memory for ${this.workers}`);
    // Every layout carries the same lock buffer; only the first is kept (limiters hold the lock).
    this.#lock ??= new SharedLock(layout.lock, this.worker);
    this.#adopted = new Map(layout.entries.map((e) => [e.id, e]));
  }

  state<S>(spec: StateSpec<S>): S {
    const entry = this.#entry(spec, false);
    return this.#placed(entry, () => this.placeState(spec, entry, false)) as S;
  }

  table<L, S extends KeyState<L>>(spec: TableSpec<S>): KeyTable<L, S> {
    const entry = this.#entry(spec, true);
    return this.#placed(entry, () => this.placeTable(spec, entry, false)) as KeyTable<L, S>;
  }

  #entry(spec: StateSpec<unknown>, keyed: boolean): LayoutEntry {
    const entry = this.#adopted.get(spec.id);
    if (!entry) throw new Error(`shared limit memory of worker ${this.worker}: the adopted layout has no state for limit ${spec.id} (the leader did not compile it: adopt the layout of the same config)`);
    if (entry.kind !== spec.type.kind || entry.keyed !== keyed) throw new Error(`shared limit memory of worker ${this.worker}: limit ${spec.id} is a ${entry.keyed ? 'keyed ' : ''}${entry.kind} entry in the adopted layout`);
    return entry;
  }

  /** The views this thread already has on the entry's buffer, else new ones. */
  #placed(entry: LayoutEntry, place: () => unknown): unknown {
    let p = this.next.get(entry.id) ?? this.live.get(entry.id);
    if (p?.entry.serial !== entry.serial) p = { entry, object: place() };
    this.next.set(entry.id, p);
    return p.object;
  }
}
