// The balancer of a Service backend, on endpoint state driven by hand (no sockets: pools open
// only on first use, and nothing here sends a request): ties are served round robin; an
// endpoint with requests in flight, a slow one or a failing one is avoided; a failed connect
// ejects for a bounded time that doubles per outage; with every endpoint ejected one is
// still tried; a retired endpoint gets nothing while others remain.
import type { BackendIR } from '@tollgate/api';
import { describe, expect, it } from 'vitest';
import { backendPicker, INVALID_BACKEND, SERVICE_BALANCING, type BalancingPolicy, type PickerDeps, type UpstreamTarget } from '../src/routing/backend-picker.js';
import { CoolDowns } from '../src/upstream/cool-downs.js';
import { callOutcome, EJECTION_BASE_MS, EJECTION_MAX_MS, EndpointTable, type Endpoint } from '../src/upstream/endpoints.js';
import { ServiceEndpoints } from '../src/routing/service-endpoints.js';

const SERVICE = 'llm.default.svc.cluster.local:80';

function setup(count: number, balancing: BalancingPolicy = SERVICE_BALANCING) {
  const clock = { now: 1_000_000 };
  const endpoints = new EndpointTable({ connectTimeoutMs: 1000, clock: () => clock.now });
  const deps: PickerDeps = { endpoints, clock: () => clock.now, balancing, coolDowns: new CoolDowns({ defaultMs: 5_000, maxMs: 300_000 }, () => clock.now), services: new ServiceEndpoints() };
  const backend: BackendIR = { kind: 'service', name: SERVICE, namespace: 'default', service: 'llm', port: 80, weight: 1 };
  const ready = Array.from({ length: count }, (_, i) => ({ address: `198.18.0.${i + 1}`, port: 8000 }));
  const picker = backendPicker([backend], deps);
  deps.services.commit(new Map([[SERVICE, ready]]));
  // The endpoint objects the picker takes at its first pick (the table gives each address one): scored by hand before it.
  for (const e of ready) endpoints.acquire(e.address, e.port);
  // A Service backend is never invalid: null (no endpoint) or an endpoint.
  const pick = (): UpstreamTarget | null => {
    const t = picker();
    if (t === INVALID_BACKEND) throw new Error('a Service backend was picked as invalid');
    return t;
  };
  const at = (i: number): Endpoint => endpoints.get(`198.18.0.${i + 1}:8000`)!;
  /** Addresses of `n` picks (no request is counted in flight: only the scores set by hand decide). */
  const picks = (n: number): string[] => Array.from({ length: n }, () => pick()!.name);
  return { clock, endpoints, pick, at, picks, deps };
}

const counts = (names: string[]) => names.reduce<Record<string, number>>((m, n) => ((m[n] = (m[n] ?? 0) + 1), m), {});

