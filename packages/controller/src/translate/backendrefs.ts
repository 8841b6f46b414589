// backendRefs of an HTTPRoute rule to BackendIR: Services (core group) only, the named port;
// another namespace only with a ReferenceGrant. The ready endpoints of its EndpointSlices are
// not part of the backend: the snapshot lists them once per Service port (./snapshot.ts), so an
// endpoint change leaves the routes to the Service as they were.
// An unresolved reference stays in the IR as `invalid` so it keeps its share of the requests.
import type { V1EndpointSlice, V1Service, V1ServicePort } from '@kubernetes/client-node';
import type { BackendIR, EndpointIR, Problem, ServiceBackendIR } from '@tollgate/api';
import { appProtocolOf, backendProtocol, grpcProtocol } from './app-protocol.js';
import { fail, ok, type Verdict } from './conditions.js';
import type { Context } from './context.js';
import { backendFilters } from './rules.js';
import { BACKEND_GROUP, backendState } from './backend.js';
import { GATEWAY_GROUP, type HTTPBackendRef } from '../types/gateway-api.js';

export function serviceHost(name: string, namespace: string, port: number): string {
  return `${name}.${namespace}.svc.cluster.local:${port}`;
}

/** Ready endpoints of a Service port, sorted and without duplicates. */
export function readyEndpoints(slices: readonly V1EndpointSlice[], port: V1ServicePort): EndpointIR[] {
  const seen = new Set<string>();
  const out: EndpointIR[] = [];
  for (const slice of slices) {
    if (slice.addressType !== 'IPv4' && slice.addressType !== 'IPv6') continue;
    // A slice port is named like the Service port it serves (both unnamed when there is one).
    const sp = (slice.ports ?? []).find((p) => (p.name ?? '') === (port.name ?? ''));
    const number = sp?.port;
    if (number === undefined) continue;
    for (const e of slice.endpoints ?? []) {
      // EndpointSlice: an absent ready condition means ready.
      if (e.conditions?.ready === false) continue;
      for (const address of e.addresses ?? []) {
        const key = `${address}|${number}`;
        if (seen.has(key)) continue;
        seen.add(key);
        out.push({ address, port: number });
      }
    }
  }
  return out.sort((a, b) => (a.address < b.address ? -1 : a.address > b.address ? 1 : a.port - b.port));
}

/** The ready endpoints of a Service port, computed once per translation for every reference to it. */
export function serviceEndpoints(ctx: Context, namespace: string, name: string, port: V1ServicePort): EndpointIR[] {
  return ctx.memo(`endpoints/${namespace}/${name}/${port.port}`, () => readyEndpoints(ctx.endpointSlices.get(`${namespace}/${name}`) ?? [], port));
}

/** The ready endpoints of the Service port a `service` backend names; none when the Service or the port is gone. */
export function backendEndpoints(ctx: Context, backend: Pick<ServiceBackendIR, 'namespace' | 'service' | 'port'>): EndpointIR[] {
  const svc = ctx.services.get(`${backend.namespace}/${backend.service}`);
  const port = svc && servicePort(svc, backend.port);
  return port ? serviceEndpoints(ctx, backend.namespace, backend.service, port) : [];
}

function servicePort(svc: V1Service, port: number): V1ServicePort | undefined {
  return (svc.spec?.ports ?? []).find((p) => p.port === port);
}

export interface ResolvedBackend {
  readonly ir: BackendIR;
  /** ResolvedRefs verdict for this reference. */
  readonly verdict: Verdict;
}

/**
 * A backendRef whose filters cannot run (backendFilterProblems): it keeps its weight, and the
 * requests that fall on it get 500, as for an unresolved reference.
 */
export function unusableFilters(ref: HTTPBackendRef, routeNamespace: string, problems: readonly Problem[]): ResolvedBackend {
  const reason = 'UnsupportedValue';
  const message = `${problems.map((p) => `${p.path}: ${p.message}`).join('; ')}; requests sent to this backendRef get 500 until then`;
  return { ir: { kind: 'invalid', name: `${ref.namespace ?? routeNamespace}/${ref.name}`, weight: ref.weight ?? 1, reason }, verdict: fail(reason, message) };
}

/**
 * A backendRef (or a mirror's) to its BackendIR. `from` is the kind of the route naming it: a
 * ReferenceGrant must allow that kind, and a GRPCRoute's backends speak gRPC: over h2c, or h2
 * over TLS when a BackendTLSPolicy covers them (app-protocol.ts).
 */
