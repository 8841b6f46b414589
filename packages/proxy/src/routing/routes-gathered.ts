// What a compile gathers from the routes of every listener: each route's parts, the route names
// (their metrics series are kept), the endpoints of static backends and the Service ports in use.
//
// An added route changes its listener's list, and a large Gateway has one listener holding
// thousands of routes. Gathered afresh, each apply filled tables of every route (and left them
// all as garbage one apply later): most of a worker thread's apply at 3,000 routes, garbage
// collection included. So what is gathered is counted by listing (a route may be on several
// listeners, a name or an endpoint used by several routes) and changed by what a listener's list
// gained and lost (listingChanges). The serving snapshot keeps its own: a compile forks it, each
// table a root never changed and a layer of the changes since (LayeredMap: copying a table of
// 3,000 entries at each apply cost as much as filling one), so a refused apply leaves the
// serving snapshot's as it was.
import { commonEnds, type RouteIR } from '@tollgate/api';
import type { ServiceUse } from './backend-picker.js';

/** What a set-like view of keys offers its readers (a Set is one too). */
export interface ReadonlyKeys<K> extends Iterable<K> {
  has(key: K): boolean;
  readonly size: number;
}

/** Marks a key the layer deleted from its root. */
const GONE = Symbol('gone');

/**
 * A map as a root that is never changed and a layer of changes over it. A fork copies the layer
 * alone (the changes since the root was made), so a snapshot's tables stay as they were while the
 * next compile changes its fork; once the layer grows past a share of the root, the next fork
 * makes a new root of the two (amortized: a few entries per change, not the whole table).
 */
export class LayeredMap<K, V> implements ReadonlyMap<K, V> {
  #root: ReadonlyMap<K, V>;
  #layer: Map<K, V | typeof GONE>;
  #size: number;

  constructor(root: ReadonlyMap<K, V> = new Map(), layer: Map<K, V | typeof GONE> = new Map(), size = root.size) {
    this.#root = root;
    this.#layer = layer;
    this.#size = size;
  }

