// The inputs, indexed once per translation: every lookup translation makes afterwards is a
// map access, so the cost stays linear in the number of objects.
import type { V1ConfigMap, V1EndpointSlice, V1Secret, V1Service } from '@kubernetes/client-node';
import { DEFAULT_LIMITS, type EvaluationLimits } from '@tollgate/api';
import { parseAllowList } from '../proxy-settings/image-policy.js';
import type { ParameterPolicy } from '../proxy-settings/parameters.js';
import { DEFAULT_PROXY_SETTINGS } from '../proxy-settings/defaults.js';
import type { Gateway, HTTPRoute, ListenerSet, TLSRoute, TollgateBackend } from '../types/gateway-api.js';
import { ReferenceGrants } from './referencegrant.js';
import { asHTTPRoute } from './grpcroute.js';
import { indexBackendTls, type BackendTlsIndex } from './backendtlspolicy.js';
import { byKey, compareAge, compareStrings, keyOf, listenerSetParentKey } from './keys.js';
import { inKeyOrder } from './key-order.js';
import type { Resources, TranslateOptions } from './types.js';

/** Label the API server sets on every Namespace; selectors commonly use it. */
const NAMESPACE_NAME_LABEL = 'kubernetes.io/metadata.name';
const SERVICE_NAME_LABEL = 'kubernetes.io/service-name';

export interface Context {
  readonly controllerName: string;
  readonly gatewayApiVersion: string | null;
  /** Bounds every route's regexes and every policy's expressions are checked against. */
  readonly limits: EvaluationLimits;
  namespaceLabels(namespace: string): Readonly<Record<string, string>>;
  readonly services: ReadonlyMap<string, V1Service>;
  /** Backend resources by `<namespace>/<name>`, in key order. */
  readonly backends: ReadonlyMap<string, TollgateBackend>;
  /** EndpointSlices by `<namespace>/<service>`, sorted by name. */
  readonly endpointSlices: ReadonlyMap<string, readonly V1EndpointSlice[]>;
  readonly grants: ReferenceGrants;
  /** BackendTLSPolicies by the Service ports they target. */
  readonly backendTls: BackendTlsIndex;
  readonly gateways: ReadonlyMap<string, Gateway>;
  /** The ListenerSets whose parentRef names this Gateway (`<namespace>/<name>`), in precedence order. */
  listenerSetsOf(gateway: string): readonly { readonly key: string; readonly listenerSet: ListenerSet }[];
  /** HTTPRoutes by `<namespace>/<name>`, in key order (the status report relies on it). */
  readonly httpRoutes: ReadonlyMap<string, HTTPRoute>;
  /** GRPCRoutes by `<namespace>/<name>`, in key order, each as the HTTPRoute it is equivalent to (grpcroute.ts). */
  readonly grpcRoutes: ReadonlyMap<string, HTTPRoute>;
  /** TLSRoutes by `<namespace>/<name>`, in key order. */
  readonly tlsRoutes: ReadonlyMap<string, TLSRoute>;
  /** The Secrets read whole (those listeners and policies reference) by `<namespace>/<name>`. */
  readonly secrets: ReadonlyMap<string, V1Secret>;
  /** The Secrets read whole of one namespace, by name: what a policy's secretSelector chooses from. */
  secretsIn(namespace: string): readonly V1Secret[];
  /** The ConfigMaps read whole (those parametersRefs and policies reference) by `<namespace>/<name>`. */
  readonly configMaps: ReadonlyMap<string, V1ConfigMap>;
  /** A ConfigMap read whole (proxy-settings/parameters.ts takes it for parameters only with its label). */
  readonly configMap: (namespace: string, name: string) => V1ConfigMap | undefined;
  /** What the cluster admin decided about proxy settings (the defaults, the images Gateways may choose). */
  readonly parameters: ParameterPolicy;
  /** Computes a value once per translation (e.g. the endpoints of a Service port many routes use). */
  memo<T>(key: string, make: () => T): T;
  /**
   * Changes whenever the Services, EndpointSlices, ReferenceGrants, BackendTLSPolicies or ConfigMaps differ (by object) from
   * the previous translation's: a route's rules checked against them in a translation of the
   * same epoch need no check again (see cachedRules in ./httproute.ts).
   */
  readonly dependencyEpoch: number;
}

// What route rules are translated from besides the route, as the last translation saw it (its
// own copies of the lists: a caller may reuse and change an array between calls).
let lastDependencies: readonly (readonly unknown[])[] = [];
let dependencyEpoch = 0;

