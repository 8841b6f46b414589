// A listener's routes indexed for selection (by effective hostname, then path), kept from one
// snapshot to the next and changed in proportion to what changed.
//
// What the index holds for a route depends only on the route object (its hostnames and
// matches), the listener's hostname and the route's place among the listener's routes (the
// last tie-breaker). Route objects are immutable and a snapshot keeps the objects of unchanged
// routes, so an apply walks the new route list once against the last one (by position; a map
// lookup where they part), takes out the candidates of the routes that left, and puts in those of
// the routes that came: the buckets of an unchanged route are not touched. A route's place is a number, not a position:
// one added between two others takes a number between theirs, so nothing after it is renumbered.
// Whatever the incremental path cannot express (routes reordered, the same route twice, no
// number left between two neighbours) rebuilds the listener's index from scratch.
//
// A list that differs from the last one only between a common head and tail (a route added,
// removed or replaced: most applies) need not be walked at all: splice() takes out the cells of
// the old stretch between and puts in those of the new one, numbered between their neighbours;
// the cells of the head and tail are not visited (the new order is made by array copies), so
// their `position` may be stale afterwards: it is a hint of the walk, checked where it is read.
//
// The index is shared by the snapshot it was last updated for and is changed in place by the
// next compile, so each snapshot holds a view stamped with the index's epoch; a view whose
// epoch has passed (the snapshot kept after its successor was refused, or a request that reaches
// route selection after its snapshot was replaced, having waited on a Gateway-level global
// limit) builds a private index of its own routes on first use: once per listener, never more
// work than the rebuild every apply used to do.
import type { RouteIR } from '@tollgate/api';
import { commonEnds } from './routes-gathered.js';
import { compileCandidate, type Candidate, type CompiledMatch } from './candidate.js';
import { HostTable } from './host-table.js';
import { effectiveHostnames } from './hostname.js';
import { PathIndex, type IndexSize } from './path-index.js';

/** Spacing of route numbers when a listener is numbered afresh: room for about 50 insertions at one place. */
const STEP = 1024;
/** The least spacing of the numbers a splice gives its new routes (room for a few more halvings): below it, the stretch widens. */
const MIN_GAP = 16;

/** One route of the listener as the index holds it; `value` is the compiled route of the latest snapshot. */
export class RouteCell<T> {
  /** Its place among the listener's routes (numbers increase along the list). */
  key = 0;
  /** Its position in the list of the last update, and that update's epoch. */
  position = 0;
  seen = 0;
  placed: { readonly host: string | null; readonly candidate: Candidate<RouteCell<T>> }[] = [];

  constructor(
    readonly ir: RouteIR,
    readonly hosts: readonly (string | null)[],
    readonly matches: readonly CompiledMatch[],
    public value: T,
  ) {}
}

/**
 * An update by splice() that spliceable() found possible: the new list, the stretch that
 * changed between the last list's head and tail, and the new routes' numbers. Valid while the
 * index is at `epoch` (nothing else updated it since).
 */
export interface SplicePlan {
  readonly epoch: number;
  /** The last update's list, which the new one is compared against. */
  readonly from: readonly RouteIR[];
  readonly list: readonly RouteIR[];
  /** Routes both lists share at their head, and after that at their tail (by object). */
  readonly head: number;
  readonly tail: number;
  /** Numbers of the new list's routes between head and tail, in order. */
  readonly keys: readonly number[];
}

export interface RouteIndexSize extends IndexSize {
  readonly hosts: number;
  readonly routes: number;
}

export class RouteIndex<T> {
  #table = new HostTable<PathIndex<RouteCell<T>>>();
  #cells = new Map<RouteIR, RouteCell<T>>();
  /** The listener's routes as of the last update: the next one walks it alongside the new list. */
  #order: RouteCell<T>[] = [];
  #epoch = 0;
  // The update under way.
  #sequence: RouteCell<T>[] = [];
  #cursor = 0;
  #kept = 0;
  /** The number of the last kept route, and the new routes listed since (numbered at the next kept one). */
  #low: number | null = null;
  #run: RouteCell<T>[] = [];
  #added: RouteCell<T>[] = [];
  #renumber = false;
  /** The list holds a route object twice: each update rebuilds while it does (rare; kept simple). */
  #listedTwice = false;
  /** The route list (array) the index was last updated to, when the update was given it (splice() is relative to it). */
  #list: readonly RouteIR[] | null = null;
  #pendingList: readonly RouteIR[] | null = null;

  constructor(readonly hostname: string | null) {}

  /** Changes each time an update starts: views stamped with an older epoch no longer read this index. */
  get epoch(): number {
    return this.#epoch;
  }