describe('least request with two choices', () => {
  it('serves endpoints that cost the same round robin', () => {
    const { picks } = setup(3);
    expect(picks(6)).toEqual(['198.18.0.1:8000', '198.18.0.2:8000', '198.18.0.3:8000', '198.18.0.1:8000', '198.18.0.2:8000', '198.18.0.3:8000']);
  });

  it('keeps the tie within the tolerance: slightly different latencies are still round robin', () => {
    const { picks, at } = setup(2);
    for (const [i, ms] of [[0, 11], [1, 1]] as const) {
      at(i).begin();
      at(i).end('ok', ms);
    }
    expect(picks(4)).toEqual(['198.18.0.1:8000', '198.18.0.2:8000', '198.18.0.1:8000', '198.18.0.2:8000']);
  });

  it('avoids an endpoint with requests in flight', () => {
    const { picks, at } = setup(3);
    at(0).begin();
    at(0).begin();
    expect(counts(picks(30))['198.18.0.1:8000']).toBeUndefined();
    at(0).end('ok', 1);
    at(0).end('ok', 1);
    expect(counts(picks(30))['198.18.0.1:8000']).toBe(10);
  });

  it('avoids a slow endpoint, and tries it again once what was learned has faded', () => {
    const { picks, at, clock } = setup(3);
    for (let i = 0; i < 10; i++) {
      at(1).begin();
      at(1).end('ok', 400);
    }
    expect(counts(picks(30))['198.18.0.2:8000']).toBeUndefined();
    clock.now += 120_000;
    expect(counts(picks(30))['198.18.0.2:8000']).toBe(10);
  });

  it('avoids an endpoint that answers errors, more the more it fails', () => {
    const { picks, at, endpoints } = setup(3);
    at(2).begin();
    at(2).end('error', 1);
    expect(counts(picks(30))['198.18.0.3:8000']).toBeUndefined();
    expect(endpoints.get('198.18.0.3:8000')!.view()).toMatchObject({ health: 0.9, requests: 1, ejectedUntil: null });
  });

  it('ejects an endpoint that failed to connect for a bounded time, doubling per outage', () => {
    const { picks, at, clock } = setup(3);
    const dead = at(0);
    const fail = () => {
      dead.begin();
      dead.end('connect-failure', 0);
    };
    fail();
    expect(dead.ejectedUntil).toBe(clock.now + EJECTION_BASE_MS);
    expect(dead.view().ejectedUntil).toBe(new Date(clock.now + EJECTION_BASE_MS).toISOString());
    // Requests sent before the ejection that fail after it do not lengthen it.
    fail();
    expect(dead.ejectedUntil).toBe(clock.now + EJECTION_BASE_MS);
    expect(counts(picks(30))['198.18.0.1:8000']).toBeUndefined();
    clock.now += EJECTION_BASE_MS;
    fail();
    expect(dead.ejectedUntil).toBe(clock.now + 2 * EJECTION_BASE_MS);
    for (let i = 0; i < 10; i++) {
      clock.now = dead.ejectedUntil;
      fail();
    }
    expect(dead.ejectedUntil - clock.now).toBe(EJECTION_MAX_MS);
    // A connection that succeeds ends the outage: the next failure starts from the base again.
    clock.now = dead.ejectedUntil;
    dead.begin();
    dead.end('ok', 1);
    fail();
    expect(dead.ejectedUntil).toBe(clock.now + EJECTION_BASE_MS);
  });

  it('still tries an endpoint when every one is ejected', () => {
    const { pick, at } = setup(2);
    for (const i of [0, 1]) {
      at(i).begin();
      at(i).end('connect-failure', 0);
    }
    expect(pick()).not.toBeNull();
    expect(pick()!.name).not.toBe(pick()!.name);
  });

  it('sends nothing to a retired endpoint while another remains', () => {
    const { picks, endpoints } = setup(3);
    // The picker holds its endpoints from its first pick on; then a config leaves one out.
    picks(1);
    endpoints.retain(new Set(['198.18.0.1:8000', '198.18.0.3:8000']));
    expect(Object.keys(counts(picks(30))).sort()).toEqual(['198.18.0.1:8000', '198.18.0.3:8000']);
  });
});

describe('round robin policy', () => {
  it('ignores the scores but not ejections', () => {
    const { picks, at } = setup(3, { kind: 'RoundRobin' });
    at(0).begin();
    expect(picks(3)).toEqual(['198.18.0.1:8000', '198.18.0.2:8000', '198.18.0.3:8000']);
    at(1).begin();
    at(1).end('connect-failure', 0);
    expect(picks(3)).toEqual(['198.18.0.1:8000', '198.18.0.3:8000', '198.18.0.3:8000']);
  });
});

describe('endpoint state', () => {
  it('is kept for endpoints a new config still lists and dropped for the others', () => {
    const { endpoints, at, deps } = setup(2, { kind: 'RoundRobin' });
    const kept = at(0);
    kept.begin();
    kept.end('ok', 5);
    const next: BackendIR = { kind: 'service', name: SERVICE, namespace: 'default', service: 'llm', port: 80, weight: 1 };
    const picker = backendPicker([next], deps);
    // The next config's endpoints: the picker takes them at its first pick.
    deps.services.commit(new Map([[SERVICE, [{ address: '198.18.0.1', port: 8000 }, { address: '198.18.0.9', port: 8000 }]]]));
    expect(Array.from({ length: 2 }, () => (picker() as UpstreamTarget).name)).toEqual(['198.18.0.1:8000', '198.18.0.9:8000']);
    endpoints.retain(new Set(['198.18.0.1:8000', '198.18.0.9:8000']));
    expect(endpoints.get('198.18.0.1:8000')).toBe(kept);
    expect(kept.requests).toBe(1);
    expect(endpoints.get('198.18.0.2:8000')).toBeUndefined();
    expect(endpoints.size).toBe(2);
  });

  it('names how a call ended as the balancer weighs it', () => {
    expect(callOutcome(null, 200, false)).toBe('ok');
    expect(callOutcome(null, 404, false)).toBe('ok');
    expect(callOutcome(null, 503, false)).toBe('error');
    expect(callOutcome('TG_UPSTREAM_RESET', 502, false)).toBe('error');
    expect(callOutcome('TG_UPSTREAM_REFUSED', 503, false)).toBe('connect-failure');
    expect(callOutcome('TG_UPSTREAM_CONNECT_TIMEOUT', 503, false)).toBe('connect-failure');
    expect(callOutcome('TG_UPSTREAM_REFUSED', 503, true)).toBe('abandoned');
  });
});
