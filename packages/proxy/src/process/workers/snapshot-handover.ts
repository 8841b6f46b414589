// How a snapshot the main thread applied reaches a worker thread: relative to the one handed
// over before, when the thread holds it. A worker compiles a snapshot reusing what it compiled
// for the routes of the last one, matched by object identity (routing/compile.ts, the route
// index's in-place update); a structured clone of the whole snapshot would give it new objects
// for every route, so every apply, one route edited among 3,000, would compile them all again
// and copy them all across. So each route of a hand-over is either a route the thread already
// holds, as its number alone, or a new one with the number it gets. A listener's policy goes the
// same way: a worker keeps the compiled routes of a listener while its policy is the object it
// was (routing/compile.ts), and a Gateway-level policy is on most listeners. The rest of the
// snapshot (binds, listeners, TLS) is copied as before, being small.
//
// A route is "the same" only as the same object in the main thread's snapshots: the snapshot
// source keeps the objects of unchanged routes from one snapshot to the next (the controller's
// deltas) and the main thread's own compile relies on it; snapshots are never mutated. A route
// that is equal but not the same object (a whole snapshot from a file reload) is sent again.
//
// A hand-over relative to another one (`base`) is refused by a thread that does not hold that
// one (it was restarted, or missed it): the pool sends such a thread the whole hand-over instead.
import type { ListenerIR, PolicyIR, ProxySnapshot, RouteIR } from '@tollgate/api';
import { secretPlaces, restoreSecrets, type SecretPlaces } from './snapshot-secrets.js';

/**
 * A route the thread holds from the last hand-over (its number alone), or a new one and its
 * number. A held route crosses as a number, not an object: at 3,000 routes of which one
 * changed, the message and its clone are then an array of numbers and one route.
 */
export type HandedRoute = number | { readonly id: number; readonly route: RouteIR };

/** A listener's policy: none, one the thread holds (its number), or a new one and its number. */
export type HandedPolicy = null | number | { readonly id: number; readonly policy: PolicyIR };

type HandedListener<L> = L extends ListenerIR ? Omit<L, 'routes' | 'policy'> & { readonly policy: HandedPolicy; readonly routes: readonly HandedRoute[] } : never;

/** A snapshot whose listeners' routes are handed routes. */
export interface HandedSnapshot extends Omit<ProxySnapshot, 'binds'> {
  readonly binds: readonly (Omit<ProxySnapshot['binds'][number], 'listeners'> & { readonly listeners: readonly HandedListener<ListenerIR>[] })[];
}

export interface Handover {
  /** This hand-over's number: the next one may be relative to it. */
  readonly seq: number;
  /** The hand-over whose routes the numbers name; null: whole, every route included. */
  readonly base: number | null;
  readonly snapshot: HandedSnapshot;
  /** The Secrets of what is copied (the routes the thread holds keep theirs): ./snapshot-secrets.ts. */
  readonly secrets: SecretPlaces;
}

/** One snapshot to hand over: relative to the previous hand-over, or whole (made once, when a thread needs it). */
export interface Outgoing {
  readonly seq: number;
  readonly relative: Handover;
  whole(): Handover;
}

/**
 * `snapshot` with each listener's policy (when it has one) and routes named in listing order:
 * `ids[i]` is the number of the i-th, sent alone when `held[i]` (null: none held, the whole).
 */
function handed(snapshot: ProxySnapshot, ids: readonly number[], held: readonly boolean[] | null): HandedSnapshot {
  let at = 0;
  const policy = (p: PolicyIR): HandedPolicy => {
    const i = at++;
    return held?.[i] ? ids[i]! : { id: ids[i]!, policy: p };
  };
  const route = (r: RouteIR): HandedRoute => {
    const i = at++;
    return held?.[i] ? ids[i]! : { id: ids[i]!, route: r };
  };
  return {
    ...snapshot,
    binds: snapshot.binds.map((b) => ({
      ...b,
      listeners: b.listeners.map((l) => ({ ...l, policy: l.policy === null ? null : policy(l.policy), routes: l.routes.map(route) })),
    })),
  };
}

