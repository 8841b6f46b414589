// Routes of both kinds in Gateway API precedence order: oldest first, then namespace/name,
// HTTPRoutes before GRPCRoutes of the same key. The order is kept from one translation to the
// next and only what changed is placed again: most translations follow an edit, which leaves
// every route where it was, or an add or delete of a few routes.
import type { HTTPRoute } from '../types/gateway-api.js';
import { compareStrings, createdAt } from './keys.js';
import { changedKeys } from './key-order.js';
import { firstIndex } from '@tollgate/api';

export type RouteKind = 'HTTPRoute' | 'GRPCRoute';

export interface Ordered {
  readonly kind: RouteKind;
  readonly key: string;
  readonly route: HTTPRoute;
  /** createdAt(route.metadata), read once per route object. */
  readonly at: number;
}

function compare(a: Ordered, b: Ordered): number {
  return a.at === b.at ? compareStrings(a.key, b.key) || compareStrings(a.kind, b.kind) : a.at < b.at ? -1 : 1;
}

// The last order, and its entries by kind and key (owned here, updated in place). The order
// is a function of each route's kind, key and creation time only, so an entry whose route is
// the same object, or a new object with the same creation time, keeps its place.
// `maps`: the maps of routes by key the order was made from, by kind (./key-order.ts tells the
// keys that changed since).
let last: { readonly order: readonly Ordered[]; readonly byKey: ReadonlyMap<RouteKind, Map<string, Ordered>>; readonly maps: ReadonlyMap<RouteKind, ReadonlyMap<string, HTTPRoute>> } | null = null;


type Kinds = readonly (readonly [RouteKind, ReadonlyMap<string, HTTPRoute>])[];

/** Every route of `kinds` in precedence order (a list never changed once returned). */
export function precedenceOrder(kinds: Kinds): readonly Ordered[] {
  const before = last;
  if (!before || kinds.length !== before.byKey.size || kinds.some(([kind]) => !before.byKey.has(kind))) return fullOrder(kinds);
  const maps = new Map(kinds);
  const changed = kinds.map(([kind, routes]) => changedKeys(before.maps.get(kind)!, routes));
  if (changed.every((keys) => keys !== null)) {
    const order = patchedOrder(before, kinds, changed, maps);
    if (order) return order;
  }
  const replaced = new Map<Ordered, Ordered>();
  const placed: Ordered[] = []; // new entries, and entries whose creation time changed
  const dropped = new Set<Ordered>();
  let kept = 0;
  let total = 0;
  for (const [kind, routes] of kinds) {
    const byKey = before.byKey.get(kind)!;
    total += routes.size;
    for (const [key, route] of routes) {
      const e = byKey.get(key);
      if (e?.route === route) {
        kept++;
        continue;
      }
      const next = { kind, key, route, at: createdAt(route.metadata) };
      if (e) kept++;
      if (e && e.at === next.at) replaced.set(e, next);
      else {
        if (e) dropped.add(e);
        placed.push(next);
      }
    }
  }
  const removed = before.order.length - kept;
  if (!replaced.size && !placed.length && !removed) {
    last = { ...before, maps };
    return before.order;
  }
  // Placing many one by one costs more than sorting all of them.
  if (placed.length > total / 4) return fullOrder(kinds);
  const routesOf = new Map(kinds);
  const order: Ordered[] = [];
  placed.sort(compare);
  let p = 0;
  for (const e of before.order) {
    if (dropped.size && dropped.has(e)) continue;
    if (removed && !routesOf.get(e.kind)!.has(e.key)) {
      before.byKey.get(e.kind)!.delete(e.key);
      continue;
    }
    const now = replaced.size ? (replaced.get(e) ?? e) : e;
    while (p < placed.length && compare(placed[p]!, now) < 0) order.push(placed[p++]!);
    order.push(now);
  }
  while (p < placed.length) order.push(placed[p++]!);
  for (const e of [...replaced.values(), ...placed]) before.byKey.get(e.kind)!.set(e.key, e);
  last = { order, byKey: before.byKey, maps };
  return order;
}

/** The most entries to place and take out for the order to be spliced rather than merged by a walk. */
const MAX_SPLICE = 64;

/**
 * The last order changed by the keys that changed in each kind's map since it was made (`changed`,
 * as ./key-order.ts tells them): each entry that left, moved or came found or placed by a binary
 * search, no walk over the routes. Null when that is not the simple case (many changes, an entry
 * not where the order says): the caller walks.
 */
function patchedOrder(before: NonNullable<typeof last>, kinds: Kinds, changed: readonly (readonly string[])[], maps: ReadonlyMap<RouteKind, ReadonlyMap<string, HTTPRoute>>): readonly Ordered[] | null {
  const replaced: (readonly [Ordered, Ordered])[] = [];
  const placed: Ordered[] = [];
  const out: Ordered[] = [];
  for (let i = 0; i < kinds.length; i++) {
    const [kind, routes] = kinds[i]!;
    const byKey = before.byKey.get(kind)!;
    for (const key of changed[i]!) {
      const e = byKey.get(key);
      const route = routes.get(key);
      if (route === undefined) {
        if (e) out.push(e);
        continue;
      }
      if (e?.route === route) continue;
      const next = { kind, key, route, at: createdAt(route.metadata) };
      if (e && e.at === next.at) replaced.push([e, next]);
      else {
        if (e) out.push(e);
        placed.push(next);
      }
    }
  }
  if (!replaced.length && !placed.length && !out.length) {
    last = { ...before, maps };
    return before.order;
  }
  if (placed.length + out.length > MAX_SPLICE) return null;
  const order = before.order.slice();
  for (const [e, next] of replaced) {
    const at = firstNotBefore(order, e);
    if (order[at] !== e) return null;
    order[at] = next;
  }
  for (const e of out) {
    const at = firstNotBefore(order, e);
    if (order[at] !== e) return null;
    order.splice(at, 1);
  }
  for (const e of placed.sort(compare)) order.splice(firstNotBefore(order, e), 0, e);
  for (const e of out) before.byKey.get(e.kind)!.delete(e.key);
  for (const e of [...replaced.map(([, next]) => next), ...placed]) before.byKey.get(e.kind)!.set(e.key, e);
  last = { order, byKey: before.byKey, maps };
  return order;
}

/** The index of the first entry of `order` (in precedence order) that does not come before `e`. */
function firstNotBefore(order: readonly Ordered[], e: Ordered): number {
  return firstIndex(order.length, (i) => compare(order[i]!, e) < 0);
}

function fullOrder(kinds: Kinds): readonly Ordered[] {
  // Sorted by creation time read once per route (not parsed again in every comparison), then by key.
  const order = kinds.flatMap(([kind, routes]) => [...routes].map(([key, route]) => ({ kind, key, route, at: createdAt(route.metadata) }))).sort(compare);
  const byKey = new Map(kinds.map(([kind]) => [kind, new Map<string, Ordered>()]));
  for (const e of order) byKey.get(e.kind)!.set(e.key, e);
  last = { order, byKey, maps: new Map(kinds) };
  return order;
}
