// A GatewayPolicy's per-key budgets (`overrides`) and limit names through translation: the
// snapshot carries each override and name as the proxies run them; a policy whose overrides
// break a rule (a key given twice, overrides without by) is not accepted, the message naming
// the field, and is not in the snapshot.
import { describe, expect, it } from 'vitest';
import { translate } from '../src/translate/index.js';
import { CONTROLLER_NAME, parseResources } from './support.js';

const base = `
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: { name: tollgate }
spec: { controllerName: ${CONTROLLER_NAME} }
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: { name: gw, namespace: default, generation: 1 }
spec: { gatewayClassName: tollgate, listeners: [{ name: http, port: 80, protocol: HTTP }] }
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: { name: chat, namespace: default, generation: 1 }
spec: { parentRefs: [{ name: gw }], rules: [{ backendRefs: [{ name: llm, port: 80 }] }] }
`;

const policy = (rateLimit: string) => `
apiVersion: tollgate.dev/v1alpha1
kind: GatewayPolicy
metadata: { name: budgets, namespace: default, generation: 1, creationTimestamp: '2026-01-01T00:00:00Z' }
spec:
  targetRefs: [{ group: gateway.networking.k8s.io, kind: HTTPRoute, name: chat }]
  traffic:
    rateLimit: ${rateLimit}
`;

function run(rateLimit: string) {
  const out = translate(parseResources([base, policy(rateLimit)].join('\n---\n'), 'state'), { controllerName: CONTROLLER_NAME });
  const status = out.status.gatewayPolicies.get('default/budgets')!.ancestors[0]!.conditions[0]!;
  const p = out.snapshots.get('default/gw')?.binds[0]?.listeners[0]?.routes[0]?.policy ?? null;
  return { status, policy: p };
}

describe('GatewayPolicy overrides', () => {
  it('local overrides and names reach the snapshot as written (global ones: testdata/policy-budget-overrides)', () => {
    const { status, policy } = run(`
      local:
      - { name: consumer-daily, tokens: 100, unit: Days, by: { type: Consumer }, overrides: [{ key: alice, tokens: 500 }, { key: '', tokens: 10 }] }
      - { requests: 5, burst: 2, unit: Minutes, by: { type: ConsumerGroup }, overrides: [{ key: research, requests: 50 }] }`);
    expect(status.status, status.message).toBe('True');
    expect(policy?.localRateLimit).toEqual([
      { kind: 'tokens', tokens: 100, unit: 'Days', by: { type: 'Consumer' }, overrides: [{ key: 'alice', tokens: 500 }, { key: '', tokens: 10 }], name: 'consumer-daily' },
      { kind: 'requests', requests: 5, burst: 2, unit: 'Minutes', by: { type: 'ConsumerGroup' }, overrides: [{ key: 'research', requests: 50, burst: 0 }] },
    ]);
  });

  it.each([
    ['a key given twice', `{ local: [{ requests: 1, unit: Hours, by: { type: Consumer }, overrides: [{ key: a, requests: 2 }, { key: a, requests: 3 }] }] }`, /spec\.traffic\.rateLimit\.local\[0\]\.overrides\[1\]\.key: duplicate key "a" \(also at index 0\)/],
    ['overrides without by', `{ local: [{ requests: 1, unit: Hours, overrides: [{ key: a, requests: 2 }] }] }`, /spec\.traffic\.rateLimit\.local\[0\]\.overrides: overrides are only allowed with by/],
  ])('refuses %s, naming the field, and leaves the policy out of the snapshot', (_name, rateLimit, message) => {
    const { status, policy } = run(rateLimit);
    expect(status.status).toBe('False');
    expect(status.message).toMatch(message);
    expect(policy).toBeNull();
  });
});
