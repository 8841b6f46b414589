import { describe, expect, it } from 'vitest';
import {
  MAX_ENTRIES,
  mergeConditions,
  mergeGatewayClassStatus,
  mergeGatewayPolicyStatus,
  mergeGatewayStatus,
  mergeHTTPRouteStatus,
  sameStatus,
} from '../src/status/merge.js';
import { SUPPORTED_FEATURES } from '../src/translate/features.js';
import type { DesiredCondition, GatewayPolicyStatusReport, HTTPRouteStatusReport } from '../src/translate/types.js';

const OURS = 'tollgate.dev/gateway-controller';
const OTHER = 'example.com/other';
const T0 = new Date('2026-01-01T00:00:00Z');
const T1 = new Date('2026-01-01T00:05:00.123Z');

const cond = (type: string, status: 'True' | 'False', reason: string, generation = 1, message = ''): DesiredCondition => ({ type, status, reason, message, observedGeneration: generation });

describe('mergeConditions', () => {
  it('stamps a new condition with now (second precision)', () => {
    expect(mergeConditions(undefined, [cond('Accepted', 'True', 'Accepted')], T1)).toEqual([
      { type: 'Accepted', status: 'True', observedGeneration: 1, lastTransitionTime: '2026-01-01T00:05:00Z', reason: 'Accepted', message: '' },
    ]);
  });

  it('keeps lastTransitionTime when the status did not change, even if reason, message or generation did', () => {
    const before = mergeConditions(undefined, [cond('Accepted', 'False', 'TargetNotFound', 1, 'a')], T0);
    const after = mergeConditions(before, [cond('Accepted', 'False', 'Invalid', 2, 'b')], T1);
    expect(after[0]).toMatchObject({ reason: 'Invalid', message: 'b', observedGeneration: 2, lastTransitionTime: '2026-01-01T00:00:00Z' });
  });

  it('takes a new lastTransitionTime when the status changed', () => {
    const before = mergeConditions(undefined, [cond('Accepted', 'False', 'TargetNotFound')], T0);
    const after = mergeConditions(before, [cond('Accepted', 'True', 'Accepted')], T1);
    expect(after[0]!.lastTransitionTime).toBe('2026-01-01T00:05:00Z');
  });
});

describe('sameStatus (no-op detection)', () => {
  it('a merge of the same report onto its own result is equal, so nothing is written', () => {
    const report: GatewayPolicyStatusReport = {
      namespace: 'ns',
      name: 'p',
      generation: 1,
      ancestors: [{ ancestorRef: { group: 'gateway.networking.k8s.io', kind: 'Gateway', namespace: 'ns', name: 'gw' }, controllerName: OURS, conditions: [cond('Accepted', 'True', 'Accepted'), cond('Attached', 'True', 'Attached')] }],
    };
    const first = mergeGatewayPolicyStatus(undefined, report, OURS, T0);
    // What the API server returns has its own key order; equality ignores it.
    const stored = JSON.parse(JSON.stringify(first, (_k, v: unknown) => (v && typeof v === 'object' && !Array.isArray(v) ? Object.fromEntries(Object.entries(v).reverse()) : v))) as unknown;
    const second = mergeGatewayPolicyStatus(stored, report, OURS, T1);
    expect(sameStatus(stored, second)).toBe(true);
  });

  it('a changed reason is a difference', () => {
    const a = { conditions: [{ type: 'A', status: 'True', reason: 'x' }] };
    const b = { conditions: [{ type: 'A', status: 'True', reason: 'y' }] };
    expect(sameStatus(a, b)).toBe(false);
  });

  it('a route no controller reported on is left alone (no empty parents written)', () => {
    const report: HTTPRouteStatusReport = { namespace: 'ns', name: 'r', generation: 1, parents: [] };
    expect(sameStatus(undefined, mergeHTTPRouteStatus(undefined, report, OURS, T0))).toBe(true);
    expect(sameStatus({}, mergeHTTPRouteStatus({}, report, OURS, T0))).toBe(true);
  });
});

