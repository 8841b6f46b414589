// GatewayPolicy status through the transitions a user goes through, one translation per
// state of the cluster: what Accepted and Attached say at each step.
import { describe, expect, it } from 'vitest';
import { translate } from '../src/translate/index.js';
import type { Resources } from '../src/translate/types.js';
import { CONTROLLER_NAME, parseResources } from './support.js';

const base = `
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: { name: tollgate }
spec: { controllerName: ${CONTROLLER_NAME} }
---
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: { name: other }
spec: { controllerName: example.com/other }
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: { name: gw, namespace: default, generation: 1 }
spec: { gatewayClassName: tollgate, listeners: [{ name: http, port: 80, protocol: HTTP }] }
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: { name: foreign, namespace: default, generation: 1 }
spec: { gatewayClassName: other, listeners: [{ name: http, port: 80, protocol: HTTP }] }
`;
const routeTo = (gateway: string) => `
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: { name: chat, namespace: default, generation: 1 }
spec: { parentRefs: [{ name: ${gateway} }], rules: [{ backendRefs: [{ name: llm, port: 80 }] }] }
`;
const policy = (generation: number, requests: number) => `
apiVersion: tollgate.dev/v1alpha1
kind: GatewayPolicy
metadata: { name: limit, namespace: default, generation: ${generation}, creationTimestamp: '2026-01-01T00:00:00Z' }
spec:
  targetRefs: [{ group: gateway.networking.k8s.io, kind: HTTPRoute, name: chat }]
  traffic: { rateLimit: { local: [{ requests: ${requests}, unit: Minutes }] } }
`;

function state(...docs: string[]): Resources {
  return parseResources([base, ...docs].join('\n---\n'), 'state');
}

/** The policy's status, in short: `<ancestor> Accepted=<status>/<reason> Attached=<status>/<reason>: <message>`. */
function policyStatus(r: Resources): string[] | null {
  const s = translate(r, { controllerName: CONTROLLER_NAME, gatewayApiVersion: 'v1.6.1' }).status.gatewayPolicies.get('default/limit');
  if (!s) return null;
  return s.ancestors.map((a) => {
    const [acc, att] = a.conditions;
    return `${a.ancestorRef.kind} ${a.ancestorRef.namespace}/${a.ancestorRef.name} Accepted=${acc!.status}/${acc!.reason} Attached=${att!.status}/${att!.reason}: ${att!.message} (generation ${acc!.observedGeneration})`;
  });
}

function routePolicy(r: Resources): unknown {
  const snap = translate(r, { controllerName: CONTROLLER_NAME }).snapshots.get('default/gw');
  return snap?.binds[0]?.listeners[0]?.routes[0]?.policy?.localRateLimit ?? null;
}

describe('GatewayPolicy status transitions', () => {
  it('policy before its target: TargetNotFound on the target itself', () => {
    expect(policyStatus(state(policy(1, 10)))).toEqual([
      'HTTPRoute default/chat Accepted=False/TargetNotFound Attached=False/Pending: not applied: the policy is not accepted for HTTPRoute default/chat (TargetNotFound) (generation 1)',
    ]);
  });

  it('target created and attached: Accepted and Attached on its Gateway, and in its snapshot', () => {
    const r = state(policy(1, 10), routeTo('gw'));
    expect(policyStatus(r)).toEqual([
      'Gateway default/gw Accepted=True/Accepted Attached=True/Attached: HTTPRoute default/chat is attached to this Gateway; the policy is in its configuration (generation 1)',
    ]);
    expect(routePolicy(r)).toEqual([{ kind: 'requests', requests: 10, burst: 0, unit: 'Minutes' }]);
  });

  it('route detached from its Gateway: Pending on the route', () => {
    expect(policyStatus(state(policy(1, 10), routeTo('missing')))).toEqual([
      'HTTPRoute default/chat Accepted=True/Accepted Attached=False/Pending: HTTPRoute default/chat is not attached to any Gateway (generation 1)',
    ]);
  });

  it('route moved to a Gateway of another class: Pending, and gone from our snapshot', () => {
    const r = state(policy(1, 10), routeTo('foreign'));
    expect(policyStatus(r)).toEqual([
      'HTTPRoute default/chat Accepted=True/Accepted Attached=False/Pending: HTTPRoute default/chat is not attached to any Gateway (generation 1)',
    ]);
    expect(routePolicy(r)).toBeNull();
  });

  it('target deleted: back to TargetNotFound', () => {
    expect(policyStatus(state(policy(1, 10)))![0]).toMatch(/Accepted=False\/TargetNotFound/);
  });

  it('policy edited: the new limits and the new generation', () => {
    const r = state(policy(2, 20), routeTo('gw'));
    expect(policyStatus(r)![0]).toMatch(/Attached=True\/Attached.*\(generation 2\)$/);
    expect(routePolicy(r)).toEqual([{ kind: 'requests', requests: 20, burst: 0, unit: 'Minutes' }]);
  });

  it('policy deleted: no status to write, and no policy in the snapshot', () => {
    const r = state(routeTo('gw'));
    expect(policyStatus(r)).toBeNull();
    expect(routePolicy(r)).toBeNull();
  });
});
