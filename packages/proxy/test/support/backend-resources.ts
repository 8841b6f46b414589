// The Kubernetes objects of one Gateway `edge/public` (an HTTP listener on `port`) and one
// HTTPRoute sending everything to one Backend resource: what the Backend tests translate,
// with the Backend and the Secrets and ConfigMaps it reads given by each test.
import type { Resources } from '@tollgate/controller';

export const GATEWAY = 'edge/public';

export const meta = (name: string, namespace?: string) => ({ name, ...(namespace ? { namespace } : {}), generation: 1, creationTimestamp: '2026-01-01T00:00:00Z' });

export function backendRouteResources(port: number, backend: Resources['backends'][number], extra: Pick<Resources, 'secrets' | 'configMaps'>): Resources {
  return {
    gatewayClasses: [{ apiVersion: 'gateway.networking.k8s.io/v1', kind: 'GatewayClass', metadata: meta('tollgate'), spec: { controllerName: 'tollgate.dev/gateway-controller' } }],
    gateways: [{ apiVersion: 'gateway.networking.k8s.io/v1', kind: 'Gateway', metadata: meta('public', 'edge'), spec: { gatewayClassName: 'tollgate', listeners: [{ name: 'http', protocol: 'HTTP', port }] } }],
    grpcRoutes: [],
    httpRoutes: [
      {
        apiVersion: 'gateway.networking.k8s.io/v1',
        kind: 'HTTPRoute',
        metadata: meta('chat', 'edge'),
        spec: { parentRefs: [{ name: 'public' }], rules: [{ backendRefs: [{ group: 'tollgate.dev', kind: 'Backend', name: backend.metadata.name }] }] },
      },
    ],
    backendTLSPolicies: [],
    backends: [backend],
    ...extra,
    referenceGrants: [],
    gatewayPolicies: [],
    services: [],
    endpointSlices: [],
    namespaces: [],
  };
}
