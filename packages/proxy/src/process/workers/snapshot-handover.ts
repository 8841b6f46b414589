// How a snapshot the main thread applied reaches a worker thread: relative to the one handed
// over before, when the thread holds it. A worker compiles a snapshot reusing what it compiled
// for the routes of the last one, matched by object identity (routing/compile.ts, the route
// index's in-place update), and takes a listener whole while its route list is the same array;
// a structured clone of the whole snapshot would give it new objects for every route, so every
// apply, one route edited among 3,000, would compile them all again and copy them all across.
// So a listener's route list the thread holds crosses as its number alone (an endpoint change
// sends no route and costs no walk over the routes, on either side); a new list crosses as its
// number and its routes, each a route the thread holds (its number alone) or a new one with the
// number it gets. A listener's policy goes by number too: a worker keeps the compiled routes of
// a listener while its policy is the object it was (routing/compile.ts), and a Gateway-level
// policy is on most listeners. The rest of the snapshot (binds, listeners, TLS) is copied as
// before, being small.
//
// A list or a route is "the same" only as the same object in the main thread's snapshots: the
// snapshot source keeps the objects of unchanged routes, and the arrays of unchanged lists, from
// one snapshot to the next (the controller's deltas) and the main thread's own compile relies on
// it; snapshots are never mutated. One that is equal but not the same object (a whole snapshot
// from a file reload) is sent again.
//
// The sender keeps the lists of the last hand-over, and each route with the count of those lists
// that hold it; the numbers of the lists and routes that left go with the hand-over, and the
// receiver forgets them once it applied it: both sides change in proportion to the lists that
// changed. A hand-over relative to another one (`base`) is refused by a thread that does not
// hold that one (it was restarted, or missed it): the pool sends such a thread the whole
// hand-over instead.
import type { ListenerIR, PolicyIR, ProxySnapshot, RouteIR } from '@tollgate/api';
import { secretPlaces, restoreSecrets, type SecretPlaces } from './snapshot-secrets.js';
import { commonEnds } from '../../routing/routes-gathered.js';

/**
 * A route the thread holds (its number alone), or a new one and its number. A held route
 * crosses as a number, not an object: at 3,000 routes of which one changed, a changed list is
 * then an array of numbers and one route.
 */
export type HandedRoute = number | { readonly id: number; readonly route: RouteIR };

/**
 * A listener's route list: one the thread holds (its number alone); a list, its number and its
 * routes; or a list made from one the thread holds (`from`): its first `head` routes, then
 * `routes`, then its last `tail` (a route added to or taken from a list of 3,000 crosses as
 * itself, not as 3,000 numbers).
 */
export type HandedList =
  | { readonly list: number }
  | { readonly list: number; readonly routes: readonly HandedRoute[] }
  | { readonly list: number; readonly from: number; readonly head: number; readonly tail: number; readonly routes: readonly HandedRoute[] };

/** A listener's policy: none, one the thread holds (its number), or a new one and its number. */
export type HandedPolicy = null | number | { readonly id: number; readonly policy: PolicyIR };

type HandedListener<L> = L extends ListenerIR ? Omit<L, 'routes' | 'policy'> & { readonly policy: HandedPolicy; readonly routes: HandedList } : never;

/** A snapshot whose listeners' routes are handed lists. */
export interface HandedSnapshot extends Omit<ProxySnapshot, 'binds'> {
  readonly binds: readonly (Omit<ProxySnapshot['binds'][number], 'listeners'> & { readonly listeners: readonly HandedListener<ListenerIR>[] })[];
}

export interface Handover {
  /** This hand-over's number: the next one may be relative to it. */
  readonly seq: number;
  /** The hand-over whose lists, routes and policies the numbers name; null: whole, every one included. */
  readonly base: number | null;
  readonly snapshot: HandedSnapshot;
  /** The numbers of the lists and routes of `base` this one no longer has (the thread forgets them once applied). */
  readonly gone: { readonly lists: readonly number[]; readonly routes: readonly number[] };
  /** The Secrets of what is copied (what the thread holds keeps theirs): ./snapshot-secrets.ts. */
  readonly secrets: SecretPlaces;
}

/** One snapshot to hand over: relative to the previous hand-over, or whole (made once, when a thread needs it). */
export interface Outgoing {
  readonly seq: number;
  readonly relative: Handover;
  whole(): Handover;
}

