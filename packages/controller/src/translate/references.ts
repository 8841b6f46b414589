// The objects translation reads whole from the kinds whose caches hold metadata only (Secrets,
// ConfigMaps; watch/referenced.ts): the certificate Secrets of the HTTPS listeners of our
// Gateways, their backend client certificates and the CA bundles of their client certificate
// validation (spec.tls.frontend), where the Gateway may read them (its
// namespace, or a ReferenceGrant); the CA ConfigMaps of BackendTLSPolicies; the
// parameters ConfigMaps of our GatewayClasses and their Gateways; and the Secrets and
// ConfigMaps GatewayPolicies name, or whose labels a policy's secretSelector chooses in its
// namespace, where the policy may read them. Decided by the same functions translation
// resolves the references with, so the cache reads exactly what translation asks.
import type { KubernetesObject } from '@kubernetes/client-node';
import { classParametersConfigMap, gatewayParametersConfigMap } from '../proxy-settings/parameters.js';
import type { BackendTLSPolicy, Gateway, GatewayClass, GatewayPolicy, ListenerSet, ReferenceGrant, TollgateBackend } from '../types/gateway-api.js';
import { BACKEND_GROUP, backendReferences } from './backend.js';
import { backendTlsConfigMaps } from './backendtlspolicy.js';
import { mayRead, policyRefs, selectSecrets } from './policy-refs.js';
import { ReferenceGrants } from './referencegrant.js';
import { frontendCaObjects } from './frontend-tls.js';
import { certificateSecrets, listenerSecrets } from './tls.js';
import { listenerSetParentKey } from './keys.js';

/** A secretSelector of a policy: a Secret of `namespace` with these labels is wanted. */
export interface SecretSelection {
  readonly namespace: string;
  readonly matchLabels: Readonly<Record<string, string>>;
}

/** `<namespace>/<name>` of each referenced object, by kind; and the selectors, whose matches change when a Secret's labels do. */
export interface ReferencedKeys {
  readonly Secret: ReadonlySet<string>;
  readonly ConfigMap: ReadonlySet<string>;
  readonly secretSelectors: readonly SecretSelection[];
}

export interface ReferencingObjects {
  readonly gatewayClasses: readonly GatewayClass[];
  readonly gateways: readonly Gateway[];
  readonly referenceGrants: readonly ReferenceGrant[];
  readonly gatewayPolicies: readonly GatewayPolicy[];
  /** ListenerSets: the Secrets their HTTPS listeners name. */
  readonly listenerSets?: readonly ListenerSet[];
  readonly backendTLSPolicies: readonly BackendTLSPolicy[];
  /** Backend resources: the Secret of each one's provider key and the ConfigMaps of its CAs. */
  readonly backends?: readonly TollgateBackend[];
  /** Every Secret as the cache holds it (metadata: name, namespace, labels): what selectors choose from. */
  readonly secrets: readonly KubernetesObject[];
}

export function referencedObjects(r: ReferencingObjects, controllerName: string): ReferencedKeys {
  const classes = new Map(r.gatewayClasses.filter((gc) => gc.spec.controllerName === controllerName).map((gc) => [gc.metadata.name, gc]));
  const grants = new ReferenceGrants(r.referenceGrants);
  const secrets = new Set<string>();
  const configMaps = new Set<string>();
  const add = (set: Set<string>, key: string | undefined) => key !== undefined && set.add(key);
  for (const gc of classes.values()) add(configMaps, classParametersConfigMap(gc));
  for (const gw of r.gateways) {
    if (!classes.has(gw.spec.gatewayClassName)) continue;
    for (const k of certificateSecrets(gw, grants)) secrets.add(k);
    const cas = frontendCaObjects(gw, grants);
    for (const k of cas.configMaps) configMaps.add(k);
    for (const k of cas.secrets) secrets.add(k);
    add(configMaps, gatewayParametersConfigMap(gw));
  }
  // The certificates of ListenerSets whose parent is one of those Gateways (allowed or not: that is translation's to say).
  const ours = new Set(r.gateways.filter((gw) => classes.has(gw.spec.gatewayClassName)).map((gw) => `${gw.metadata.namespace}/${gw.metadata.name}`));
  for (const ls of r.listenerSets ?? []) {
    if (ours.has(listenerSetParentKey(ls))) for (const k of listenerSecrets(ls, grants)) secrets.add(k);
  }
  // The CA certificates of every BackendTLSPolicy: which Gateways route to its targets is known only after translation.
  for (const k of backendTlsConfigMaps(r.backendTLSPolicies)) configMaps.add(k);
  // Every GatewayPolicy is Tollgate's, whatever it targets: its Accepted condition depends on its references.
  const selectors: SecretSelection[] = [];
  let byNamespace: Map<string, KubernetesObject[]> | undefined;
  for (const p of r.gatewayPolicies) {
    const ns = p.metadata.namespace ?? '';
    const refs = policyRefs(p);
    for (const o of refs.objects) if (mayRead(ns, o, grants)) (o.kind === 'Secret' ? secrets : configMaps).add(`${o.namespace}/${o.name}`);
    for (const s of refs.selectors) {
      byNamespace ??= secretsByNamespace(r.secrets);
      selectors.push({ namespace: ns, matchLabels: s.matchLabels });
      for (const chosen of selectSecrets(s.matchLabels, byNamespace.get(ns) ?? []).selected) secrets.add(`${ns}/${chosen.metadata?.name ?? ''}`);
    }
  }
  // Every Backend is Tollgate's: its Accepted condition depends on what it reads, where it may.
  for (const b of r.backends ?? []) {
    const ns = b.metadata.namespace ?? '';
    const from = { group: BACKEND_GROUP, kind: 'Backend', namespace: ns };
    const refs = backendReferences(b);
    for (const key of refs.secrets) {
      const [namespace, name] = key.split('/') as [string, string];
      if (grants.permits(from, { group: '', kind: 'Secret', namespace, name })) secrets.add(key);
    }
    for (const key of refs.configMaps) configMaps.add(key);
  }
  return { Secret: secrets, ConfigMap: configMaps, secretSelectors: selectors };
}

function secretsByNamespace(secrets: readonly KubernetesObject[]): Map<string, KubernetesObject[]> {
  const out = new Map<string, KubernetesObject[]>();
  for (const s of secrets) {
    const ns = s.metadata?.namespace;
    if (!ns || !s.metadata?.name) continue;
    const list = out.get(ns);
    if (list) list.push(s);
    else out.set(ns, [s]);
  }
  return out;
}
