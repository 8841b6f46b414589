// The part of a translation that grows with the number of routes: the GatewayClasses, the
// Gateways' state and every HTTPRoute and GRPCRoute attached to them, with their status.
//
// Most translations of a large cluster follow an endpoint change (a rollout, a scale, a pod
// becoming ready), which none of this reads: route rules read the Services and the ports their
// EndpointSlices name, not the endpoints (the snapshot lists those apart, ./service-endpoints.ts).
// Even with every route's memo kept, walking thousands of them to confirm it (and to make their
// attachments, counts and status maps again) was most of such a translation. So when nothing
// this part reads changed since the last translation, the last one's part is the answer, as it
// was: the same objects, which the snapshot build and the status writer then recognize.
//
// What it reads: the lists below (by object), the options, and of the dependency lists only what
// DependencyChange tells by key: Services, Backends and the ports of EndpointSlices. Any other
// dependency change (a ReferenceGrant, a Secret, a ConfigMap, a BackendTLSPolicy) or a key named
// makes the routes again (every route's memo still saves the routes that did not change).
//
// When the routes changed and nothing the Gateways' state is made from did (a route added,
// edited or deleted, or a key named), the last part's Gateway states are kept: a route whose
// memo holds is then the very route translated last time, attachments included, and only the
// routes that changed are translated (./httproute.ts). The attached routes are counted apart
// from the listeners' state for that reason.
import { translateGatewayClasses } from './gatewayclass.js';
import { countAttached, translateGateways, type AttachedRoutes, type GatewayState } from './gateway.js';
import { statusOf, translateRoutes, type TranslatedRoute } from './httproute.js';
import type { Context } from './context.js';
import { commonEnds, sameObjects } from './same-objects.js';
import type { HTTPRouteStatusReport, Resources, TranslateOptions } from './types.js';
import type { HTTPRoute } from '../types/gateway-api.js';
import { changedKeys, recordPatch } from './key-order.js';
import { patchedMap } from './patched-map.js';

export interface RoutesPart {
  readonly classes: ReturnType<typeof translateGatewayClasses>;
  readonly gateways: ReadonlyMap<string, GatewayState>;
  /** HTTPRoutes and GRPCRoutes in precedence order (translateRoutes). */
  readonly routes: readonly TranslatedRoute[];
  readonly byKind: { readonly HTTPRoute: ReadonlyMap<string, TranslatedRoute>; readonly GRPCRoute: ReadonlyMap<string, TranslatedRoute> };
  /** The routes' status by key, in key order. */
  readonly httpStatus: ReadonlyMap<string, HTTPRouteStatusReport>;
  readonly grpcStatus: ReadonlyMap<string, HTTPRouteStatusReport>;
  /** The HTTPRoutes and GRPCRoutes attached through each listener. */
  readonly attached: AttachedRoutes;
}

// The resource lists the part reads whole, compared by object: the controller writes the status
// of Gateways and routes, and the API server's echoes of those writes are taken as the objects
// they echo before translation (./status-echoes.ts), nothing here reading a status. The
// Gateways' state is made from the first four (and the options and dependencies, not from
// Services, EndpointSlices nor Backends); the routes from all of them.
interface Lists {
  readonly parents: readonly (readonly unknown[])[];
  readonly routes: readonly (readonly unknown[])[];
}

function listsOf(r: Resources): Lists {
  return { parents: [r.gatewayClasses, r.gateways, r.listenerSets ?? [], r.namespaces], routes: [r.httpRoutes, r.grpcRoutes] };
}

let last: {
  readonly lists: Lists;
  readonly options: TranslateOptions;
  readonly epoch: number;
  readonly part: RoutesPart;
  /** The routes by key the part's status maps were made from (ctx.httpRoutes, ctx.grpcRoutes). */
  readonly keyed: readonly [ReadonlyMap<string, HTTPRoute>, ReadonlyMap<string, HTTPRoute>];
} | null = null;

export function routesPart(resources: Resources, options: TranslateOptions, ctx: Context): RoutesPart {
  const lists = listsOf(resources);
  const before = last && sameParents(last, lists, options, ctx) ? last : null;
  if (before && lists.routes.every((l, i) => sameObjects(l, before.lists.routes[i]!)) && routesHold(before, ctx)) {
    last = { ...before, epoch: ctx.dependencyEpoch };
    return before.part;
  }
  // Gateway states kept: every route whose memo holds is the same translated route (./httproute.ts).
  const classes = before?.part.classes ?? translateGatewayClasses(resources.gatewayClasses, ctx);
  const gateways = before?.part.gateways ?? translateGateways(ctx, classes.ours);
  const routes = translateRoutes(ctx, gateways);
  // With the Gateway states kept and no dependency a route reads changed, a route object that
  // stayed has the status it had (its memo holds): only the keys that changed are looked up.
  const statusBefore = before && routesHold(before, ctx) ? before : null;
  const part: RoutesPart = {
    classes,
    gateways,
    routes,
    byKind: byKindOf(routes),
    // ctx.httpRoutes is in key order already: no second sort of every route's key.
    httpStatus: statusInKeyOrder(ctx.httpRoutes, statusBefore && { routes: statusBefore.keyed[0], status: statusBefore.part.httpStatus }),
    grpcStatus: statusInKeyOrder(ctx.grpcRoutes, statusBefore && { routes: statusBefore.keyed[1], status: statusBefore.part.grpcStatus }),
    attached: (before && patchedCounts(before.part, routes)) ?? countAttached(new Map(), routes),
  };
  last = { lists: { parents: lists.parents.map((x) => x.slice()), routes: lists.routes.map((x) => x.slice()) }, options, epoch: ctx.dependencyEpoch, part, keyed: [ctx.httpRoutes, ctx.grpcRoutes] };
  return part;
}