export function resolveBackendRef(ref: HTTPBackendRef, routeNamespace: string, path: string, ctx: Context, from: 'HTTPRoute' | 'GRPCRoute' = 'HTTPRoute'): ResolvedBackend {
  const group = ref.group ?? '';
  const kind = ref.kind ?? 'Service';
  const namespace = ref.namespace ?? routeNamespace;
  const weight = ref.weight ?? 1;
  const invalid = (reason: string, message: string, name = `${namespace}/${ref.name}`): ResolvedBackend => ({
    ir: { kind: 'invalid', name, weight, reason },
    verdict: fail(reason, `${path}: ${message}`),
  });
  if (group === BACKEND_GROUP && kind === 'Backend') return resolveTollgateBackend(ref, routeNamespace, namespace, weight, path, ctx, invalid, from);
  if (group !== '' || kind !== 'Service')
    return invalid('InvalidKind', `${group ? `${group}/` : ''}${kind} is not a supported backend; use a core Service or a Backend (group tollgate.dev)`, `${namespace}/${ref.name} (${kind}${group ? `.${group}` : ''})`);
  if (!ctx.grants.permits({ group: GATEWAY_GROUP, kind: from, namespace: routeNamespace }, { group: '', kind: 'Service', namespace, name: ref.name }))
    return invalid('RefNotPermitted', `Service ${namespace}/${ref.name} is in another namespace; a ReferenceGrant in ${namespace} must allow ${from}s of ${routeNamespace}`);
  const svc = ctx.services.get(`${namespace}/${ref.name}`);
  if (!svc) return invalid('BackendNotFound', `Service ${namespace}/${ref.name} does not exist`);
  if (ref.port === undefined) return invalid('BackendNotFound', `port is required for Service ${namespace}/${ref.name}`);
  const port = servicePort(svc, ref.port);
  if (!port) return invalid('BackendNotFound', `Service ${namespace}/${ref.name} has no port ${ref.port}`);
  const filters = backendFilters(ref.filters);
  const resolved = ok('ResolvedRefs', 'all references resolved');
  const tls = ctx.backendTls.forPort(namespace, ref.name, port);
  const protocol = backendProtocol(appProtocolOf(port, ctx.endpointSlices.get(`${namespace}/${ref.name}`) ?? []), tls !== null, from === 'GRPCRoute');
  if (!protocol.ok) return invalid('UnsupportedProtocol', `Service ${namespace}/${ref.name} port ${ref.port}: ${protocol.message}`, serviceHost(ref.name, namespace, ref.port));
  // The reference resolves; its BackendTLSPolicy is broken: its requests fail (5xx) rather than go out unverified.
  if (tls && !tls.ok) return { ir: { kind: 'invalid', name: serviceHost(ref.name, namespace, ref.port), weight, reason: tls.message }, verdict: resolved };
  return {
    ir: {
      kind: 'service',
      name: serviceHost(ref.name, namespace, ref.port),
      namespace,
      service: ref.name,
      port: ref.port,
      weight,
      ...(filters.length ? { filters } : {}),
      ...(tls ? { tls: tls.tls } : {}),
      ...(protocol.protocol ? { protocol: protocol.protocol } : {}),
    },
    verdict: resolved,
  };
}

/** A backendRef to a Backend resource (group tollgate.dev): an `external` backend once the Backend is accepted. */
function resolveTollgateBackend(
  ref: HTTPBackendRef,
  routeNamespace: string,
  namespace: string,
  weight: number,
  path: string,
  ctx: Context,
  invalid: (reason: string, message: string, name?: string) => ResolvedBackend,
  from: 'HTTPRoute' | 'GRPCRoute',
): ResolvedBackend {
  const what = `Backend ${namespace}/${ref.name}`;
  if (!ctx.grants.permits({ group: GATEWAY_GROUP, kind: from, namespace: routeNamespace }, { group: BACKEND_GROUP, kind: 'Backend', namespace, name: ref.name }))
    return invalid('RefNotPermitted', `${what} is in another namespace; a ReferenceGrant in ${namespace} must allow ${from}s of ${routeNamespace}`);
  const b = ctx.backends.get(`${namespace}/${ref.name}`);
  if (!b) return invalid('BackendNotFound', `${what} does not exist`);
  if (ref.port !== undefined && ref.port !== b.spec.port) return invalid('BackendNotFound', `${what} has port ${b.spec.port}, not ${ref.port}; leave port out or write ${b.spec.port}`);
  const state = ctx.memo(`backend/${namespace}/${ref.name}`, () => backendState(b, ctx));
  if (!state.target) return invalid('BackendNotFound', `${what} is not accepted: ${state.accepted.message}`);
  const filters = backendFilters(ref.filters);
  const resolved = ok('ResolvedRefs', 'all references resolved');
  const tls = ctx.backendTls.forBackend(namespace, ref.name);
  // As for a Service: a broken BackendTLSPolicy fails the requests rather than letting them go out unverified.
  if (tls && !tls.ok) return { ir: { kind: 'invalid', name: state.target.name, weight, reason: tls.message }, verdict: resolved };
  // A GRPCRoute's Backend speaks HTTP/2 as its Services do; TLS from a policy or the Backend's own.
  const protocol = from === 'GRPCRoute' ? { protocol: grpcProtocol(tls !== null || state.target.tls !== undefined) } : {};
  return { ir: { ...state.target, weight, ...(tls ? { tls: tls.tls } : {}), ...(filters.length ? { filters } : {}), ...protocol }, verdict: resolved };
}
