// The kinds the controller watches: where each is listed and watched, and which field of
// translate()'s Resources it fills. Gateway API v1.6.1 standard channel.
import { CoreV1Api, CustomObjectsApi, DiscoveryV1Api, type KubeConfig, type KubernetesListObject, type KubernetesObject } from '@kubernetes/client-node';
import type { Resources } from '../translate/types.js';
import type { FetchObject } from './referenced.js';

/**
 * How a kind is cached: `full`, every object whole (listed with `list`); `metadata`, every
 * object's name and version only (metadata-watch.ts), and whole only the objects translation
 * references, each read with `fetch` (referenced.ts).
 */
export type CacheForm =
  | { readonly form: 'full'; readonly list: (kc: KubeConfig) => () => Promise<KubernetesListObject<KubernetesObject>> }
  | { readonly form: 'metadata'; readonly fetch: (kc: KubeConfig) => FetchObject };

export interface WatchedKind {
  readonly kind: string;
  readonly resources: keyof Resources;
  readonly group: string;
  readonly version: string;
  readonly plural: string;
  readonly namespaced: boolean;
  /** A custom resource with a status subresource: status writes do not bump generation. */
  readonly hasStatus: boolean;
  /** Path of the collection across all namespaces, for list and watch. */
  readonly path: string;
  /** Field selector of the list and the watch: only these objects reach the cache. */
  readonly fieldSelector?: string;
  /** Label selector of the list and the watch: only these objects reach the cache. */
  readonly labelSelector?: string;
  readonly cache: CacheForm;
}

function custom(kind: string, resources: keyof Resources, group: string, version: string, plural: string, namespaced: boolean): WatchedKind {
  return {
    kind,
    resources,
    group,
    version,
    plural,
    namespaced,
    hasStatus: true,
    path: `/apis/${group}/${version}/${plural}`,
    cache: {
      form: 'full',
      list: (kc) => {
        const api = kc.makeApiClient(CustomObjectsApi);
        return async () => (await api.listClusterCustomObject({ group, version, plural })) as KubernetesListObject<KubernetesObject>;
      },
    },
  };
}

export const GATEWAY_API = 'gateway.networking.k8s.io';

/** The Secrets the controller watches: all but service-account tokens and Helm releases. */
export const SECRET_FIELD_SELECTOR = 'type!=kubernetes.io/service-account-token,type!=helm.sh/release.v1';

export const KINDS: readonly WatchedKind[] = [
  custom('GatewayClass', 'gatewayClasses', GATEWAY_API, 'v1', 'gatewayclasses', false),
  custom('Gateway', 'gateways', GATEWAY_API, 'v1', 'gateways', true),
  custom('ListenerSet', 'listenerSets', GATEWAY_API, 'v1', 'listenersets', true),
  custom('HTTPRoute', 'httpRoutes', GATEWAY_API, 'v1', 'httproutes', true),
  custom('GRPCRoute', 'grpcRoutes', GATEWAY_API, 'v1', 'grpcroutes', true),
  custom('TLSRoute', 'tlsRoutes', GATEWAY_API, 'v1', 'tlsroutes', true),
  custom('ReferenceGrant', 'referenceGrants', GATEWAY_API, 'v1', 'referencegrants', true),
  custom('GatewayPolicy', 'gatewayPolicies', 'tollgate.dev', 'v1alpha1', 'gatewaypolicies', true),
  custom('Backend', 'backends', 'tollgate.dev', 'v1alpha1', 'backends', true),
  custom('BackendTLSPolicy', 'backendTLSPolicies', GATEWAY_API, 'v1', 'backendtlspolicies', true),
  {
    kind: 'Service',
    resources: 'services',
    group: '',
    version: 'v1',
    plural: 'services',
    namespaced: true,
    hasStatus: false,
    path: '/api/v1/services',
    cache: {
      form: 'full',
      list: (kc) => {
        const api = kc.makeApiClient(CoreV1Api);
        return () => api.listServiceForAllNamespaces();
      },
    },
  },
  {
    kind: 'EndpointSlice',
    resources: 'endpointSlices',
    group: 'discovery.k8s.io',
    version: 'v1',
    plural: 'endpointslices',
    namespaced: true,
    hasStatus: false,
    path: '/apis/discovery.k8s.io/v1/endpointslices',
    cache: {
      form: 'full',
      list: (kc) => {
        const api = kc.makeApiClient(DiscoveryV1Api);
        return () => api.listEndpointSliceForAllNamespaces();
      },
    },
  },
  // Certificates of HTTPS listeners and the credentials GatewayPolicies name. RBAC cannot grant
  // a subset of Secrets by reference (a Gateway or policy may name any Secret, in any namespace
  // a ReferenceGrant opens), so the role lists and watches Secrets cluster-wide. Of every
  // Secret the cache keeps metadata, and reads whole only those listeners and policies
  // reference. Service-account tokens and Helm releases are never sent at all: nothing may
  // reference them, and they are the most numerous and the largest.
  {
    kind: 'Secret',
    resources: 'secrets',
    group: '',
    version: 'v1',
    plural: 'secrets',
    namespaced: true,
    hasStatus: false,
    path: '/api/v1/secrets',
    fieldSelector: SECRET_FIELD_SELECTOR,
    cache: {
      form: 'metadata',
      fetch: (kc) => {
        const api = kc.makeApiClient(CoreV1Api);
        return async (namespace, name) => {
          const item = (await api.listNamespacedSecret({ namespace, fieldSelector: `metadata.name=${name},${SECRET_FIELD_SELECTOR}` })).items[0];
          return item && { ...item, apiVersion: 'v1', kind: 'Secret' };
        };
      },
    },
  },
  // Proxy parameters (GatewayClass and Gateway parametersRef, which must carry the label
  // tollgate.dev/parameters) and the CA bundles and JWKS documents GatewayPolicies name. Of every
  // ConfigMap the cache keeps metadata, and reads whole only those a reference names.
  {
    kind: 'ConfigMap',
    resources: 'configMaps',
    group: '',
    version: 'v1',
    plural: 'configmaps',
    namespaced: true,
    hasStatus: false,
    path: '/api/v1/configmaps',
    cache: {
      form: 'metadata',
      fetch: (kc) => {
        const api = kc.makeApiClient(CoreV1Api);
        return async (namespace, name) => {
          const item = (await api.listNamespacedConfigMap({ namespace, fieldSelector: `metadata.name=${name}` })).items[0];
          return item && { ...item, apiVersion: 'v1', kind: 'ConfigMap' };
        };
      },
    },
  },
  {
    kind: 'Namespace',
    resources: 'namespaces',
    group: '',
    version: 'v1',
    plural: 'namespaces',
    namespaced: false,
    hasStatus: false,
    path: '/api/v1/namespaces',
    cache: {
      form: 'full',
      list: (kc) => {
        const api = kc.makeApiClient(CoreV1Api);
        return () => api.listNamespace();
      },
    },
  },
];

export function kindOf(name: string): WatchedKind {
  const k = KINDS.find((x) => x.kind === name);
  if (!k) throw new Error(`not a watched kind: ${name}`);
  return k;
}
