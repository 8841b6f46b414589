// Objects are read strictly: an unknown kind or field is an error naming it.
import { describe, expect, it } from 'vitest';
import { ValidationError } from '@tollgate/api';
import { parseObject } from '../src/types/schemas.js';

function problems(value: unknown): string[] {
  try {
    parseObject(value, 'object');
  } catch (err) {
    if (err instanceof ValidationError) return err.problems.map((p) => `${p.path}: ${p.message}`);
    throw err;
  }
  return [];
}

describe('parseObject', () => {
  it('reads a Gateway API object with its defaults left out', () => {
    const route = { apiVersion: 'gateway.networking.k8s.io/v1', kind: 'HTTPRoute', metadata: { name: 'r', namespace: 'd' }, spec: { parentRefs: [{ name: 'gw' }] } };
    expect(parseObject(route, 'route')).toEqual({ kind: 'HTTPRoute', object: route });
  });

  it('names an unknown kind', () => {
    expect(problems({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'x' } })).toEqual([
      'kind: got "Pod"; expected one of: GatewayClass, Gateway, ListenerSet, HTTPRoute, GRPCRoute, TLSRoute, ReferenceGrant, GatewayPolicy, Backend, BackendTLSPolicy, Service, EndpointSlice, Namespace, Secret, ConfigMap',
    ]);
  });

  it('names an unknown or misspelt field, and a wrong value', () => {
    const out = problems({
      apiVersion: 'gateway.networking.k8s.io/v1',
      kind: 'Gateway',
      metadata: { name: 'gw', namespace: 'd', creationTimestamp: 'yesterday' },
      spec: { gatewayClassName: 'x', listeners: [{ name: 'http', port: 80, protocol: 'HTTP', allowedRoute: {} }] },
    });
    expect(out).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^spec\.listeners\[0\]\.allowedRoute: unknown field/),
        'metadata.creationTimestamp: got "yesterday"; expected an RFC 3339 UTC time, e.g. 2026-01-02T03:04:05Z',
      ]),
    );
  });

  it('checks a GatewayPolicy against the same traffic schema as the CRD', () => {
    const out = problems({
      apiVersion: 'tollgate.dev/v1alpha1',
      kind: 'GatewayPolicy',
      metadata: { name: 'p', namespace: 'd' },
      spec: { targetRefs: [{ group: 'gateway.networking.k8s.io', kind: 'HTTPRoute', name: 'r' }], traffic: { rateLimit: { local: [{ requests: 1, unit: 'Weeks' }] } } },
    });
    expect(out).toEqual(['spec.traffic.rateLimit.local[0].unit: got "Weeks"; expected one of: Seconds, Minutes, Hours, Days, Months']);
  });
});
