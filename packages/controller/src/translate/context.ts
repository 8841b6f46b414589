// The inputs, indexed once per translation (the dependency lists' indexes only when those lists
// changed): every lookup translation makes afterwards is a map access, so the cost stays linear
// in the number of objects.
import type { V1ConfigMap, V1Secret } from '@kubernetes/client-node';
import { DEFAULT_LIMITS, type EvaluationLimits } from '@tollgate/api';
import { parseAllowList } from '../proxy-settings/image-policy.js';
import type { ParameterPolicy } from '../proxy-settings/parameters.js';
import { DEFAULT_PROXY_SETTINGS } from '../proxy-settings/defaults.js';
import type { Gateway, HTTPRoute, ListenerSet, TLSRoute } from '../types/gateway-api.js';
import { asHTTPRoute } from './grpcroute.js';
import { dependenciesOf, type DependencyChange, type DependencyIndexes } from './dependency-indexes.js';
import { compareAge, keyOf, listenerSetParentKey } from './keys.js';
import { inKeyOrder } from './key-order.js';
import type { Resources, TranslateOptions } from './types.js';

/** Label the API server sets on every Namespace; selectors commonly use it. */
const NAMESPACE_NAME_LABEL = 'kubernetes.io/metadata.name';

/** The inputs of one translation: the dependency indexes (kept across translations), the rest built for it. */
export interface Context extends Omit<DependencyIndexes, 'secretsIn'> {
  readonly controllerName: string;
  readonly gatewayApiVersion: string | null;
  /** Bounds every route's regexes and every policy's expressions are checked against. */
  readonly limits: EvaluationLimits;
  namespaceLabels(namespace: string): Readonly<Record<string, string>>;
  readonly gateways: ReadonlyMap<string, Gateway>;
  /** The ListenerSets whose parentRef names this Gateway (`<namespace>/<name>`), in precedence order. */
  listenerSetsOf(gateway: string): readonly { readonly key: string; readonly listenerSet: ListenerSet }[];
  /** HTTPRoutes by `<namespace>/<name>`, in key order (the status report relies on it). */
  readonly httpRoutes: ReadonlyMap<string, HTTPRoute>;
  /** GRPCRoutes by `<namespace>/<name>`, in key order, each as the HTTPRoute it is equivalent to (grpcroute.ts). */
  readonly grpcRoutes: ReadonlyMap<string, HTTPRoute>;
  /** TLSRoutes by `<namespace>/<name>`, in key order. */
  readonly tlsRoutes: ReadonlyMap<string, TLSRoute>;
  /** The Secrets read whole of one namespace, by name: what a policy's secretSelector chooses from. */
  secretsIn(namespace: string): readonly V1Secret[];
  /** A ConfigMap read whole (proxy-settings/parameters.ts takes it for parameters only with its label). */
  readonly configMap: (namespace: string, name: string) => V1ConfigMap | undefined;
  /** What the cluster admin decided about proxy settings (the defaults, the images Gateways may choose). */
  readonly parameters: ParameterPolicy;
  /** Computes a value once per translation (e.g. the endpoints of a Service port many routes use). */
  memo<T>(key: string, make: () => T): T;
  /**
   * Changes whenever the Services, EndpointSlices, Backends, ReferenceGrants, BackendTLSPolicies,
   * Secrets or ConfigMaps differ (by object) from the previous translation's: a route's rules
   * checked against them in a translation of the same epoch need no check again (see cachedRules
   * in ./httproute.ts). Their indexes are kept across translations (./dependency-indexes.ts).
   */
  readonly dependencyEpoch: number;
  /**
   * When only Services, EndpointSlices and Backends changed since the epoch before this one: the
   * keys that did. What was checked in that epoch and depends on none of them holds in this one.
   */
  readonly dependencyChange: DependencyChange | null;
}

export function buildContext(resources: Resources, options: TranslateOptions): Context {
  const labels = new Map<string, Readonly<Record<string, string>>>();
  for (const ns of resources.namespaces) {
    const name = ns.metadata?.name;
    if (name) labels.set(name, { ...(ns.metadata?.labels ?? {}), [NAMESPACE_NAME_LABEL]: name });
  }
  const { epoch, change, indexes } = dependenciesOf(resources);
  const { services, endpointSlices, configMaps, secrets, secretsIn, grants, backendTls, backends } = indexes;
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
    dependencyChange: change,
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
