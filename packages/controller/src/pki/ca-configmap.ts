// The `tollgate-ca` ConfigMap of each namespace with a Gateway of our class: the CA's
// certificate (never its key) under `ca.crt`, which the deployer mounts into every proxy pod.
// Pure. Every Gateway of the namespace is an owner (not the controller of it), so the
// cluster's garbage collector removes the ConfigMap with the last of them; nothing has to
// list ConfigMaps to prune them.
import type { V1ConfigMap } from '@kubernetes/client-node';
import type { Gateway } from '../types/gateway-api.js';

export const CA_CONFIGMAP = 'tollgate-ca';
export const CA_CONFIGMAP_KEY = 'ca.crt';

export function renderCaConfigMaps(gateways: readonly Gateway[], caCertificate: string): V1ConfigMap[] {
  const byNamespace = new Map<string, Gateway[]>();
  for (const g of gateways) {
    const ns = g.metadata.namespace;
    if (!ns || !g.metadata.uid) continue;
    byNamespace.set(ns, [...(byNamespace.get(ns) ?? []), g]);
  }
  return [...byNamespace.keys()].sort().map((namespace) => ({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: {
      name: CA_CONFIGMAP,
      namespace,
      labels: { 'app.kubernetes.io/managed-by': 'tollgate', 'app.kubernetes.io/component': 'snapshot-ca' },
      ownerReferences: byNamespace
        .get(namespace)!
        .sort((a, b) => (a.metadata.name < b.metadata.name ? -1 : 1))
        .map((g) => ({ apiVersion: g.apiVersion, kind: 'Gateway', name: g.metadata.name, uid: g.metadata.uid! })),
    },
    data: { [CA_CONFIGMAP_KEY]: caCertificate },
  }));
}
