// GRPCRoute as the HTTPRoute it is equivalent to: a gRPC call is an HTTP/2 POST to
// `/<service>/<method>`, so a method match is a path match and everything else (headers,
// filters, backendRefs, parentRefs, hostnames) has HTTPRoute's shape already. The routes are
// then attached, translated and reported by httproute.ts, which is told the kind (allowedRoutes,
// ReferenceGrants, h2c backends). What a GRPCRoute may not say although the HTTPRoute shape
// could (a filter of HTTPRoute only, a method match without service and method) is kept as a
// problem of the route, reported as UnsupportedValue naming the GRPCRoute's field.
import type { Problem } from '@tollgate/api';
import type { GRPCMethodMatch, GRPCRoute, GRPCRouteFilter, HTTPPathMatch, HTTPRoute, HTTPRouteRule } from '../types/gateway-api.js';

/** Filter types of a GRPCRoute rule or backendRef (v1.6.1); ExtensionRef is refused later, as on an HTTPRoute. */
const GRPC_FILTERS: ReadonlySet<string> = new Set(['RequestHeaderModifier', 'ResponseHeaderModifier', 'RequestMirror', 'ExtensionRef']);

/** The CRD's patterns for Exact values, checked again: an Exact value goes into a path as is. */
const EXACT_SERVICE = /^\.?[a-z_][a-z_0-9]*(\.[a-z_][a-z_0-9]*)*$/i;
const EXACT_METHOD = /^[A-Za-z_][A-Za-z_0-9]*$/;
/** The CRD's maxLength of service and method. */
const MAX_NAME = 1024;

const converted = new WeakMap<GRPCRoute, HTTPRoute>();
const problemsOf = new WeakMap<HTTPRoute, readonly Problem[]>();

function escapeRegex(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** The path match of a method match; a problem (and no match) when the values cannot be one. */
export function methodPath(m: GRPCMethodMatch, path: string, out: Problem[]): HTTPPathMatch | undefined {
  const { service, method } = m;
  const type = m.type ?? 'Exact';
  if (!service && !method) {
    out.push({ path, message: 'sets neither service nor method; set one or both' });
    return undefined;
  }
  for (const [field, value] of [['service', service], ['method', method]] as const) {
    if (value !== undefined && value.length > MAX_NAME) out.push({ path: `${path}.${field}`, message: `is ${value.length} characters; at most ${MAX_NAME}` });
  }
  if (type === 'RegularExpression') {
    // Each part is matched whole, within one path segment's worth of the pattern.
    return { type: 'RegularExpression', value: `/${service ? `(?:${service})` : '[^/]+'}/${method ? `(?:${method})` : '[^/]+'}` };
  }
  if (service !== undefined && service !== '' && !EXACT_SERVICE.test(service))
    out.push({ path: `${path}.service`, message: `${JSON.stringify(service)} is not a gRPC service name (dot-separated identifiers, e.g. grpc.health.v1.Health)` });
  if (method !== undefined && method !== '' && !EXACT_METHOD.test(method)) out.push({ path: `${path}.method`, message: `${JSON.stringify(method)} is not a gRPC method name (an identifier)` });
  if (service && method) return { type: 'Exact', value: `/${service}/${method}` };
  if (service) return { type: 'PathPrefix', value: `/${service}` };
  return { type: 'RegularExpression', value: `/[^/]+/${escapeRegex(method!)}` };
}

function checkFilters(filters: readonly GRPCRouteFilter[] | undefined, path: string, out: Problem[]): void {
  (filters ?? []).forEach((f, i) => {
    if (!GRPC_FILTERS.has(f.type)) out.push({ path: `${path}[${i}].type`, message: `${f.type} is not a GRPCRoute filter; use ${[...GRPC_FILTERS].join(', ')}` });
  });
}

function convertRule(rule: GRPCRoute['spec']['rules'] extends readonly (infer R)[] | undefined ? R : never, path: string, out: Problem[]): HTTPRouteRule {
  checkFilters(rule.filters, `${path}.filters`, out);
  (rule.backendRefs ?? []).forEach((b, i) => checkFilters(b.filters, `${path}.backendRefs[${i}].filters`, out));
  const matches = rule.matches?.map((m, i) => {
    const p = m.method ? methodPath(m.method, `${path}.matches[${i}].method`, out) : undefined;
    return { ...(p ? { path: p } : {}), ...(m.headers ? { headers: m.headers } : {}) };
  });
  return {
    ...(rule.name !== undefined ? { name: rule.name } : {}),
    ...(matches ? { matches } : {}),
    ...(rule.filters ? { filters: rule.filters } : {}),
    ...(rule.backendRefs ? { backendRefs: rule.backendRefs } : {}),
    ...(rule.sessionPersistence !== undefined ? { sessionPersistence: rule.sessionPersistence } : {}),
  };
}

/**
 * The HTTPRoute a GRPCRoute is equivalent to: the same object for the same GRPCRoute object, so
 * the rule and attachment caches of httproute.ts, keyed by the route object, keep working.
 */
export function asHTTPRoute(route: GRPCRoute): HTTPRoute {
  const hit = converted.get(route);
  if (hit) return hit;
  const problems: Problem[] = [];
  const rules = route.spec.rules?.map((r, i) => convertRule(r, `spec.rules[${i}]`, problems));
  const out: HTTPRoute = {
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'HTTPRoute',
    metadata: route.metadata,
    spec: {
      ...(route.spec.parentRefs ? { parentRefs: route.spec.parentRefs } : {}),
      ...(route.spec.hostnames ? { hostnames: route.spec.hostnames } : {}),
      ...(rules ? { rules } : {}),
    },
  };
  converted.set(route, out);
  if (problems.length) problemsOf.set(out, problems);
  return out;
}

/** What the conversion found wrong with the GRPCRoute behind `route` (none for an HTTPRoute). */
export function conversionProblems(route: HTTPRoute): readonly Problem[] {
  return problemsOf.get(route) ?? [];
}
