// A Gateway's addresses as the cluster gave them: status.addresses is the ClusterIP(s) of the
// Service the deployer made for it, read from the informer cache (Services are watched, so the
// status follows the Service). When spec.addresses asks for some (proxy-settings/
// requested-addresses.ts), whether the Service got them decides Programmed: an address the
// API server refused (outside the cluster's Service ranges, another Service's, a family the
// cluster lacks) or one the Service cannot hold is AddressNotUsable; one not yet on the
// Service (a new Service on its way) is AddressNotAssigned.
import type { KubernetesObject, V1Service } from '@kubernetes/client-node';
import { apiErrorCauses, statusCode } from '../kube/errors.js';
import { canonicalIp, requestedAddresses } from '../proxy-settings/requested-addresses.js';
import type { Gateway } from '../types/gateway-api.js';
import { MANAGED_BY, MANAGED_BY_LABEL, proxyName } from './names.js';

export interface GatewayStatusAddress {
  readonly type: 'IPAddress';
  readonly value: string;
}

export type AddressReason = 'AddressNotUsable' | 'AddressNotAssigned';

/** The API server's refusal of the ClusterIPs a Service asked for. */
export interface AddressRefusal {
  readonly clusterIPs: readonly string[];
  readonly message: string;
}

export interface AddressVerdict {
  readonly reason: AddressReason;
  readonly message: string;
}

type ServiceLookup = (name: string, namespace: string) => KubernetesObject | undefined;

/** The deployer's Service of the Gateway, when it exists and is the deployer's. */
function proxyService(gateway: Gateway, service: ServiceLookup): V1Service | undefined {
  const ns = gateway.metadata.namespace;
  const svc: V1Service | undefined = ns ? service(proxyName(gateway), ns) : undefined;
  return svc?.metadata?.labels?.[MANAGED_BY_LABEL] === MANAGED_BY ? svc : undefined;
}

function clusterIPs(svc: V1Service | undefined): string[] {
  const ips = svc?.spec?.clusterIPs ?? (svc?.spec?.clusterIP ? [svc.spec.clusterIP] : []);
  return ips.filter((ip) => ip && ip !== 'None');
}

/** The addresses, or [] while the Service does not exist or has no IP yet. */
export function gatewayAddresses(gateway: Gateway, service: ServiceLookup): GatewayStatusAddress[] {
  return clusterIPs(proxyService(gateway, service)).map((value) => ({ type: 'IPAddress', value }));
}

/** Fields of a Service that carry its addresses: a refusal naming one of them is the address's. */
const ADDRESS_FIELD = /^spec\.(clusterIPs?|ipFamilies|ipFamilyPolicy)(\[|$)/;
const MAX_CAUSE = 300;

/**
 * Why the API server refused a Service's requested ClusterIPs, as the Gateway's condition says
 * it; undefined for any other failure (the pass is retried, as for every failed apply).
 */
export function addressRefusal(obj: KubernetesObject, err: unknown): AddressRefusal | undefined {
  const wanted = obj.kind === 'Service' ? (obj as V1Service).spec?.clusterIPs : undefined;
  if (!wanted?.length || statusCode(err) !== 422) return undefined;
  const causes = apiErrorCauses(err).filter((c) => ADDRESS_FIELD.test(c.field));
  if (!causes.length) return undefined;
  const why = causes.map((c) => `${c.field}: ${c.message.slice(0, MAX_CAUSE)}`).join('; ');
  return {
    clusterIPs: [...wanted],
    message: `spec.addresses ${wanted.join(', ')}: the cluster refused the address for Service ${obj.metadata?.namespace}/${obj.metadata?.name} (${why}); request a free address of one of the cluster's Service ranges (kubectl get servicecidrs), or remove it`,
  };
}

/**
 * Programmed as the Gateway's requested addresses decide it, or undefined when they decide
 * nothing (none requested, or all of them on the Service). `refusal`: the deployer's last
 * attempt at the Service, refused for its address; it counts only while the Gateway still asks
 * for those addresses (a changed spec.addresses is not refused before the deployer tried it).
 */
export function addressVerdict(gateway: Gateway, service: ServiceLookup, refusal: AddressRefusal | undefined): AddressVerdict | undefined {
  const requested = requestedAddresses(gateway);
  // Not accepted: translation says why, and nothing is deployed.
  if (!requested.ok) return undefined;
  const wanted = requested.addresses.clusterIPs;
  const current = refusal !== undefined && refusal.clusterIPs.length === wanted.length && refusal.clusterIPs.every((ip, i) => ip === wanted[i]);
  const unusable = [...(current ? [refusal.message] : []), ...requested.addresses.unusable];
  if (unusable.length) return { reason: 'AddressNotUsable', message: unusable.join('; ') };
  if (!wanted.length) return undefined;
  const svc = proxyService(gateway, service);
  const have = clusterIPs(svc).map((ip) => canonicalIp(ip)?.ip ?? ip);
  const missing = wanted.filter((ip) => !have.includes(ip));
  if (!missing.length) return undefined;
  const where = `Service ${gateway.metadata.namespace}/${proxyName(gateway)}`;
  return {
    reason: 'AddressNotAssigned',
    message: `spec.addresses ${missing.join(', ')} not assigned yet: ${svc ? `${where} has ${have.join(', ') || 'no address'} and is being replaced` : `${where} is not created yet`}`,
  };
}
