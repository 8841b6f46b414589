// Routes of both kinds in Gateway API precedence order: oldest first, then namespace/name,
// HTTPRoutes before GRPCRoutes of the same key. The order is kept from one translation to the
// next and only what changed is placed again: most translations follow an edit, which leaves
// every route where it was, or an add or delete of a few routes.
import type { HTTPRoute } from '../types/gateway-api.js';
import { compareStrings, createdAt } from './keys.js';

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
let last: { readonly order: readonly Ordered[]; readonly byKey: ReadonlyMap<RouteKind, Map<string, Ordered>> } | null = null;


type Kinds = readonly (readonly [RouteKind, ReadonlyMap<string, HTTPRoute>])[];

/** Every route of `kinds` in precedence order (a list never changed once returned). */
export function precedenceOrder(kinds: Kinds): readonly Ordered[] {
  const before = last;
  if (!before || kinds.length !== before.byKey.size || kinds.some(([kind]) => !before.byKey.has(kind))) return fullOrder(kinds);
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
  if (!replaced.size && !placed.length && !removed) return before.order;
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
  last = { order, byKey: before.byKey };
  return order;
}

function fullOrder(kinds: Kinds): readonly Ordered[] {
  // Sorted by creation time read once per route (not parsed again in every comparison), then by key.
  const order = kinds.flatMap(([kind, routes]) => [...routes].map(([key, route]) => ({ kind, key, route, at: createdAt(route.metadata) }))).sort(compare);
  const byKey = new Map(kinds.map(([kind]) => [kind, new Map<string, Ordered>()]));
  for (const e of order) byKey.get(e.kind)!.set(e.key, e);
  last = { order, byKey };
  return order;
}