function sameObjects(a: readonly unknown[], b: readonly unknown[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** The epoch of these inputs' dependencies: the last one when they are the same objects in the same order, a new one otherwise. */
function dependencyEpochOf(resources: Resources): number {
  const now = [resources.services, resources.endpointSlices, resources.referenceGrants, resources.backends ?? [], resources.backendTLSPolicies, resources.secrets, resources.configMaps];
  if (now.length !== lastDependencies.length || !now.every((list, i) => sameObjects(list, lastDependencies[i]!))) {
    dependencyEpoch++;
    lastDependencies = now.map((list) => [...list]);
  }
  return dependencyEpoch;
}

/** The indexes of the dependency lists (dependencyEpochOf's), which only those lists determine. */
type DependencyIndexes = Pick<Context, 'services' | 'endpointSlices' | 'configMaps' | 'secrets' | 'grants' | 'backendTls' | 'backends'> & {
  /** Context.secretsIn's answers, by namespace. */
  readonly secretsIn: ReadonlyMap<string, readonly V1Secret[]>;
};

// The last translation's dependency indexes and their epoch: a translation of the same epoch
// (the same objects in the same order: a route edit, a policy patch) reuses them instead of
// indexing every Service, EndpointSlice and Secret again. Nothing mutates an index once built.
let lastIndexes: { readonly epoch: number; readonly indexes: DependencyIndexes } | null = null;

function dependencyIndexes(resources: Resources, epoch: number): DependencyIndexes {
  if (lastIndexes?.epoch === epoch) return lastIndexes.indexes;
  const services = new Map<string, V1Service>();
  for (const s of resources.services) {
    if (s.metadata?.name && s.metadata.namespace) services.set(`${s.metadata.namespace}/${s.metadata.name}`, s);
  }
  const slices = new Map<string, V1EndpointSlice[]>();
  for (const slice of resources.endpointSlices) {
    const service = slice.metadata?.labels?.[SERVICE_NAME_LABEL];
    const ns = slice.metadata?.namespace;
    if (!service || !ns) continue;
    const key = `${ns}/${service}`;
    const list = slices.get(key);
    if (list) list.push(slice);
    else slices.set(key, [slice]);
  }
  for (const list of slices.values()) list.sort((a, b) => ((a.metadata?.name ?? '') < (b.metadata?.name ?? '') ? -1 : 1));
  const configMaps = new Map(resources.configMaps.filter((c) => c.metadata?.name && c.metadata.namespace).map((c) => [`${c.metadata!.namespace}/${c.metadata!.name}`, c]));
  const secrets = new Map(resources.secrets.filter((s) => s.metadata?.name && s.metadata.namespace).map((s) => [`${s.metadata!.namespace}/${s.metadata!.name}`, s]));
  const secretsIn = new Map<string, V1Secret[]>();
  for (const [key, s] of [...secrets].sort(([a], [b]) => compareStrings(a, b))) {
    const ns = key.slice(0, key.indexOf('/'));
    const list = secretsIn.get(ns);
    if (list) list.push(s);
    else secretsIn.set(ns, [s]);
  }
  const indexes: DependencyIndexes = {
    services,
    endpointSlices: slices,
    configMaps,
    secrets,
    secretsIn,
    grants: new ReferenceGrants(resources.referenceGrants),
    backendTls: indexBackendTls(resources.backendTLSPolicies, (namespace, name) => configMaps.get(`${namespace}/${name}`)),
    backends: new Map(byKey(resources.backends ?? []).map((b) => [keyOf(b.metadata), b])),
  };
  lastIndexes = { epoch, indexes };
  return indexes;
}

export function buildContext(resources: Resources, options: TranslateOptions): Context {
  const labels = new Map<string, Readonly<Record<string, string>>>();
  for (const ns of resources.namespaces) {
    const name = ns.metadata?.name;
    if (name) labels.set(name, { ...(ns.metadata?.labels ?? {}), [NAMESPACE_NAME_LABEL]: name });
  }
  const epoch = dependencyEpochOf(resources);
  const { services, endpointSlices, configMaps, secrets, secretsIn, grants, backendTls, backends } = dependencyIndexes(resources, epoch);
  const listenerSets = new Map<string, { key: string; listenerSet: ListenerSet }[]>();
  for (const ls of [...(resources.listenerSets ?? [])].sort((a, b) => compareAge(a.metadata, b.metadata))) {
    const parent = listenerSetParentKey(ls);
    if (!parent) continue;
    const list = listenerSets.get(parent);
    const entry = { key: keyOf(ls.metadata), listenerSet: ls };
    if (list) list.push(entry);
    else listenerSets.set(parent, [entry]);
  }
  const memo = new Map<string, unknown>();
  // The controller checks the flag at start; a list that does not parse here allows nothing.
  const allowList = parseAllowList(options.gatewayProxyImages ?? []);
  return {
    dependencyEpoch: epoch,
    memo: <T>(key: string, make: () => T): T => {
      if (memo.has(key)) return memo.get(key) as T;
      const value = make();
      memo.set(key, value);
      return value;
    },
    controllerName: options.controllerName,
    gatewayApiVersion: options.gatewayApiVersion ?? null,
    limits: options.limits ?? DEFAULT_LIMITS,
    namespaceLabels: (namespace) => labels.get(namespace) ?? { [NAMESPACE_NAME_LABEL]: namespace },
    services,
    backends,
    endpointSlices,
    grants,
    backendTls,
    gateways: inKeyOrder('Gateway', resources.gateways),
    listenerSetsOf: (gateway) => listenerSets.get(gateway) ?? [],
    httpRoutes: inKeyOrder('HTTPRoute', resources.httpRoutes),
    grpcRoutes: inKeyOrder('GRPCRoute', resources.grpcRoutes, asHTTPRoute),
    tlsRoutes: inKeyOrder('TLSRoute', resources.tlsRoutes ?? []),
    configMaps,
    configMap: (namespace, name) => configMaps.get(`${namespace}/${name}`),
    parameters: { defaults: DEFAULT_PROXY_SETTINGS, gatewayImages: allowList.ok ? allowList.list : [], ...(options.gatewayInfrastructureDeniedDomains ? { infrastructureDenied: options.gatewayInfrastructureDeniedDomains } : {}) },
    secrets,
    secretsIn: (namespace) => secretsIn.get(namespace) ?? [],
  };
}
