// A snapshot as the controller sends it for a Gateway with two listeners on two ports, each
// with one route to an upstream: for the tests of gateway-level policies shared by listeners.
import { withVersion, type ListenerIR, type PolicyIR, type ProxySnapshot } from '@tollgate/api';

/** Two listeners on two ports, each with `policyOf(listener)`, one route each to the upstream. */
export function twoListeners(ports: [number, number], upstreamPort: number, policyOf: (listener: string) => PolicyIR): ProxySnapshot {
  const listener = (name: string): ListenerIR => ({
    name,
    protocol: 'HTTP',
    hostname: null,
    policy: policyOf(name),
    routes: [
      {
        name: `apps/r-${name}/rule/0`,
        origin: { kind: 'HTTPRoute', namespace: 'apps', name: `r-${name}`, rule: 0 },
        hostnames: [],
        matches: [{ path: { type: 'PathPrefix', value: '/' }, method: null, headers: [], queryParams: [] }],
        filters: [],
        policy: null,
        backends: [{ kind: 'static', name: `127.0.0.1:${upstreamPort}`, host: '127.0.0.1', port: upstreamPort, weight: 1 }],
        timeouts: { requestMs: null, backendRequestMs: null },
      },
    ],
  });
  return withVersion({
    source: { kind: 'controller', gateway: 'apps/gw' },
    binds: [
      { port: ports[0], address: '127.0.0.1', listeners: [listener('one')] },
      { port: ports[1], address: '127.0.0.1', listeners: [listener('two')] },
    ],
  });
}

