// TLSRoute: which TLS listeners each route attaches to (parentRefs, allowedRoutes, hostnames
// intersected with the listener's, as for HTTPRoute), its backendRefs as stream backends, and
// its status per parent. A TLSRoute has no matches: the server name is all that routes it.
import type { StreamBackendIR, TlsRouteIR } from '@tollgate/api';
import { serviceEndpoints, serviceHost } from './backendrefs.js';
import { condition, fail, ok, type Verdict } from './conditions.js';
import type { Context } from './context.js';
import type { GatewayState } from './gateway.js';
import { fullRef, matchParent, type Attachment, type TranslatedRoute } from './httproute.js';
import { compareStrings, createdAt, generationOf } from './keys.js';
import { GATEWAY_GROUP, type TLSRoute, type TLSRouteBackendRef } from '../types/gateway-api.js';
import type { RouteParentStatusReport } from './types.js';

const KIND = 'TLSRoute';

/** A TLSRoute as an HTTPRoute is translated, its backends in place of rules (it has no matches: one route, every rule's backends together). */
export type TranslatedTlsRoute = Omit<TranslatedRoute, 'kind' | 'route' | 'rules' | 'sent'> & { readonly route: TLSRoute; readonly backends: readonly StreamBackendIR[] };

/**
 * A backendRef: a Service port (across namespaces with a ReferenceGrant to TLSRoutes). An
 * unresolved one stays as an `invalid` backend with its weight: its share of connections is
 * closed (Gateway API: it is not given to the other backends).
 */
function resolveStreamBackend(ref: TLSRouteBackendRef, routeNamespace: string, path: string, ctx: Context): { ir: StreamBackendIR; verdict: Verdict } {
  const group = ref.group ?? '';
  const kind = ref.kind ?? 'Service';
  const namespace = ref.namespace ?? routeNamespace;
  const weight = ref.weight ?? 1;
  const invalid = (reason: string, message: string) => ({ ir: { kind: 'invalid' as const, name: `${namespace}/${ref.name}`, weight, reason }, verdict: fail(reason, `${path}: ${message}`) });
  if (group !== '' || kind !== 'Service') return invalid('InvalidKind', `${group ? `${group}/` : ''}${kind} is not a supported backend of a TLSRoute; use a core Service`);
  if (!ctx.grants.permits({ group: GATEWAY_GROUP, kind: KIND, namespace: routeNamespace }, { group: '', kind: 'Service', namespace, name: ref.name }))
    return invalid('RefNotPermitted', `Service ${namespace}/${ref.name} is in another namespace; a ReferenceGrant in ${namespace} must allow TLSRoutes of ${routeNamespace}`);
  const svc = ctx.services.get(`${namespace}/${ref.name}`);
  if (!svc) return invalid('BackendNotFound', `Service ${namespace}/${ref.name} does not exist`);
  if (ref.port === undefined) return invalid('BackendNotFound', `port is required for Service ${namespace}/${ref.name}`);
  const port = svc.spec?.ports?.find((p) => p.port === ref.port);
  if (!port) return invalid('BackendNotFound', `Service ${namespace}/${ref.name} has no port ${ref.port}`);
  return { ir: { kind: 'service', name: serviceHost(ref.name, namespace, ref.port), endpoints: serviceEndpoints(ctx, namespace, ref.name, port), weight }, verdict: ok('ResolvedRefs', 'all references resolved') };
}

function translateBackends(route: TLSRoute, ctx: Context): { backends: StreamBackendIR[]; refs: Verdict } {
  const ns = route.metadata.namespace ?? '';
  let refs: Verdict | null = null;
  const backends = (route.spec.rules ?? []).flatMap((rule, ri) =>
    (rule.backendRefs ?? []).map((ref, bi) => {
      const r = resolveStreamBackend(ref, ns, `spec.rules[${ri}].backendRefs[${bi}]`, ctx);
      if (!r.verdict.ok) refs ??= r.verdict;
      return r.ir;
    }),
  );
  return { backends, refs: refs ?? ok('ResolvedRefs', 'all references resolved') };
}

function translateTlsRoute(key: string, route: TLSRoute, gateways: ReadonlyMap<string, GatewayState>, ctx: Context): TranslatedTlsRoute {
  const ns = route.metadata.namespace ?? '';
  const gen = generationOf(route.metadata);
  const { backends, refs } = translateBackends(route, ctx);
  const parents: RouteParentStatusReport[] = [];
  const attachments: Attachment[] = [];
  for (const raw of route.spec.parentRefs ?? []) {
    const ref = fullRef(raw, ns);
    if (ref.group !== GATEWAY_GROUP || ref.kind !== 'Gateway') continue;
    const g = gateways.get(`${ref.namespace}/${ref.name}`);
    if (!g) continue; // not a Gateway this controller serves
    const { accepted, attachments: found } = matchParent(route, ref, g, ctx, KIND);
    for (const a of found) {
      if (attachments.some((x) => x.listener === a.listener)) continue;
      attachments.push(a);
    }
    parents.push({
      parentRef: ref,
      controllerName: ctx.controllerName,
      conditions: [condition('Accepted', accepted.ok, accepted.reason, accepted.message, gen), condition('ResolvedRefs', refs.ok, refs.reason, refs.message, gen)],
    });
  }
  return { key, route, backends, attachments, status: { namespace: ns, name: route.metadata.name, generation: gen, parents } };
}

/** TLSRoutes in Gateway API precedence order (oldest first, then namespace/name). */
export function translateTlsRoutes(ctx: Context, gateways: ReadonlyMap<string, GatewayState>): TranslatedTlsRoute[] {
  return [...ctx.tlsRoutes]
    .map(([key, route]) => ({ key, route, at: createdAt(route.metadata) }))
    .sort((a, b) => (a.at === b.at ? compareStrings(a.key, b.key) : a.at < b.at ? -1 : 1))
    .map(({ key, route }) => translateTlsRoute(key, route, gateways, ctx));
}

/** The route as a listener serves it: its hostnames there (the intersection with the listener's). */
export function tlsRouteIR(tr: TranslatedTlsRoute, hostnames: readonly string[]): TlsRouteIR {
  const ns = tr.route.metadata.namespace ?? '';
  return { name: `${ns}/${tr.route.metadata.name}`, origin: { kind: 'TLSRoute', namespace: ns, name: tr.route.metadata.name }, hostnames: [...hostnames], backends: tr.backends };
}
