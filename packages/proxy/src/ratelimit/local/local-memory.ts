// Local mode (./limit-memory.ts): each budget is an object of this thread, a key table a Map,
// and there is no lock. What a proxy on one thread has always done.
import type { KeyState, KeyTable } from './keyed-table.js';
import { KeyedTable } from './keyed-table.js';
import type { LimitMemory, StateSpec, TableSpec } from './limit-memory.js';
import { ownRecord } from './state-record.js';

export class LocalLimitMemory implements LimitMemory {
  readonly mode = 'local';
  readonly lock = null;
  /** By entry id: a state or a key table (the id tells which, and of what kind). */
  #live = new Map<string, unknown>();
  #next = new Map<string, unknown>();

  state<S>(spec: StateSpec<S>): S {
    const s = (this.#kept(spec.id) as S | undefined) ?? spec.type.make(spec.unitMs, spec.clock, ownRecord(spec.type.slots(1)), spec.origin);
    this.#next.set(spec.id, s);
    return s;
  }

  table<L, S extends KeyState<L>>(spec: TableSpec<S>): KeyTable<L, S> {
    const { type, unitMs, clock } = spec;
    const t =
      (this.#kept(spec.id) as KeyTable<L, S> | undefined) ??
      new KeyedTable<L, S>(spec.maxKeys, spec.unit, spec.origin, (start) => type.make(unitMs, clock, ownRecord(type.slots(1)), start), spec.overflowed);
    this.#next.set(spec.id, t);
    return t;
  }

  /** What the config being compiled (a repeated entry), else the live one, has for `id`. */
  #kept(id: string): unknown {
    return this.#next.get(id) ?? this.#live.get(id);
  }

  commit(): void {
    this.#live = this.#next;
    this.#next = new Map();
  }

  discard(): void {
    this.#next = new Map();
  }
}
