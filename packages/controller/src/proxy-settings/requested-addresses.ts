// A Gateway's spec.addresses as the proxies' Service can honour them. The proxies are reached
// through a ClusterIP Service (deployer/render.ts), so a requested IPAddress becomes that
// Service's ClusterIP. A Service holds at most one ClusterIP per IP family, so the first IPv4
// and the first IPv6 address in spec order are the Service's, and any further address of a
// family already taken cannot be used. Whether the cluster can give an address (inside one of
// its Service ranges, not another Service's) only the API server knows: the deployer applies
// the Service and reports its refusal (deployer/addresses.ts).
//
// An IPAddress without a value asks for an address the cluster assigns, which the Service
// always gets; beside a value of the same type it adds nothing. A Hostname cannot be given to
// a Service (a ClusterIP has no name of its own to set), nor can any other type: the Gateway
// is not accepted (UnsupportedAddress), naming the entry.
import { isIPv4, isIPv6 } from 'node:net';
import type { Gateway } from '../types/gateway-api.js';

/** The Gateway API's own bound (the CRD's maxItems), checked again here: a CRD may be older or edited. */
export const MAX_SPEC_ADDRESSES = 16;

export type IpFamily = 'IPv4' | 'IPv6';

export interface ServiceAddresses {
  /** The Service's ClusterIPs in canonical form, one per family, in spec order; empty: the cluster chooses. */
  readonly clusterIPs: readonly string[];
  readonly families: readonly IpFamily[];
  /** Why each requested address beyond one per family cannot be used (Programmed False, AddressNotUsable). */
  readonly unusable: readonly string[];
}

export type AddressesVerdict = { readonly ok: true; readonly addresses: ServiceAddresses } | { readonly ok: false; readonly message: string };

/** The canonical text of an IP address and its family (as the API server writes it back), or undefined. */
export function canonicalIp(text: string): { ip: string; family: IpFamily } | undefined {
  if (isIPv4(text)) return { ip: text, family: 'IPv4' };
  if (!isIPv6(text)) return undefined;
  // The URL parser writes an IPv6 address compressed and in lower case; a zone (fe80::1%eth0) fails it.
  try {
    return { ip: new URL(`http://[${text}]/`).hostname.slice(1, -1), family: 'IPv6' };
  } catch {
    return undefined;
  }
}

export function requestedAddresses(gateway: Gateway): AddressesVerdict {
  const requested = gateway.spec.addresses ?? [];
  if (requested.length > MAX_SPEC_ADDRESSES) return { ok: false, message: `spec.addresses has ${requested.length} entries; at most ${MAX_SPEC_ADDRESSES}` };
  const first = new Map<IpFamily, { ip: string; index: number }>();
  const unusable: string[] = [];
  for (const [i, a] of requested.entries()) {
    const type = a.type ?? 'IPAddress';
    if (type === 'Hostname') {
      return {
        ok: false,
        message: `spec.addresses[${i}]: type Hostname is not supported: the proxies are reached at their Service's ClusterIP, which has no name to set; request an IPAddress (or none) and point your DNS name at the Gateway's status.addresses`,
      };
    }
    if (type !== 'IPAddress') return { ok: false, message: `spec.addresses[${i}]: type ${JSON.stringify(type.slice(0, 253))} is not supported; the proxies' Service takes addresses of type IPAddress (its ClusterIP)` };
    const value = a.value ?? '';
    if (value === '') continue;
    const parsed = canonicalIp(value);
    if (!parsed) {
      return {
        ok: false,
        message: `spec.addresses[${i}]: ${JSON.stringify(value.slice(0, 253))} is not an IP address; give an IPv4 or IPv6 address such as 198.51.100.10, or no value for one the cluster assigns`,
      };
    }
    const taken = first.get(parsed.family);
    if (!taken) first.set(parsed.family, { ip: parsed.ip, index: i });
    else if (taken.ip !== parsed.ip) {
      unusable.push(`spec.addresses[${i}] ${parsed.ip}: the Gateway's Service takes one ${parsed.family} address, ${taken.ip} (spec.addresses[${taken.index}]); remove one of them`);
    }
  }
  const chosen = [...first].sort(([, a], [, b]) => a.index - b.index);
  return { ok: true, addresses: { clusterIPs: chosen.map(([, c]) => c.ip), families: chosen.map(([f]) => f), unusable } };
}
