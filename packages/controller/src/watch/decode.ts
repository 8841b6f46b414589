// The shape checks an object must pass before translation sees it. The API server validates
// Tollgate's and the Gateway API's CRDs, but an object stored under an older CRD version, or
// written while a CRD was missing its schema, can still lack what translation relies on. Such
// an object is skipped (translation goes on with the others) and reported once per version
// of it, not once per reconcile.
import type { KubernetesObject } from '@kubernetes/client-node';
import type { WatchedKind } from './kinds.js';

type Check = (o: Record<string, unknown>) => string | undefined;

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const optArray = (v: unknown, path: string) => (v === undefined || Array.isArray(v) ? undefined : `${path} is not a list`);

const spec = (o: Record<string, unknown>) => (isObj(o.spec) ? o.spec : undefined);

/** A route of any kind: parentRefs, hostnames and rules are lists when set. */
const route: Check = (o) => {
  const s = spec(o);
  if (!s) return 'spec is missing';
  return optArray(s.parentRefs, 'spec.parentRefs') ?? optArray(s.hostnames, 'spec.hostnames') ?? optArray(s.rules, 'spec.rules');
};

const CHECKS: Record<string, Check> = {
  GatewayClass: (o) => (typeof spec(o)?.controllerName === 'string' ? undefined : 'spec.controllerName is missing'),
  Gateway: (o) => {
    const s = spec(o);
    if (typeof s?.gatewayClassName !== 'string') return 'spec.gatewayClassName is missing';
    if (!Array.isArray(s.listeners)) return 'spec.listeners is not a list';
    return s.listeners.every(isObj) ? undefined : 'spec.listeners has an entry that is not an object';
  },
  ListenerSet: (o) => {
    const s = spec(o);
    if (!s) return 'spec is missing';
    if (!isObj(s.parentRef) || typeof s.parentRef.name !== 'string') return 'spec.parentRef.name is missing';
    if (!Array.isArray(s.listeners)) return 'spec.listeners is not a list';
    return s.listeners.every(isObj) ? undefined : 'spec.listeners has an entry that is not an object';
  },
  HTTPRoute: route,
  GRPCRoute: route,
  TLSRoute: route,
  ReferenceGrant: (o) => {
    const s = spec(o);
    if (!s) return 'spec is missing';
    return Array.isArray(s.from) && Array.isArray(s.to) ? undefined : 'spec.from and spec.to must be lists';
  },
  GatewayPolicy: (o) => {
    const s = spec(o);
    if (!s) return 'spec is missing';
    if (!Array.isArray(s.targetRefs)) return 'spec.targetRefs is not a list';
    return s.targetRefs.every(isObj) ? undefined : 'spec.targetRefs has an entry that is not an object';
  },
  Backend: (o) => {
    const s = spec(o);
    if (!s) return 'spec is missing';
    if (typeof s.hostname !== 'string') return 'spec.hostname is missing';
    return typeof s.port === 'number' ? undefined : 'spec.port is missing';
  },
  BackendTLSPolicy: (o) => {
    const s = spec(o);
    if (!s) return 'spec is missing';
    if (!Array.isArray(s.targetRefs) || !s.targetRefs.every(isObj)) return 'spec.targetRefs is not a list of objects';
    if (!isObj(s.validation)) return 'spec.validation is missing';
    if (typeof s.validation.hostname !== 'string') return 'spec.validation.hostname is missing';
    return optArray(s.validation.caCertificateRefs, 'spec.validation.caCertificateRefs') ?? optArray(s.validation.subjectAltNames, 'spec.validation.subjectAltNames');
  },
  Service: () => undefined,
  EndpointSlice: (o) => optArray(o.endpoints, 'endpoints'),
  Namespace: () => undefined,
  // Its data is read by the certificate checks (translate/tls.ts), which report what is missing.
  // Proxy parameters: the keys are checked where they are read (proxy-settings/parameters.ts).
  ConfigMap: (o) => (o.data === undefined || (typeof o.data === 'object' && o.data !== null && !Array.isArray(o.data)) ? undefined : 'data is not a map'),
  Secret: (o) => (o.data === undefined || (typeof o.data === 'object' && o.data !== null && !Array.isArray(o.data)) ? undefined : 'data is not a map'),
};

/** Why translation cannot read `obj`, or undefined when it can. */
export function unreadable(kind: WatchedKind, obj: KubernetesObject): string | undefined {
  const o = obj as unknown as Record<string, unknown>;
  const meta = obj.metadata;
  if (!meta || typeof meta.name !== 'string' || meta.name === '') return 'metadata.name is missing';
  if (kind.namespaced && (typeof meta.namespace !== 'string' || meta.namespace === '')) return 'metadata.namespace is missing';
  return CHECKS[kind.kind]?.(o);
}