describe('other controllers’ entries', () => {
  const otherParent = { parentRef: { group: 'gateway.networking.k8s.io', kind: 'Gateway', namespace: 'ns', name: 'theirs' }, controllerName: OTHER, conditions: [{ type: 'Accepted', status: 'True', reason: 'Accepted', message: '', lastTransitionTime: '2025-01-01T00:00:00Z' }] };

  it('HTTPRoute parents of another controller are kept in place; ours replaced, appended, removed', () => {
    const oldOurs = { parentRef: { group: 'gateway.networking.k8s.io', kind: 'Gateway', namespace: 'ns', name: 'gone' }, controllerName: OURS, conditions: [] };
    const current = { parents: [oldOurs, otherParent] };
    const report: HTTPRouteStatusReport = {
      namespace: 'ns',
      name: 'r',
      generation: 3,
      parents: [{ parentRef: { group: 'gateway.networking.k8s.io', kind: 'Gateway', namespace: 'ns', name: 'gw' }, controllerName: OURS, conditions: [cond('Accepted', 'True', 'Accepted', 3)] }],
    };
    const merged = mergeHTTPRouteStatus(current, report, OURS, T0) as { parents: { controllerName: string; parentRef: { name: string } }[] };
    expect(merged.parents.map((p) => [p.controllerName, p.parentRef.name])).toEqual([[OTHER, 'theirs'], [OURS, 'gw']]);
    expect(merged.parents[0]).toBe(otherParent);
  });

  it('a parentRef written without defaults matches ours with defaults filled (no duplicate, time kept)', () => {
    const current = { parents: [{ parentRef: { name: 'gw' }, controllerName: OURS, conditions: [{ type: 'Accepted', status: 'True', reason: 'Accepted', message: '', observedGeneration: 1, lastTransitionTime: '2025-06-01T00:00:00Z' }] }] };
    const report: HTTPRouteStatusReport = {
      namespace: 'ns', name: 'r', generation: 1,
      parents: [{ parentRef: { group: 'gateway.networking.k8s.io', kind: 'Gateway', namespace: 'ns', name: 'gw' }, controllerName: OURS, conditions: [cond('Accepted', 'True', 'Accepted')] }],
    };
    const merged = mergeHTTPRouteStatus(current, report, OURS, T1) as { parents: { conditions: { lastTransitionTime: string }[] }[] };
    expect(merged.parents).toHaveLength(1);
    expect(merged.parents[0]!.conditions[0]!.lastTransitionTime).toBe('2025-06-01T00:00:00Z');
  });

  it('GatewayPolicy ancestors of another controller are kept; at most 16, never dropping theirs', () => {
    const theirs = Array.from({ length: 10 }, (_, i) => ({ ancestorRef: { group: 'gateway.networking.k8s.io', kind: 'Gateway', namespace: 'ns', name: `t${i}` }, controllerName: OTHER, conditions: [] }));
    const report: GatewayPolicyStatusReport = {
      namespace: 'ns', name: 'p', generation: 1,
      ancestors: Array.from({ length: 10 }, (_, i) => ({ ancestorRef: { group: 'gateway.networking.k8s.io', kind: 'Gateway', namespace: 'ns', name: `o${i}` }, controllerName: OURS, conditions: [cond('Accepted', 'True', 'Accepted')] })),
    };
    const merged = mergeGatewayPolicyStatus({ ancestors: theirs }, report, OURS, T0) as { ancestors: { controllerName: string }[] };
    expect(merged.ancestors).toHaveLength(MAX_ENTRIES);
    expect(merged.ancestors.filter((a) => a.controllerName === OTHER)).toHaveLength(10);
  });

  it('ancestors no longer reached are removed', () => {
    const ours = { ancestorRef: { group: 'gateway.networking.k8s.io', kind: 'Gateway', namespace: 'ns', name: 'old' }, controllerName: OURS, conditions: [] };
    const merged = mergeGatewayPolicyStatus({ ancestors: [ours] }, { namespace: 'ns', name: 'p', generation: 1, ancestors: [] }, OURS, T0);
    expect(merged).toEqual({ ancestors: [] });
  });
});

describe('Gateway status', () => {
  it('listener conditions keep their time by listener name; addresses written by others stay', () => {
    const current = {
      addresses: [{ type: 'IPAddress', value: '198.18.0.10' }],
      listeners: [{ name: 'http', attachedRoutes: 0, supportedKinds: [], conditions: [{ type: 'Accepted', status: 'True', reason: 'Accepted', message: '', observedGeneration: 1, lastTransitionTime: '2025-01-01T00:00:00Z' }] }],
    };
    const merged = mergeGatewayStatus(current, {
      namespace: 'ns', name: 'gw', generation: 2,
      conditions: [cond('Accepted', 'True', 'Accepted', 2)],
      listeners: [{ name: 'http', attachedRoutes: 2, supportedKinds: [{ group: 'gateway.networking.k8s.io', kind: 'HTTPRoute' }], conditions: [cond('Accepted', 'True', 'Accepted', 2)] }],
    }, T1) as { addresses: unknown; listeners: { attachedRoutes: number; conditions: { lastTransitionTime: string; observedGeneration: number }[] }[] };
    expect(merged.addresses).toEqual(current.addresses);
    expect(merged.listeners[0]!.attachedRoutes).toBe(2);
    expect(merged.listeners[0]!.conditions[0]).toMatchObject({ lastTransitionTime: '2025-01-01T00:00:00Z', observedGeneration: 2 });
  });

  it('addresses from the deployer replace the old ones; none removes the field', () => {
    const report = { namespace: 'ns', name: 'gw', generation: 1, conditions: [cond('Accepted', 'True', 'Accepted')], listeners: [] };
    const current = { addresses: [{ type: 'IPAddress', value: '198.18.0.10' }], conditions: [] };
    const replaced = mergeGatewayStatus(current, report, T0, [{ type: 'IPAddress', value: '198.18.0.11' }]);
    expect(replaced.addresses).toEqual([{ type: 'IPAddress', value: '198.18.0.11' }]);
    const removed = mergeGatewayStatus(current, report, T0, []);
    expect('addresses' in removed).toBe(false);
    expect(sameStatus(mergeGatewayStatus(replaced, report, T1, [{ type: 'IPAddress', value: '198.18.0.11' }]), replaced)).toBe(true);
  });
});

describe('GatewayClass status', () => {
  it('supportedFeatures lists the features by name while accepted and is removed when not', () => {
    const accepted = mergeGatewayClassStatus({}, { name: 'tollgate', generation: 1, conditions: [cond('Accepted', 'True', 'Accepted')], supportedFeatures: SUPPORTED_FEATURES }, T0);
    expect(accepted.supportedFeatures).toEqual(SUPPORTED_FEATURES.map((name) => ({ name })));
    expect(SUPPORTED_FEATURES).toEqual(expect.arrayContaining(['Gateway', 'HTTPRoute', 'ReferenceGrant']));
    expect([...SUPPORTED_FEATURES]).toEqual([...SUPPORTED_FEATURES].sort());
    const refused = mergeGatewayClassStatus(accepted, { name: 'tollgate', generation: 2, conditions: [cond('Accepted', 'False', 'InvalidParameters', 2)], supportedFeatures: [] }, T1);
    expect('supportedFeatures' in refused).toBe(false);
  });
});