  /** A copy to change: this one stays as it is. */
  fork(): LayeredMap<K, V> {
    if (this.#outgrown()) return new LayeredMap(new Map(this));
    return new LayeredMap(this.#root, new Map(this.#layer), this.#size);
  }

  /**
   * Makes a new root of the two once the layer has grown past a share of the root, as the next
   * fork would: called by whoever changed it once done, so that the entries the layer replaced
   * or deleted are not held by the root until then (a config whose routes are all new objects,
   * as a reloaded file's are, would otherwise keep every old route's parts).
   */
  settle(): void {
    if (!this.#outgrown()) return;
    this.#root = new Map(this);
    this.#layer = new Map();
  }

  #outgrown(): boolean {
    return this.#layer.size > 32 + this.#root.size / 32;
  }

  get(key: K): V | undefined {
    const v = this.#layer.get(key);
    if (v === GONE) return undefined;
    return v !== undefined ? v : this.#root.get(key);
  }

  has(key: K): boolean {
    const v = this.#layer.get(key);
    return v === GONE ? false : v !== undefined || this.#root.has(key);
  }

  set(key: K, value: V): void {
    if (!this.has(key)) this.#size++;
    this.#layer.set(key, value);
  }

  delete(key: K): void {
    if (!this.has(key)) return;
    this.#size--;
    if (this.#root.has(key)) this.#layer.set(key, GONE);
    else this.#layer.delete(key);
  }

  get size(): number {
    return this.#size;
  }

  *entries(): MapIterator<[K, V]> {
    for (const entry of this.#root) if (!this.#layer.has(entry[0])) yield entry;
    for (const [k, v] of this.#layer) if (v !== GONE) yield [k, v];
  }

  *keys(): MapIterator<K> {
    for (const [k] of this.entries()) yield k;
  }

  *values(): MapIterator<V> {
    for (const [, v] of this.entries()) yield v;
  }

  [Symbol.iterator](): MapIterator<[K, V]> {
    return this.entries();
  }

  forEach(f: (value: V, key: K, map: ReadonlyMap<K, V>) => void): void {
    for (const [k, v] of this.entries()) f(v, k, this);
  }
}

let stamps = 0;

/** Keys counted by how many times they are held; a fork as LayeredMap's. */
export class CountedKeys<K> implements ReadonlyKeys<K> {
  readonly #counts: LayeredMap<K, number>;
  /** This one's stamp, and that of the one it was forked from (a number, not a reference: no chain of forks is kept alive). */
  readonly #stamp = ++stamps;
  readonly #base: number | null;
  /** The keys whose last hold went since the fork (some may have come back), when asked for. */
  readonly #left: K[] | null;

  /** `tracksLeft`: remember the keys that left, for leftSince() (keys that are objects are then held until the next fork). */
  constructor(counts: LayeredMap<K, number> = new LayeredMap(), base: number | null = null, tracksLeft = true) {
    this.#counts = counts;
    this.#base = base;
    this.#left = tracksLeft ? [] : null;
  }

  fork(): CountedKeys<K> {
    return new CountedKeys(this.#counts.fork(), this.#stamp, this.#left !== null);
  }

  /** See LayeredMap.settle(). */
  settle(): void {
    this.#counts.settle();
  }

  /** The keys `base` holds and this one does not, when this one is a fork of it; null when it is not. */
  leftSince(base: object): K[] | null {
    if (!(base instanceof CountedKeys) || base.#stamp !== this.#base || !this.#left) return null;
    return this.#left.filter((k) => !this.has(k));
  }

  /** One more hold of `key`; true when it was not held. */
  add(key: K): boolean {
    const n = this.#counts.get(key) ?? 0;
    this.#counts.set(key, n + 1);
    return n === 0;
  }

  /** One hold of `key` fewer; true when none is left. */
  delete(key: K): boolean {
    const n = this.#counts.get(key);
    if (n === undefined) throw new Error(`CountedKeys: ${String(key)} is not held`);
    if (n > 1) this.#counts.set(key, n - 1);
    else {
      this.#counts.delete(key);
      this.#left?.push(key);
    }
    return n === 1;
  }

  has(key: K): boolean {
    return this.#counts.has(key);
  }

  get size(): number {
    return this.#counts.size;
  }

  [Symbol.iterator](): Iterator<K> {
    return this.#counts.keys();
  }
}

/** What a route's parts say of where it sends (RouteParts). */
export interface Gatherable {
  readonly upstreams: readonly string[];
  readonly services: readonly ServiceUse[];
}

export class RoutesGathered<P extends Gatherable> {
  readonly #listings: CountedKeys<RouteIR>;
  readonly #parts: LayeredMap<RouteIR, P>;
  readonly #services: LayeredMap<string, CountedKeys<string>>;
  /** The names of the routes held (their metrics series are kept). */
  readonly routeNames: CountedKeys<string>;
  /** The endpoints of the routes' static and external backends and mirrors. */
  readonly upstreams: CountedKeys<string>;

  private constructor(from: RoutesGathered<P> | null) {
    // The listings' keys are route objects: which ones left is never asked, and not held.
    this.#listings = from ? from.#listings.fork() : new CountedKeys(undefined, null, false);
    this.#parts = from ? from.#parts.fork() : new LayeredMap();
    this.#services = from ? from.#services.fork() : new LayeredMap();
    this.routeNames = from ? from.routeNames.fork() : new CountedKeys();
    this.upstreams = from ? from.upstreams.fork() : new CountedKeys();
  }

  static empty<P extends Gatherable>(): RoutesGathered<P> {
    return new RoutesGathered<P>(null);
  }

  /** A copy to change: this one stays as it is. */
  fork(): RoutesGathered<P> {
    return new RoutesGathered(this);
  }

  /** Once a compile is done with its fork: no table keeps in its root what its layer replaced (LayeredMap.settle()). */
  settle(): void {
    this.#listings.settle();
    this.#parts.settle();
    this.#services.settle();
    this.routeNames.settle();
    this.upstreams.settle();
  }

  /** Each route's parts, by route object. */
  get parts(): ReadonlyMap<RouteIR, P> {
    return this.#parts;
  }

  /** The Service ports the routes send to, and the endpointKey() suffixes each is used with. */
  get services(): ReadonlyMap<string, ReadonlyKeys<string>> {
    return this.#services;
  }

  /** One more listing of `route`, whose parts are `own` (those it already has, when it is held). */
  add(route: RouteIR, own: P): void {
    if (!this.#listings.add(route)) return;
    this.#parts.set(route, own);
    this.routeNames.add(route.name);
    for (const u of own.upstreams) this.upstreams.add(u);
    for (const s of own.services) this.#suffixes(s.name).add(s.suffix);
  }

  /** One listing of `route` fewer: what it alone brought leaves with its last listing. */
  remove(route: RouteIR): void {
    const own = this.#parts.get(route);
    if (own === undefined || !this.#listings.delete(route)) return;
    this.#parts.delete(route);
    this.routeNames.delete(route.name);
    for (const u of own.upstreams) this.upstreams.delete(u);
    for (const s of own.services) {
      const suffixes = this.#suffixes(s.name);
      suffixes.delete(s.suffix);
      if (!suffixes.size) this.#services.delete(s.name);
    }
  }

  /** The suffixes of Service port `name`, a fork of their own to change (a few entries: forked at each change). */
  #suffixes(name: string): CountedKeys<string> {
    const suffixes = this.#services.get(name)?.fork() ?? new CountedKeys<string>();
    this.#services.set(name, suffixes);
    return suffixes;
  }
}

// (How far two lists agree from each end: one comparison for the whole project.)
export { commonEnds };

/**
 * What changed between a listener's last list and its new one, as a multiset of route objects:
 * the positions in `after` of the listings it gained and the routes of the listings it lost. The
 * common head and tail are passed over by identity (an added or removed route leaves the rest in
 * place); only what lies between is counted.
 */
export function listingChanges(before: readonly RouteIR[], after: readonly RouteIR[]): { readonly gained: readonly number[]; readonly lost: readonly RouteIR[] } {
  const { head, tail } = commonEnds(before, after);
  const gained: number[] = [];
  const lost: RouteIR[] = [];
  const beforeEnd = before.length - tail;
  const afterEnd = after.length - tail;
  if (head === beforeEnd) {
    for (let i = head; i < afterEnd; i++) gained.push(i);
    return { gained, lost };
  }
  if (head === afterEnd) return { gained, lost: before.slice(head, beforeEnd) };
  const held = new Map<RouteIR, number>();
  for (let i = head; i < beforeEnd; i++) held.set(before[i]!, (held.get(before[i]!) ?? 0) + 1);
  for (let i = head; i < afterEnd; i++) {
    const n = held.get(after[i]!);
    if (n) held.set(after[i]!, n - 1);
    else gained.push(i);
  }
  for (const [r, n] of held) for (let k = 0; k < n; k++) lost.push(r);
  return { gained, lost };
}