/**
 * The routes' status by key, in the order of `routes` (each route's translation holds it,
 * ./httproute.ts). Given the last map and the routes it was made from, whose unchanged routes
 * kept their status: the last map with a status looked up for the keys that changed and those
 * that left taken out (./patched-map.ts), and the new map says which keys those were
 * (recordPatch), for the status writer.
 */
function statusInKeyOrder(
  routes: ReadonlyMap<string, HTTPRoute>,
  before: { readonly routes: ReadonlyMap<string, HTTPRoute>; readonly status: ReadonlyMap<string, HTTPRouteStatusReport> } | null,
): ReadonlyMap<string, HTTPRouteStatusReport> {
  const changed = before && changedKeys(before.routes, routes);
  if (before && changed?.length === 0) return before.status;
  // (changedKeys answers only for a key order patched from the last, itself bounded to a few keys.)
  if (!before || !changed) {
    const out = new Map<string, HTTPRouteStatusReport>();
    for (const [key, route] of routes) out.set(key, statusOf(route));
    return out;
  }
  const set: (readonly [string, HTTPRouteStatusReport])[] = [];
  const removed: string[] = [];
  for (const key of changed) {
    const route = routes.get(key);
    if (route === undefined) removed.push(key);
    else set.push([key, statusOf(route)]);
  }
  const out = patchedMap(before.status, set, removed);
  recordPatch(before.status, out, changed);
  return out;
}

/**
 * The translated routes by kind and key, made when first read: only GatewayPolicies that target
 * routes read them, and a translation after a route was added among thousands need not index them all.
 */
function byKindOf(routes: readonly TranslatedRoute[]): RoutesPart['byKind'] {
  let made: { readonly HTTPRoute: Map<string, TranslatedRoute>; readonly GRPCRoute: Map<string, TranslatedRoute> } | null = null;
  const index = () => {
    if (made === null) {
      made = { HTTPRoute: new Map(), GRPCRoute: new Map() };
      for (const r of routes) made[r.kind].set(r.key, r);
    }
    return made;
  };
  return {
    get HTTPRoute() {
      return index().HTTPRoute;
    },
    get GRPCRoute() {
      return index().GRPCRoute;
    },
  };
}

/** The most routes that differ from the last part's for its counts to be changed rather than made again. */
const MAX_PATCH = 64;

/**
 * The last part's attached counts with the routes that differ from its list counted out and in,
 * for a part whose Gateway states are the last part's (the counts are by listener state): the
 * translated routes of both lists share a head and a tail of the same objects (./httproute.ts
 * keeps them), and only the stretch between is counted. Null for many changes.
 */
function patchedCounts(last: RoutesPart, routes: readonly TranslatedRoute[]): AttachedRoutes | null {
  const { head, tail } = commonEnds(last.routes, routes);
  const gone = last.routes.slice(head, last.routes.length - tail);
  const came = routes.slice(head, routes.length - tail);
  if (gone.length + came.length > MAX_PATCH) return null;
  return countAttached(last.attached, came, gone);
}

/** Whether the Gateways' state of the last part holds: the same options and lists, and no dependency changed but Services, EndpointSlices and Backends. */
function sameParents(before: NonNullable<typeof last>, lists: Lists, options: TranslateOptions, ctx: Context): boolean {
  if (!sameOptions(before.options, options)) return false;
  if (!lists.parents.every((l, i) => sameObjects(l, before.lists.parents[i]!))) return false;
  if (ctx.dependencyEpoch === before.epoch) return true;
  return ctx.dependencyChange !== null && ctx.dependencyChange.from === before.epoch;
}

/** Whether the last part's routes hold, their lists being the same: no dependency changed, or none a route's rules read (no key named). */
function routesHold(before: NonNullable<typeof last>, ctx: Context): boolean {
  return ctx.dependencyEpoch === before.epoch || ctx.dependencyChange?.keys.size === 0;
}

function sameOptions(a: TranslateOptions, b: TranslateOptions): boolean {
  return (
    a.controllerName === b.controllerName &&
    a.gatewayApiVersion === b.gatewayApiVersion &&
    a.limits === b.limits &&
    sameObjects(a.gatewayProxyImages ?? [], b.gatewayProxyImages ?? []) &&
    (a.gatewayInfrastructureDeniedDomains === undefined) === (b.gatewayInfrastructureDeniedDomains === undefined) &&
    sameObjects(a.gatewayInfrastructureDeniedDomains ?? [], b.gatewayInfrastructureDeniedDomains ?? [])
  );
}
