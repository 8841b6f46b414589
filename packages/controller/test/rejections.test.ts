import { describe, expect, it } from 'vitest';
import { withRejections } from '../src/status/programmed.js';
import type { GatewayStatusReport, StatusReport } from '../src/translate/types.js';

const gateway = (name: string): GatewayStatusReport => ({
  namespace: 'edge',
  name,
  generation: 3,
  conditions: [
    { type: 'Accepted', status: 'True', reason: 'Accepted', message: 'accepted', observedGeneration: 3 },
    { type: 'Programmed', status: 'False', reason: 'Pending', message: 'waiting for a proxy of the Gateway to apply its configuration', observedGeneration: 3 },
  ],
  listeners: [],
});

describe('withRejections', () => {
  const status: StatusReport = { gatewayClasses: new Map(), gateways: new Map([['edge/a', gateway('a')], ['edge/b', gateway('b')]]), httpRoutes: new Map(), gatewayPolicies: new Map(), backendTLSPolicies: new Map() };

  it('sets Programmed False (Invalid, the proxy’s reason) on a rejected Gateway only', () => {
    const out = withRejections(status, (g) => (g === 'edge/a' ? { version: 'abc123abc123', pod: 'a-0', error: 'port 80 is already in use' } : undefined));
    expect(out.gateways.get('edge/a')!.conditions).toEqual([
      status.gateways.get('edge/a')!.conditions[0],
      { type: 'Programmed', status: 'False', reason: 'Invalid', message: 'proxy a-0 refused snapshot abc123abc123: port 80 is already in use', observedGeneration: 3 },
    ]);
    expect(out.gateways.get('edge/b')).toBe(status.gateways.get('edge/b'));
    expect(status.gateways.get('edge/a')!.conditions[1]!.reason).toBe('Pending');
  });

  it('returns the report as is when nothing is rejected', () => {
    expect(withRejections(status, () => undefined)).toBe(status);
  });
});
