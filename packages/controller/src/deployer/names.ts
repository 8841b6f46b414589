// Names and labels of the objects deployed for a Gateway. One name for the ServiceAccount,
// Deployment and Service: `<gateway>-<class>`, made a DNS-1035 label (a Service name must be
// one: lower case, starts with a letter, at most 63 characters). A longer name is cut and
// given a hash of the whole, so two Gateways never share a name and a name never changes.
import { createHash } from 'node:crypto';
import type { Gateway } from '../types/gateway-api.js';

export const GATEWAY_NAME_LABEL = 'gateway.networking.k8s.io/gateway-name';
export const MANAGED_BY_LABEL = 'app.kubernetes.io/managed-by';
export const MANAGED_BY = 'tollgate';
export const COMPONENT_LABEL = 'app.kubernetes.io/component';
export const COMPONENT = 'proxy';
/** Selects everything the deployer owns, in every namespace (what pruning lists). */
export const OWNED_SELECTOR = `${MANAGED_BY_LABEL}=${MANAGED_BY},${COMPONENT_LABEL}=${COMPONENT}`;

const MAX_NAME = 63;

export function proxyName(gateway: Gateway): string {
  const raw = `${gateway.metadata.name}-${gateway.spec.gatewayClassName}`;
  if (raw.length <= MAX_NAME && /^[a-z]([-a-z0-9]*[a-z0-9])?$/.test(raw)) return raw;
  // Dots, a leading digit or a long name: a readable prefix and the hash of the whole.
  let prefix = raw.toLowerCase().replace(/[^a-z0-9-]/g, '-');
  if (!/^[a-z]/.test(prefix)) prefix = `gw-${prefix}`;
  const hash = createHash('sha256').update(raw).digest('hex').slice(0, 8);
  return `${prefix.slice(0, MAX_NAME - hash.length - 1).replace(/-+$/, '')}-${hash}`;
}
