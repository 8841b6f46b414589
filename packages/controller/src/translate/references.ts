// The objects translation reads whole from the kinds whose caches hold metadata only (Secrets,
// parameters ConfigMaps; watch/referenced.ts): the certificate Secrets of the HTTPS listeners of
// our Gateways, where the Gateway may read them (its namespace, or a ReferenceGrant), and the
// parameters ConfigMaps of our GatewayClasses and their Gateways. Decided by the same functions
// translation resolves the references with, so the cache reads exactly what translation asks.
import { classParametersConfigMap, gatewayParametersConfigMap } from '../proxy-settings/parameters.js';
import type { Gateway, GatewayClass, ReferenceGrant } from '../types/gateway-api.js';
import { ReferenceGrants } from './referencegrant.js';
import { certificateSecrets } from './tls.js';

/** `<namespace>/<name>` of each referenced object, by kind. */
export type ReferencedKeys = Readonly<Record<'Secret' | 'ConfigMap', ReadonlySet<string>>>;

export interface ReferencingObjects {
  readonly gatewayClasses: readonly GatewayClass[];
  readonly gateways: readonly Gateway[];
  readonly referenceGrants: readonly ReferenceGrant[];
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
    add(configMaps, gatewayParametersConfigMap(gw));
  }
  return { Secret: secrets, ConfigMap: configMaps };
}
