// A Service backend as the controller puts it in a snapshot, and its entry in the snapshot's
// endpoints (ProxySnapshot.endpoints): one endpoint, a real server on loopback.
import type { ServiceBackendIR, ServiceEndpointsIR } from '@tollgate/api';

const nameOf = (name: string): string => `${name}.default.svc.cluster.local:80`;

export const service = (name: string): ServiceBackendIR => ({
  kind: 'service',
  name: nameOf(name),
  namespace: 'default',
  service: name,
  port: 80,
  weight: 1,
});

/** The snapshot's endpoints of Services made by service(), by name: each its one endpoint on 127.0.0.1 at that port, sorted as the controller sorts them. */
export const endpointsOf = (ports: Readonly<Record<string, number>>): ServiceEndpointsIR[] =>
  Object.keys(ports)
    .sort()
    .map((name) => ({ name: nameOf(name), endpoints: [{ address: '127.0.0.1', port: ports[name]! }] }));