/** A route list of the last hand-over: its number, its routes', the hand-overs that first and last listed it. */
interface ListEntry {
  readonly id: number;
  /** The list's route objects, and their entries in the same order. */
  readonly list: readonly RouteIR[];
  readonly routes: readonly RouteEntry[];
  readonly born: number;
  seq: number;
  /** Made from the list at its place in the hand-over before, which left: the routes of both but `head` and `tail` differ. */
  readonly from: { readonly entry: ListEntry; readonly head: number; readonly tail: number } | null;
  /** A list made from this one took its routes' counts: when it leaves, they stay. */
  inherited: boolean;
}

/** A route of the lists of the last hand-over: its number, how many of those lists hold it, the hand-over that first listed it. */
interface RouteEntry {
  readonly id: number;
  readonly born: number;
  lists: number;
}

/** One listener of a hand-over being made: its policy's number, and its list. */
interface Listing {
  readonly policy: Numbered | null;
  readonly routes: readonly RouteIR[];
  readonly list: ListEntry;
}

/**
 * `snapshot` with each listener's policy and route list named: a list (or a route, or a
 * policy) the thread holding `base` holds goes as its number (`base` null: none held, the
 * whole); so does one this hand-over already carried.
 */
function handed(snapshot: ProxySnapshot, listings: readonly Listing[], base: number | null): HandedSnapshot {
  const sentLists = new Set<number>();
  const sentRoutes = new Set<number>();
  const sentPolicies = new Set<number>();
  // A relative hand-over's held lists and routes: those listed in `base` (every one listed before is, or has left).
  const heldBy = (born: number) => base !== null && born <= base;
  let at = 0;
  const policy = (p: PolicyIR, n: Numbered): HandedPolicy => {
    if ((base !== null && n.held) || sentPolicies.has(n.id)) return n.id;
    sentPolicies.add(n.id);
    return { id: n.id, policy: p };
  };
  const route = (entry: ListEntry, i: number): HandedRoute => {
    const { id, born } = entry.routes[i]!;
    if (heldBy(born) || sentRoutes.has(id)) return id;
    sentRoutes.add(id);
    return { id, route: entry.list[i]! };
  };
  const list = ({ list: entry }: Listing): HandedList => {
    if (heldBy(entry.born) || sentLists.has(entry.id)) return { list: entry.id };
    sentLists.add(entry.id);
    const from = entry.from;
    // (The list it was made from was listed in the hand-over before: a thread holding `base` holds it.)
    if (from && heldBy(from.entry.born)) {
      const middle: HandedRoute[] = [];
      for (let i = from.head; i < entry.list.length - from.tail; i++) middle.push(route(entry, i));
      return { list: entry.id, from: from.entry.id, head: from.head, tail: from.tail, routes: middle };
    }
    return { list: entry.id, routes: entry.list.map((_, i) => route(entry, i)) };
  };
  return {
    ...snapshot,
    binds: snapshot.binds.map((b) => ({
      ...b,
      listeners: b.listeners.map((l) => {
        const listing = listings[at++]!;
        return { ...l, policy: l.policy === null ? null : policy(l.policy, listing.policy!), routes: list(listing) };
      }),
    })),
  };
}

function sealed(seq: number, base: number | null, snapshot: HandedSnapshot, gone: Handover['gone']): Handover {
  return { seq, base, snapshot, gone, secrets: secretPlaces(snapshot) };
}

/** An object's number, the hand-over that last listed it, and whether the thread holding the one before that holds it. */
interface Numbered {
  readonly id: number;
  seq: number;
  held: boolean;
}

/**
 * Numbers of objects (listener policies) by identity, kept from one hand-over to the next. Each
 * hand-over costs a lookup per listing; the table is swept of the objects that left only when
 * some did, so it never outgrows one snapshot.
 */
class Numbering<T extends object> {
  readonly #numbered = new Map<T, Numbered>();
  #nextId = 1;
  #distinct = 0;

