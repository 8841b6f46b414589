// How a snapshot the main thread applied reaches a worker thread: relative to the one handed
// over before, when the thread holds it. A worker compiles a snapshot reusing what it compiled
// for the routes of the last one, matched by object identity (routing/compile.ts, the route
// index's in-place update); a structured clone of the whole snapshot would give it new objects
// for every route, so every apply, one route edited among 3,000, would compile them all again
// and copy them all across. So each route of a hand-over is either a route the thread already
// holds, as its number alone, or a new one with the number it gets; the rest of
// the snapshot (binds, listeners, their policies, TLS) is copied as before, being small.
//
// A route is "the same" only as the same object in the main thread's snapshots: the snapshot
// source keeps the objects of unchanged routes from one snapshot to the next (the controller's
// deltas) and the main thread's own compile relies on it; snapshots are never mutated. A route
// that is equal but not the same object (a whole snapshot from a file reload) is sent again.
//
// A hand-over relative to another one (`base`) is refused by a thread that does not hold that
// one (it was restarted, or missed it): the pool sends such a thread the whole hand-over instead.
import type { ListenerIR, ProxySnapshot, RouteIR } from '@tollgate/api';
import { secretPlaces, restoreSecrets, type SecretPlaces } from './snapshot-secrets.js';

/**
 * A route the thread holds from the last hand-over (its number alone), or a new one and its
 * number. A held route crosses as a number, not an object: at 3,000 routes of which one
 * changed, the message and its clone are then an array of numbers and one route.
 */
export type HandedRoute = number | { readonly id: number; readonly route: RouteIR };

type HandedListener<L> = L extends ListenerIR ? Omit<L, 'routes'> & { readonly routes: readonly HandedRoute[] } : never;

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

/** `snapshot` with each listener's routes replaced by `route(r, id)`, in order (`ids` walked alongside). */
function handed(snapshot: ProxySnapshot, ids: readonly number[], route: (r: RouteIR, id: number) => HandedRoute): HandedSnapshot {
  let at = 0;
  return {
    ...snapshot,
    binds: snapshot.binds.map((b) => ({ ...b, listeners: b.listeners.map((l) => ({ ...l, routes: l.routes.map((r) => route(r, ids[at++]!)) })) })),
  };
}

function sealed(seq: number, base: number | null, snapshot: HandedSnapshot): Handover {
  return { seq, base, snapshot, secrets: secretPlaces(snapshot) };
}

/** A route's number, the hand-over that last listed it, and whether the thread holding the one before that holds it. */
interface Numbered {
  readonly id: number;
  seq: number;
  held: boolean;
}

/**
 * The main thread's side: numbers the routes of each snapshot, keeping the numbers of the routes
 * it handed over last time. Each snapshot costs a lookup per route; the table is swept of the
 * routes that left only when some did, so it never outgrows one snapshot.
 */
export class HandoverSender {
  readonly #numbered = new Map<RouteIR, Numbered>();
  #seq = 0;
  #nextId = 1;

  next(snapshot: ProxySnapshot): Outgoing {
    const numbered = this.#numbered;
    const base = this.#seq;
    const seq = ++this.#seq;
    // Per route in order: its number, and whether the thread holding `base` holds it.
    const ids: number[] = [];
    const held: boolean[] = [];
    let distinct = 0;
    for (const b of snapshot.binds) {
      for (const l of b.listeners) {
        for (const r of l.routes) {
          let n = numbered.get(r);
          if (n === undefined) {
            n = { id: this.#nextId++, seq, held: false };
            numbered.set(r, n);
            distinct++;
          } else if (n.seq !== seq) {
            // (A route listed on two listeners is looked at once: its first listing says.)
            n.held = n.seq === base;
            n.seq = seq;
            distinct++;
          }
          ids.push(n.id);
          held.push(n.held);
        }
      }
    }
    if (distinct < numbered.size) for (const [r, n] of numbered) if (n.seq !== seq) numbered.delete(r);
    let at = 0;
    const relative = sealed(seq, base, handed(snapshot, ids, (r, id) => (held[at++] ? id : { id, route: r })));
    let whole: Handover | null = null;
    return { seq, relative, whole: () => (whole ??= sealed(seq, null, handed(snapshot, ids, (r, id) => ({ id, route: r })))) };
  }
}

/** Why a thread cannot take a hand-over: it does not hold what it refers to. */
export class HandoverGap extends Error {}

/** A worker thread's side: the routes of the hand-over it applied last, by number. */
export class HandoverReceiver {
  #seq: number | null = null;
  #routes = new Map<number, RouteIR>();

  /**
   * The snapshot of `h` (its Secrets put back), the routes this thread holds taken by reference;
   * `applied()` once the runtime serves it, so the next hand-over may refer to it.
   */
  open(h: Handover): { readonly snapshot: ProxySnapshot; readonly applied: () => void } {
    if (h.base !== null && h.base !== this.#seq) {
      throw new HandoverGap(`config hand-over ${h.seq} is relative to hand-over ${h.base}, and this thread holds ${this.#seq ?? 'none'}`);
    }
    restoreSecrets(h.snapshot, h.secrets);
    const held = this.#routes;
    const routes = new Map<number, RouteIR>();
    const take = (w: HandedRoute): RouteIR => {
      if (typeof w === 'number') {
        const r = held.get(w);
        if (!r) throw new HandoverGap(`config hand-over ${h.seq} refers to route ${w}, which hand-over ${h.base} did not have`);
        routes.set(w, r);
        return r;
      }
      routes.set(w.id, w.route);
      return w.route;
    };
    const snapshot: ProxySnapshot = { ...h.snapshot, binds: h.snapshot.binds.map((b) => ({ ...b, listeners: b.listeners.map((l) => ({ ...l, routes: l.routes.map(take) })) })) };
    return {
      snapshot,
      applied: () => {
        this.#seq = h.seq;
        this.#routes = routes;
      },
    };
  }
}
