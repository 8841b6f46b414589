// Gateway status.addresses: the ClusterIP(s) of the Service the deployer made for the Gateway,
// read from the informer cache (Services are watched, so the status follows the Service).
import type { KubernetesObject, V1Service } from '@kubernetes/client-node';
import type { Gateway } from '../types/gateway-api.js';
import { MANAGED_BY, MANAGED_BY_LABEL, proxyName } from './names.js';

export interface GatewayStatusAddress {
  readonly type: 'IPAddress';
  readonly value: string;
}

/** The addresses, or [] while the Service does not exist or has no IP yet. */
export function gatewayAddresses(gateway: Gateway, service: (name: string, namespace: string) => KubernetesObject | undefined): GatewayStatusAddress[] {
  const ns = gateway.metadata.namespace;
  if (!ns) return [];
  const svc: V1Service | undefined = service(proxyName(gateway), ns);
  if (!svc || svc.metadata?.labels?.[MANAGED_BY_LABEL] !== MANAGED_BY) return [];
  const ips = svc.spec?.clusterIPs ?? (svc.spec?.clusterIP ? [svc.spec.clusterIP] : []);
  return ips.filter((ip) => ip && ip !== 'None').map((value) => ({ type: 'IPAddress', value }));
}
