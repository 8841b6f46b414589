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
// makes the part again (every route's memo still saves the routes that did not change).
// TLSRoutes count themselves on the Gateways' listeners (translateTlsRoutes): with any TLSRoute,
// the part is made again, so that no count is made twice on kept listeners.
import { translateGatewayClasses } from './gatewayclass.js';
import { translateGateways, type GatewayState } from './gateway.js';
import { translateRoutes, type TranslatedRoute } from './httproute.js';
import type { Context } from './context.js';
import { sameObjects } from './same-objects.js';
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
}

// The resource lists the part reads whole, compared by object: the controller writes the status
// of Gateways and routes, and the API server's echoes of those writes are taken as the objects
// they echo before translation (./status-echoes.ts), nothing here reading a status.
function listsOf(r: Resources): readonly (readonly unknown[])[] {
  return [r.gatewayClasses, r.gateways, r.listenerSets ?? [], r.httpRoutes, r.grpcRoutes, r.namespaces];
}

let last: { readonly lists: readonly (readonly unknown[])[]; readonly options: TranslateOptions; readonly epoch: number; readonly part: RoutesPart } | null = null;

export function routesPart(resources: Resources, options: TranslateOptions, ctx: Context): RoutesPart {
  const lists = listsOf(resources);
  if (last && reusable(last, lists, resources, options, ctx)) {
    last = { ...last, epoch: ctx.dependencyEpoch };
    return last.part;
  }
  const classes = translateGatewayClasses(resources.gatewayClasses, ctx);
  const gateways = translateGateways(ctx, classes.ours);
  const routes = translateRoutes(ctx, gateways);
  const http = new Map(routes.filter((r) => r.kind === 'HTTPRoute').map((r) => [r.key, r]));
  const grpc = new Map(routes.filter((r) => r.kind === 'GRPCRoute').map((r) => [r.key, r]));
  const part: RoutesPart = {
    classes,
    gateways,
    routes,
    byKind: { HTTPRoute: http, GRPCRoute: grpc },
    // ctx.httpRoutes is in key order already: no second sort of every route's key.
    httpStatus: new Map([...ctx.httpRoutes.keys()].map((key) => [key, http.get(key)!.status] as const)),
    grpcStatus: new Map([...ctx.grpcRoutes.keys()].map((key) => [key, grpc.get(key)!.status] as const)),
  };
  last = { lists: lists.map((x) => [...x]), options, epoch: ctx.dependencyEpoch, part };
  return part;
}

function reusable(before: NonNullable<typeof last>, lists: readonly (readonly unknown[])[], resources: Resources, options: TranslateOptions, ctx: Context): boolean {
  if ((resources.tlsRoutes?.length ?? 0) > 0) return false;
  if (!sameOptions(before.options, options)) return false;
  if (!lists.every((l, i) => sameObjects(l, before.lists[i]!))) return false;
  if (ctx.dependencyEpoch === before.epoch) return true;
  const change = ctx.dependencyChange;
  return change !== null && change.from === before.epoch && change.keys.size === 0;
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
