// The names the controller's serving certificate is issued for: every name a proxy may dial
// the snapshot Service by (the host of --snapshot-service and its other in-cluster forms),
// plus any given with --snapshot-tls-names (an IP address goes in as one).
import { isIP } from 'node:net';
import type { ServingNames } from './serving.js';

export function servingNames(snapshotServiceHost: string, extra: readonly string[] = []): ServingNames {
  const host = snapshotServiceHost.toLowerCase();
  const dns: string[] = [];
  const ips: string[] = [];
  const add = (n: string) => {
    if (isIP(n)) {
      if (!ips.includes(n)) ips.push(n);
    } else if (!dns.includes(n)) dns.push(n);
  };
  add(host);
  // <service>.<namespace>.svc[.<cluster domain>]: also the short forms resolv.conf's search
  // path accepts, and the cluster.local form most clusters use.
  const m = /^([a-z0-9-]+)\.([a-z0-9-]+)\.svc(\..+)?$/.exec(host);
  if (m) {
    const [, svc, ns] = m;
    for (const n of [`${svc}.${ns}.svc`, `${svc}.${ns}.svc.cluster.local`, `${svc}.${ns}`, svc!]) add(n);
  }
  for (const n of extra) add(n.toLowerCase());
  return { dnsNames: dns, ipAddresses: ips };
}
