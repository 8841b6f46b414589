// A Service backend as the controller puts it in a snapshot, its one endpoint a real server on loopback.
import type { ServiceBackendIR } from '@tollgate/api';

export const service = (name: string, port: number): ServiceBackendIR => ({
  kind: 'service',
  name: `${name}.default.svc.cluster.local:80`,
  namespace: 'default',
  service: name,
  port: 80,
  weight: 1,
  endpoints: [{ address: '127.0.0.1', port }],
});
