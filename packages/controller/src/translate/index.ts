// translate(): Gateway API and GatewayPolicy objects in, per-Gateway proxy snapshots and
// desired status out. Pure, synchronous and deterministic; see ./types.ts for the contract.
import { buildContext } from './context.js';
import { countAttached, gatewayStatus, listenerSetStatuses, type AttachedRoutes, type GatewayState } from './gateway.js';
import { compareStrings } from './keys.js';
import { translateGatewayPolicies } from './gatewaypolicy.js';
import { routesPart } from './routes-part.js';
import { buildSnapshots } from './snapshot.js';
import { endpointsTables } from './service-endpoints.js';
import { translateTlsRoutes } from './tlsroute.js';
import { backendState, backendStatus } from './backend.js';
import { settled } from './status-echoes.js';
import type { Resources, StatusReport, TranslateOptions, TranslateResult } from './types.js';

export type * from './types.js';

export function translate(given: Resources, options: TranslateOptions): TranslateResult {
  const resources = settled(given);
  const ctx = buildContext(resources, options);
  const { classes, gateways, routes, byKind, httpStatus, grpcStatus, attached: routesAttached } = routesPart(resources, options, ctx);
  const policies = translateGatewayPolicies(resources.gatewayPolicies, ctx, gateways, byKind);
  const tlsRoutes = translateTlsRoutes(ctx, gateways);
  const attached = tlsRoutes.length ? countAttached(routesAttached, tlsRoutes) : routesAttached;
  const snapshots = buildSnapshots(gateways, routes, policies.applied, policies.failover, ctx.limits, endpointsTables(ctx), tlsRoutes);
  return {
    snapshots,
    status: {
      gatewayClasses: classes.status,
      gateways: new Map([...gateways].map(([key, g]) => [key, gatewayStatus(g, attached)])),
      ...listenerSetReports(gateways, attached),
      httpRoutes: httpStatus,
      grpcRoutes: grpcStatus,
      tlsRoutes: new Map(tlsRoutes.map((r) => [r.key, r.status])),
      gatewayPolicies: policies.status,
      backends: new Map([...ctx.backends].map(([key, b]) => [key, backendStatus(b, ctx.memo(`backend/${key}`, () => backendState(b, ctx)))])),
      backendTLSPolicies: ctx.backendTls.status(routes, (ns, name, port) => ctx.services.get(`${ns}/${name}`)?.spec?.ports?.find((p) => p.port === port), ctx.controllerName),
    },
  };
}

/** The ListenerSets' status, by key in sorted order; left out when no ListenerSet names a Gateway of ours. */
function listenerSetReports(gateways: ReadonlyMap<string, GatewayState>, attached: AttachedRoutes): Pick<StatusReport, 'listenerSets'> {
  const reports = [...gateways.values()].flatMap((g) => listenerSetStatuses(g, attached)).map((s) => [`${s.namespace}/${s.name}`, s] as const);
  return reports.length ? { listenerSets: new Map(reports.sort(([a], [b]) => compareStrings(a, b))) } : {};
}
