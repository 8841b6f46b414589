// The deployer's object names: always a valid Service name (DNS-1035 label, at most 63
// characters), the same for the same Gateway, different for different Gateways.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { proxyName } from '../src/deployer/names.js';
import type { Gateway } from '../src/types/gateway-api.js';

const gateway = (name: string, className = 'tollgate'): Gateway => ({
  apiVersion: 'gateway.networking.k8s.io/v1',
  kind: 'Gateway',
  metadata: { name, namespace: 'apps' },
  spec: { gatewayClassName: className, listeners: [] },
});

// Object names as the API server accepts them for a Gateway: a DNS subdomain, at most 253.
const label = fc.stringMatching(/^[a-z0-9]([-a-z0-9]{0,20}[a-z0-9])?$/);
const subdomain = fc.array(label, { minLength: 1, maxLength: 12 }).map((parts) => parts.join('.').slice(0, 253)).filter((s) => /^[a-z0-9](.*[a-z0-9])?$/.test(s));

describe('proxyName', () => {
  it('keeps a short valid name as <gateway>-<class>', () => {
    expect(proxyName(gateway('gw'))).toBe('gw-tollgate');
  });

  it('is a DNS-1035 label of at most 63 characters for any Gateway name', () => {
    fc.assert(
      fc.property(subdomain, label, (name, cls) => {
        const n = proxyName(gateway(name, cls));
        expect(n.length).toBeLessThanOrEqual(63);
        expect(n).toMatch(/^[a-z]([-a-z0-9]*[a-z0-9])?$/);
        expect(proxyName(gateway(name, cls))).toBe(n);
      }),
      { numRuns: 500 },
    );
  });

  it('gives different Gateways different names', () => {
    fc.assert(
      fc.property(subdomain, subdomain, (a, b) => {
        fc.pre(a !== b);
        expect(proxyName(gateway(a))).not.toBe(proxyName(gateway(b)));
      }),
      { numRuns: 500 },
    );
    // The cases a plain replacement of dots would merge.
    expect(proxyName(gateway('a.b'))).not.toBe(proxyName(gateway('a-b')));
  });
});
