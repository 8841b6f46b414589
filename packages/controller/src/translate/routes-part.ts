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
import { translateRoutes, type TranslatedRoute } from './httproute.js';
import type { Context } from './context.js';
import { commonEnds, sameObjects } from './same-objects.js';
import type { HTTPRouteStatusReport, Resources, TranslateOptions } from './types.js';

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

let last: { readonly lists: Lists; readonly options: TranslateOptions; readonly epoch: number; readonly part: RoutesPart } | null = null;

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
  const { byKind, attached } = (before && patchedIndex(before.part, routes)) || indexOf(routes);
  const part: RoutesPart = {
    classes,
    gateways,
    routes,
    byKind,
    // ctx.httpRoutes is in key order already: no second sort of every route's key.
    httpStatus: new Map([...ctx.httpRoutes.keys()].map((key) => [key, byKind.HTTPRoute.get(key)!.status] as const)),
    grpcStatus: new Map([...ctx.grpcRoutes.keys()].map((key) => [key, byKind.GRPCRoute.get(key)!.status] as const)),
    attached,
  };
  last = { lists: { parents: lists.parents.map((x) => [...x]), routes: lists.routes.map((x) => [...x]) }, options, epoch: ctx.dependencyEpoch, part };
  return part;
}

type RouteIndex = Pick<RoutesPart, 'byKind' | 'attached'>;

function indexOf(routes: readonly TranslatedRoute[]): RouteIndex {
  const http = new Map<string, TranslatedRoute>();
  const grpc = new Map<string, TranslatedRoute>();
  for (const r of routes) (r.kind === 'HTTPRoute' ? http : grpc).set(r.key, r);
  return { byKind: { HTTPRoute: http, GRPCRoute: grpc }, attached: countAttached(new Map(), routes) };
}

/** The most routes that differ from the last part's for its maps to be patched rather than made again. */
const MAX_PATCH = 64;

/**
 * The last part's maps with the routes that differ from its list taken out and put in, for a
 * part whose Gateway states are the last part's (the attachment counts are by listener state):
 * the translated routes of both lists share a head and a tail of the same objects (./httproute.ts
 * keeps them), and only the stretch between is counted. Null for many changes.
 */
function patchedIndex(last: RoutesPart, routes: readonly TranslatedRoute[]): RouteIndex | null {
  const { head, tail } = commonEnds(last.routes, routes);
  const gone = last.routes.slice(head, last.routes.length - tail);
  const came = routes.slice(head, routes.length - tail);
  if (gone.length + came.length > MAX_PATCH) return null;
  const http = new Map(last.byKind.HTTPRoute);
  const grpc = new Map(last.byKind.GRPCRoute);
  // Out before in: an edited route leaves its old object and comes with its new one under the same key.
  for (const r of gone) (r.kind === 'HTTPRoute' ? http : grpc).delete(r.key);
  for (const r of came) (r.kind === 'HTTPRoute' ? http : grpc).set(r.key, r);
  return { byKind: { HTTPRoute: http, GRPCRoute: grpc }, attached: countAttached(last.attached, came, gone) };
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