  /** The last update's list holds a route object twice (revalue() cannot tell its two cells apart). */
  get listedTwice(): boolean {
    return this.#listedTwice;
  }

  /**
   * An update in which the listener's routes are the last update's list, in order, and only the
   * values of `changes` are new: nothing is placed again. The epoch moves, so the views of
   * earlier snapshots read a private index of their own values from here on.
   */
  revalue(changes: readonly (readonly [RouteIR, T])[]): number {
    if (this.#listedTwice) throw new Error('revalue(): the listener lists a route object twice; update it with begin(), place() and finish()');
    this.#reset();
    // The epoch moves first: a throw below leaves this index to no snapshot.
    const epoch = ++this.#epoch;
    for (const [ir, value] of changes) {
      const cell = this.#cells.get(ir);
      if (!cell) throw new Error(`revalue(): route ${ir.name} is not in the last update's list`);
      cell.value = value;
    }
    return epoch;
  }

  /**
   * Starts an update; then place() each route of the listener in order, then finish(). `list`:
   * the array of routes about to be placed, which a later splice() may be relative to.
   */
  begin(list: readonly RouteIR[] | null = null): number {
    this.#reset();
    this.#list = null;
    this.#pendingList = list;
    this.#renumber = this.#listedTwice;
    return ++this.#epoch;
  }

  /**
   * Whether the update to `list` can be a splice() of what lies between the common head and
   * tail of the last update's list and `list`, at most `limit` routes in all taken out and put
   * in: null when it cannot (then begin(), place() and finish()). It cannot when the last
   * update's list is not known, when a list holds a route object twice (the last one, or the
   * new one between head and tail, or a new route there that the head or tail lists too), or
   * when no numbers are left between the neighbours of the new routes. Nothing changes.
   */
  spliceable(list: readonly RouteIR[], limit: number): SplicePlan | null {
    const from = this.#list;
    if (from === null || this.#listedTwice || from.length !== this.#order.length) return null;
    const { head, tail } = commonEnds(from, list);
    const oldEnd = from.length - tail;
    const newEnd = list.length - tail;
    const n = newEnd - head;
    if (oldEnd - head + n > limit) return null;
    const order = this.#order;
    const low = head ? order[head - 1]!.key : null;
    const high = tail ? order[oldEnd]!.key : null;
    // Keys increase strictly along the order (no object listed twice): a route held with a key
    // outside (low, high) is in the head or the tail, and would be listed twice.
    const middle = n > 1 ? new Set<RouteIR>() : null;
    for (let i = head; i < newEnd; i++) {
      const r = list[i]!;
      const cell = this.#cells.get(r);
      if (cell !== undefined && ((low !== null && cell.key <= low) || (high !== null && cell.key >= high))) return null;
      if (middle) {
        if (middle.has(r)) return null;
        middle.add(r);
      }
    }
    // Little room left between the neighbours (routes added at one place, one after the other):
    // the stretch takes in as many of their neighbours again, and again, until the new numbers
    // are spaced at least MIN_GAP apart; those neighbours are taken out and put in again,
    // renumbered (a few routes, not the listener's thousands).
    let h = head;
    let t = tail;
    for (let w = 1; this.#spacing(from, list, h, t) < MIN_GAP; w *= 2) {
      h = Math.max(0, head - w);
      t = Math.max(0, tail - w);
      if (from.length - t - h + (list.length - t - h) > limit) return null;
    }
    const keys = this.#keys(h ? order[h - 1]!.key : null, t ? order[from.length - t]!.key : null, list.length - t - h);
    return keys && { epoch: this.#epoch, from, list, head: h, tail: t, keys };
  }

  /** How far apart the new numbers of the stretch between `head` and `tail` would be (no neighbour on a side: STEP). */
  #spacing(from: readonly RouteIR[], list: readonly RouteIR[], head: number, tail: number): number {
    if (!head || !tail) return STEP;
    return (this.#order[from.length - tail]!.key - this.#order[head - 1]!.key) / (list.length - tail - head + 1);
  }

  /** `n` numbers between `low` and `high` (null: no neighbour on that side), increasing; null when floating point has no room for them. */
  #keys(low: number | null, high: number | null, n: number): number[] | null {
    const keys: number[] = [];
    for (let i = 0; i < n; i++) {
      const t = i + 1;
      const key = low === null ? (high === null ? t * STEP : high - (n + 1 - t) * STEP) : high === null ? low + t * STEP : low + ((high - low) * t) / (n + 1);
      const before = i ? keys[i - 1]! : low;
      if ((before !== null && key <= before) || (high !== null && key >= high)) return null;
      keys.push(key);
    }
    return keys;
  }

  /**
   * The update `plan` (from spliceable(), nothing updated since): the routes of the last list
   * between head and tail are taken out, those of the new list put in with `matches` and
   * `values` (one each, in order); `revalued`: new values of routes of the head and tail, by
   * position in the new list. Returns the new epoch and the effective hostnames of each route
   * put in (none: detached).
   */
  splice(
    plan: SplicePlan,
    matches: readonly (readonly CompiledMatch[])[],
    values: readonly T[],
    revalued: readonly (readonly [number, T])[],
  ): { readonly epoch: number; readonly hosts: readonly (readonly (string | null)[])[] } {
    if (plan.epoch !== this.#epoch || plan.from !== this.#list) throw new Error('splice(): the index was updated since the plan was made');
    const { list, head, tail, keys } = plan;
    if (matches.length !== keys.length || values.length !== keys.length) throw new Error(`splice(): ${keys.length} routes between head and tail, given ${matches.length} matches and ${values.length} values`);
    // Views of earlier snapshots read a private index from here on (a throw below leaves this one to no snapshot).
    this.#reset();
    this.#list = null;
    const epoch = ++this.#epoch;
    const order = this.#order;
    const oldEnd = order.length - tail;
    for (let i = head; i < oldEnd; i++) {
      const cell = order[i]!;
      this.#unplace(cell);
      if (this.#cells.get(cell.ir) === cell) this.#cells.delete(cell.ir);
    }
    const cells: RouteCell<T>[] = [];
    const hosts: (readonly (string | null)[])[] = [];
    for (let i = 0; i < keys.length; i++) {
      const ir = list[head + i]!;
      const cell = new RouteCell(ir, effectiveHostnames(this.hostname, ir.hostnames), matches[i]!, values[i]!);
      cell.key = keys[i]!;
      cell.position = head + i;
      cell.seen = epoch;
      this.#cells.set(ir, cell);
      this.#place(cell);
      cells.push(cell);
      hosts.push(cell.hosts);
    }
    const next = head === oldEnd && !cells.length ? order.slice() : order.slice(0, head).concat(cells, order.slice(oldEnd));
    for (const [position, value] of revalued) {
      if (position >= head && position < head + keys.length) throw new Error(`splice(): position ${position} is between head and tail`);
      next[position]!.value = value;
    }
    this.#order = next;
    this.#list = list;
    return { epoch, hosts };
  }

  /** Drops the state of an update (finished, or abandoned by a compile that threw). */
  #reset(): void {
    this.#sequence = [];
    this.#cursor = 0;
    this.#kept = 0;
    this.#low = null;
    this.#run = [];
    this.#added = [];
    this.#renumber = false;
    this.#pendingList = null;
  }

  /**
   * The next route of the listener, with its compiled matches and value; returns its effective
   * hostnames (none: detached). An unchanged list is matched by position (no lookup); a route
   * found elsewhere moves the walk there.
   */
  place(ir: RouteIR, matches: readonly CompiledMatch[], value: T): readonly (string | null)[] {
    let cell = this.#order[this.#cursor];
    if (cell === undefined || cell.ir !== ir) cell = this.#cells.get(ir);
    if (cell !== undefined && cell.seen !== this.#epoch) {
      // (A position is a hint: a splice leaves those of the tail as they were.)
      this.#cursor = this.#order[this.#cursor] === cell ? this.#cursor + 1 : cell.position + 1;
      cell.value = value;
      this.#keep(cell);
    } else {
      // New, or the same object listed twice: two routes for the index, told apart by renumbering.
      if (cell !== undefined) {
        this.#renumber = true;
        cell = new RouteCell(ir, cell.hosts, matches, value);
      } else {
        cell = new RouteCell(ir, effectiveHostnames(this.hostname, ir.hostnames), matches, value);
        this.#cells.set(ir, cell);
      }
      this.#run.push(cell);
    }
    cell.seen = this.#epoch;
    cell.position = this.#sequence.length;
    this.#sequence.push(cell);
    return cell.hosts;
  }

  /** The value `ir` has in the index before this update places it (the last update's), if it is there. */
  valueOf(ir: RouteIR): T | undefined {
    const cell = this.#order[this.#cursor];
    return (cell !== undefined && cell.ir === ir ? cell : this.#cells.get(ir))?.value;
  }

  finish(): void {
    if (this.#run.length) this.#number(null);
    const sequence = this.#sequence;
    if (this.#renumber) this.#rebuild(sequence);
    else {
      // Fewer kept than held: some routes left.
      if (this.#kept < this.#order.length) {
        for (const cell of this.#order) {
          if (cell.seen === this.#epoch) continue;
          this.#unplace(cell);
          this.#cells.delete(cell.ir);
        }
      }
      for (const cell of this.#added) this.#place(cell);
    }
    this.#order = sequence;
    // Only a rebuild lists an object twice, and it maps each object once.
    this.#listedTwice = this.#cells.size < sequence.length;
    this.#list = this.#pendingList;
    this.#reset();
  }

  #keep(cell: RouteCell<T>): void {
    this.#kept++;
    // Kept routes in another order than before: only renumbering expresses it.
    if (this.#low !== null && cell.key <= this.#low) this.#renumber = true;
    else if (this.#run.length) this.#number(cell.key);
    this.#low = cell.key;
  }

  /** Numbers the new routes listed since the last kept one, between its number and `high` (null: the end). */
  #number(high: number | null): void {
    const run = this.#run;
    const low = this.#low;
    const n = run.length;
    this.#run = [];
    for (let i = 0; i < n && !this.#renumber; i++) {
      const t = i + 1;
      const key = low === null ? (high === null ? t * STEP : high - (n + 1 - t) * STEP) : high === null ? low + t * STEP : low + ((high - low) * t) / (n + 1);
      const before = i ? run[i - 1]!.key : low;
      // Floating point ran out of room between two neighbours.
      if ((before !== null && key <= before) || (high !== null && key >= high)) this.#renumber = true;
      run[i]!.key = key;
      this.#added.push(run[i]!);
    }
  }

  #rebuild(sequence: readonly RouteCell<T>[]): void {
    this.#table = new HostTable();
    this.#cells = new Map();
    sequence.forEach((cell, i) => {
      cell.placed = [];
      cell.key = (i + 1) * STEP;
      if (!this.#cells.has(cell.ir)) this.#cells.set(cell.ir, cell);
      this.#place(cell);
    });
  }

  #place(cell: RouteCell<T>): void {
    // A route without matches serves nothing: no host entry is made for it.
    if (!cell.matches.length) return;
    for (const host of cell.hosts) {
      const index = this.#table.upsert(host, () => new PathIndex());
      cell.matches.forEach((m, i) => {
        const candidate = compileCandidate(cell, m, cell.key, i);
        index.add(candidate);
        cell.placed.push({ host, candidate });
      });
    }
  }

  #unplace(cell: RouteCell<T>): void {
    for (const { host, candidate } of cell.placed) {
      const index = this.#table.get(host);
      if (!index) continue;
      index.remove(candidate);
      if (index.empty) this.#table.delete(host);
    }
    cell.placed = [];
  }

  /** The first candidate serving the request, most specific hostname first (see HostTable and PathIndex). */
  find(host: string, path: string, accept: (c: Candidate<RouteCell<T>>) => boolean): Candidate<RouteCell<T>> | null {
    return this.#table.find(host, (index) => index.find(path, accept));
  }

  /** Every candidate serving `host`, most specific hostname first (for traces). */
  serving(host: string): Candidate<RouteCell<T>>[] {
    const out: Candidate<RouteCell<T>>[] = [];
    this.#table.find(host, (index) => {
      out.push(...index.all());
      return null;
    });
    return out;
  }

  size(): RouteIndexSize {
    let keys = 0;
    let candidates = 0;
    for (const index of this.#table.values()) {
      const s = index.size();
      keys += s.keys;
      candidates += s.candidates;
    }
    return { hosts: this.#table.size, keys, candidates, routes: this.#cells.size };
  }
}

/**
 * A snapshot's view of its listener's routes: the shared index while no later update has
 * started on it, else a private index of the snapshot's own routes, built on first use.
 */
export class RouteView<T extends { readonly ir: RouteIR }> {
  #own: RouteIndex<T> | null = null;

  constructor(
    readonly shared: RouteIndex<T>,
    readonly epoch: number,
    /** The listener's compiled routes in order, and their matches: what a private index is built from. */
    readonly values: readonly T[],
    readonly matchesOf: (ir: RouteIR) => readonly CompiledMatch[],
  ) {}

  /** The shared index is still this snapshot's (a later compile may update it in place). */
  get current(): boolean {
    return this.shared.epoch === this.epoch;
  }

  get index(): RouteIndex<T> {
    if (this.current) return this.shared;
    if (!this.#own) {
      const own = new RouteIndex<T>(this.shared.hostname);
      own.begin();
      for (const v of this.values) own.place(v.ir, this.matchesOf(v.ir), v);
      own.finish();
      this.#own = own;
    }
    return this.#own;
  }
}
