// The `tollgate-ca` ConfigMap of each namespace with a Gateway of our class: the CA's
// certificate (never its key) under `ca.crt`, which the deployer mounts into every proxy pod.
// Pure. Every Gateway of the namespace is an owner (not the controller of it), so the
// cluster's garbage collector removes the ConfigMap with the last of them; nothing has to
// list ConfigMaps to prune them.
import type { V1ConfigMap } from '@kubernetes/client-node';
import type { Gateway } from '../types/gateway-api.js';

export const CA_CONFIGMAP = 'tollgate-ca';
export const CA_CONFIGMAP_KEY = 'ca.crt';
/** The labels that make a `tollgate-ca` ConfigMap Tollgate's (the publisher never overwrites one without them). */
export const CA_CONFIGMAP_LABELS = { 'app.kubernetes.io/managed-by': 'tollgate', 'app.kubernetes.io/component': 'snapshot-ca' } as const;

/** Whether labels say the ConfigMap is the one Tollgate publishes. */
export function isOurCaConfigMap(labels: Readonly<Record<string, string>> | undefined): boolean {
  return Object.entries(CA_CONFIGMAP_LABELS).every(([k, v]) => labels?.[k] === v);
}

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
      labels: { ...CA_CONFIGMAP_LABELS },
      ownerReferences: byNamespace
        .get(namespace)!
        .sort((a, b) => (a.metadata.name < b.metadata.name ? -1 : 1))
        .map((g) => ({ apiVersion: g.apiVersion, kind: 'Gateway', name: g.metadata.name, uid: g.metadata.uid! })),
    },
    data: { [CA_CONFIGMAP_KEY]: caCertificate },
  }));
}