  /** The object's number in hand-over `seq`, and whether the thread holding `base` holds it. */
  list(object: T, seq: number, base: number): Numbered {
    let n = this.#numbered.get(object);
    if (n === undefined) {
      n = { id: this.#nextId++, seq, held: false };
      this.#numbered.set(object, n);
      this.#distinct++;
    } else if (n.seq !== seq) {
      // (An object listed twice is looked at once: its first listing says.)
      n.held = n.seq === base;
      n.seq = seq;
      this.#distinct++;
    }
    return n;
  }

  /** After every listing of hand-over `seq`: forgets the objects it did not list. */
  sweep(seq: number): void {
    if (this.#distinct < this.#numbered.size) for (const [o, n] of this.#numbered) if (n.seq !== seq) this.#numbered.delete(o);
    this.#distinct = 0;
  }
}

/** The main thread's side: numbers the route lists, routes and listener policies of each snapshot, keeping the numbers of those it handed over last time. */
export class HandoverSender {
  readonly #lists = new Map<readonly RouteIR[], ListEntry>();
  readonly #routes = new Map<RouteIR, RouteEntry>();
  readonly #policies = new Numbering<PolicyIR>();
  /** The lists of the last hand-over by place (listener order): a new list is made from the one at its place when that one left. */
  #places: readonly ListEntry[] = [];
  #nextList = 1;
  #nextRoute = 1;
  #seq = 0;

  next(snapshot: ProxySnapshot): Outgoing {
    const base = this.#seq;
    const seq = ++this.#seq;
    const listed: { readonly policy: Numbered | null; readonly routes: readonly RouteIR[]; readonly list: ListEntry | undefined }[] = [];
    let distinct = 0;
    // First the lists already numbered, so that a new list knows whether the one at its place left.
    for (const b of snapshot.binds) {
      for (const l of b.listeners) {
        const policy = l.policy === null ? null : this.#policies.list(l.policy, seq, base);
        const list = this.#lists.get(l.routes);
        if (list !== undefined && list.seq !== seq) {
          list.seq = seq;
          distinct++;
        }
        listed.push({ policy, routes: l.routes, list });
      }
    }
    // Then the new ones, in listener order, with the numbers of the lists and routes that leave.
    const gone = { lists: [] as number[], routes: [] as number[] };
    const listings = listed.map(({ policy, routes, list }, at): Listing => {
      // (A new list listed twice is numbered at its first listing.)
      let entry = list ?? this.#lists.get(routes);
      if (entry === undefined) {
        entry = this.#numbered(routes, this.#places[at], seq, gone.routes);
        this.#lists.set(routes, entry);
        distinct++;
      }
      return { policy, routes, list: entry };
    });
    this.#places = listings.map((l) => l.list);
    this.#policies.sweep(seq);
    // The lists not listed leave, and the routes no list holds any longer with them.
    if (distinct < this.#lists.size) {
      for (const [routes, list] of this.#lists) {
        if (list.seq === seq) continue;
        this.#lists.delete(routes);
        gone.lists.push(list.id);
        // A list made from this one holds its routes' counts now.
        if (!list.inherited) for (const r of routes) this.#routeOut(r, gone.routes);
      }
    }
    const relative = sealed(seq, base, handed(snapshot, listings, base), gone);
    // The whole form reads nothing that later hand-overs change: it may be made after them.
    let whole: Handover | null = null;
    return { seq, relative, whole: () => (whole ??= sealed(seq, null, handed(snapshot, listings, null), { lists: [], routes: [] })) };
  }

  /**
   * A new list, numbered. When the list at its place in the last hand-over left (no listener
   * lists it now) and no other new list was made from it, it is made from that one: the routes
   * both have at the head and at the tail keep their entries and counts (which the old list
   * leaving would have taken), and only those between are counted in and out.
   */
  #numbered(list: readonly RouteIR[], before: ListEntry | undefined, seq: number, gone: number[]): ListEntry {
    const id = this.#nextList++;
    const old = before === undefined || before.seq === seq || before.inherited ? [] : before.list;
    const { head, tail } = commonEnds(old, list);
    // Nothing in common (or nothing to make it from): numbered whole.
    if (!head && !tail) return { id, list, routes: list.map((r) => this.#routeIn(r, seq)), born: seq, seq, from: null, inherited: false };
    before = before!;
    // The new routes between counted in before the old ones are counted out: a route moved within keeps its number.
    const middle = list.slice(head, list.length - tail).map((r) => this.#routeIn(r, seq));
    for (let i = head; i < old.length - tail; i++) this.#routeOut(old[i]!, gone);
    before.inherited = true;
    const routes = before.routes.slice(0, head).concat(middle, before.routes.slice(before.routes.length - tail));
    return { id, list, routes, born: seq, seq, from: { entry: before, head, tail }, inherited: false };
  }

  /** A route listed by a new list of hand-over `seq`: its entry (one more list holds it). */
  #routeIn(r: RouteIR, seq: number): RouteEntry {
    let entry = this.#routes.get(r);
    if (entry === undefined) {
      entry = { id: this.#nextRoute++, born: seq, lists: 0 };
      this.#routes.set(r, entry);
    }
    entry.lists++;
    return entry;
  }

  /** One list fewer holds `r`; its number goes into `gone` when none does. */
  #routeOut(r: RouteIR, gone: number[]): void {
    const entry = this.#routes.get(r)!;
    if (--entry.lists) return;
    this.#routes.delete(r);
    gone.push(entry.id);
  }
}

/** Why a thread cannot take a hand-over: it does not hold what it refers to. */
export class HandoverGap extends Error {}

/** A worker thread's side: the route lists, routes and listener policies of the hand-over it applied last, by number. */
export class HandoverReceiver {
  #seq: number | null = null;
  #lists = new Map<number, readonly RouteIR[]>();
  #routes = new Map<number, RouteIR>();
  #policies = new Map<number, PolicyIR>();

  /**
   * The snapshot of `h` (its Secrets put back), the lists, routes and policies this thread holds
   * taken by reference; `applied()` once the runtime serves it, so the next hand-over may refer
   * to it. Nothing the thread holds changes before then (a refused apply leaves it as it was).
   */
  open(h: Handover): { readonly snapshot: ProxySnapshot; readonly applied: () => void } {
    if (h.base !== null && h.base !== this.#seq) {
      throw new HandoverGap(`config hand-over ${h.seq} is relative to hand-over ${h.base}, and this thread holds ${this.#seq ?? 'none'}`);
    }
    restoreSecrets(h.snapshot, h.secrets);
    // A whole hand-over names nothing held: what the thread holds is then what it carries.
    const whole = h.base === null;
    const heldLists: ReadonlyMap<number, readonly RouteIR[]> = whole ? new Map() : this.#lists;
    const heldRoutes: ReadonlyMap<number, RouteIR> = whole ? new Map() : this.#routes;
    const lists = new Map<number, readonly RouteIR[]>();
    const routes = new Map<number, RouteIR>();
    const take = <T, W extends { readonly id: number }>(w: number | W, held: ReadonlyMap<number, T>, into: Map<number, T>, what: string, object: (w: W) => T): T => {
      if (typeof w === 'number') {
        const o = into.get(w) ?? held.get(w);
        if (o === undefined) throw new HandoverGap(`config hand-over ${h.seq} refers to ${what} ${w}, which ${h.base === null ? 'it does not carry' : `hand-over ${h.base} did not have`}`);
        return o;
      }
      const o = object(w);
      into.set(w.id, o);
      return o;
    };
    const takeRoute = (w: HandedRoute): RouteIR => take(w, heldRoutes, routes, 'route', (x) => x.route);
    const takeList = (w: HandedList): readonly RouteIR[] => {
      if (!('routes' in w)) return take(w.list, heldLists, lists, 'route list', () => []);
      let list: readonly RouteIR[];
      if ('from' in w) {
        const from = take(w.from, heldLists, lists, 'route list', () => []);
        const { head, tail } = w;
        if (!Number.isInteger(head) || !Number.isInteger(tail) || head < 0 || tail < 0 || head + tail > from.length) {
          throw new HandoverGap(`config hand-over ${h.seq} makes route list ${w.list} of the first ${head} and last ${tail} routes of list ${w.from}, which has ${from.length}`);
        }
        list = from.slice(0, head).concat(w.routes.map(takeRoute), from.slice(from.length - tail));
      } else list = w.routes.map(takeRoute);
      lists.set(w.list, list);
      return list;
    };
    // Policies are few (one per listener at most): the thread holds those its last hand-over listed.
    const policies = new Map<number, PolicyIR>();
    const takePolicy = (w: HandedPolicy): PolicyIR | null => {
      if (w === null) return null;
      const p = take(w, this.#policies, policies, 'listener policy', (x) => x.policy);
      policies.set(typeof w === 'number' ? w : w.id, p);
      return p;
    };
    const snapshot: ProxySnapshot = {
      ...h.snapshot,
      binds: h.snapshot.binds.map((b) => ({ ...b, listeners: b.listeners.map((l) => ({ ...l, policy: takePolicy(l.policy), routes: takeList(l.routes) })) })),
    };
    return {
      snapshot,
      applied: () => {
        this.#seq = h.seq;
        this.#policies = policies;
        if (whole) {
          this.#lists = lists;
          this.#routes = routes;
          return;
        }
        for (const id of h.gone.lists) this.#lists.delete(id);
        for (const id of h.gone.routes) this.#routes.delete(id);
        for (const [id, list] of lists) this.#lists.set(id, list);
        for (const [id, route] of routes) this.#routes.set(id, route);
      },
    };
  }
}