function sealed(seq: number, base: number | null, snapshot: HandedSnapshot): Handover {
  return { seq, base, snapshot, secrets: secretPlaces(snapshot) };
}

/** An object's number, the hand-over that last listed it, and whether the thread holding the one before that holds it. */
interface Numbered {
  readonly id: number;
  seq: number;
  held: boolean;
}

/**
 * Numbers of objects (routes, policies) by identity, kept from one hand-over to the next. Each
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

/** The main thread's side: numbers the routes and listener policies of each snapshot, keeping the numbers of those it handed over last time. */
export class HandoverSender {
  readonly #routes = new Numbering<RouteIR>();
  readonly #policies = new Numbering<PolicyIR>();
  #seq = 0;

  next(snapshot: ProxySnapshot): Outgoing {
    const base = this.#seq;
    const seq = ++this.#seq;
    // Per listing in order (each listener's policy, then its routes): its number, and whether
    // the thread holding `base` holds it (then it crosses as its number).
    const ids: number[] = [];
    const held: boolean[] = [];
    const note = (n: Numbered): void => {
      ids.push(n.id);
      held.push(n.held);
    };
    for (const b of snapshot.binds) {
      for (const l of b.listeners) {
        if (l.policy !== null) note(this.#policies.list(l.policy, seq, base));
        for (const r of l.routes) note(this.#routes.list(r, seq, base));
      }
    }
    this.#routes.sweep(seq);
    this.#policies.sweep(seq);
    let whole: Handover | null = null;
    return { seq, relative: sealed(seq, base, handed(snapshot, ids, held)), whole: () => (whole ??= sealed(seq, null, handed(snapshot, ids, null))) };
  }
}

/** Why a thread cannot take a hand-over: it does not hold what it refers to. */
export class HandoverGap extends Error {}

/** A worker thread's side: the routes and listener policies of the hand-over it applied last, by number. */
export class HandoverReceiver {
  #seq: number | null = null;
  #routes = new Map<number, RouteIR>();
  #policies = new Map<number, PolicyIR>();

  /**
   * The snapshot of `h` (its Secrets put back), the routes and policies this thread holds taken
   * by reference; `applied()` once the runtime serves it, so the next hand-over may refer to it.
   */
  open(h: Handover): { readonly snapshot: ProxySnapshot; readonly applied: () => void } {
    if (h.base !== null && h.base !== this.#seq) {
      throw new HandoverGap(`config hand-over ${h.seq} is relative to hand-over ${h.base}, and this thread holds ${this.#seq ?? 'none'}`);
    }
    restoreSecrets(h.snapshot, h.secrets);
    const routes = new Map<number, RouteIR>();
    const policies = new Map<number, PolicyIR>();
    const takeRoute = (w: HandedRoute): RouteIR => take(w, this.#routes, routes, 'route', (x) => x.route);
    const takePolicy = (w: HandedPolicy): PolicyIR | null => (w === null ? null : take(w, this.#policies, policies, 'listener policy', (x) => x.policy));
    const take = <T, W extends { readonly id: number }>(w: number | W, held: ReadonlyMap<number, T>, into: Map<number, T>, what: string, object: (w: W) => T): T => {
      if (typeof w === 'number') {
        const o = held.get(w);
        if (o === undefined) throw new HandoverGap(`config hand-over ${h.seq} refers to ${what} ${w}, which hand-over ${h.base} did not have`);
        into.set(w, o);
        return o;
      }
      const o = object(w);
      into.set(w.id, o);
      return o;
    };
    const snapshot: ProxySnapshot = {
      ...h.snapshot,
      binds: h.snapshot.binds.map((b) => ({ ...b, listeners: b.listeners.map((l) => ({ ...l, policy: takePolicy(l.policy), routes: l.routes.map(takeRoute) })) })),
    };
    return {
      snapshot,
      applied: () => {
        this.#seq = h.seq;
        this.#routes = routes;
        this.#policies = policies;
      },
    };
  }
}
