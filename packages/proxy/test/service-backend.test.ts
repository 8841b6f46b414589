// Service backends, as the controller sends them: a snapshot that went through the wire
// encoding is applied, and requests spread over the Service's ready endpoints (real upstream
// servers on loopback); a Service without endpoints, or an unresolved reference, gets no
// request through: 503 for a Service without ready endpoints, 500 for an unresolved reference
// or no backend at all (what the Gateway API asks). service-balancing.test.ts has the balancer
// under load.
import { afterEach, describe, expect, it } from 'vitest';
import { decodeSnapshot, encodeSnapshot, withVersion, type BackendIR, type ProxySnapshot, type ServiceBackendIR } from '@tollgate/api';
import { send, simpleConfig, startGateway, startUpstream, type TestGateway, type Upstream } from './helpers.js';

let cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

/** The gateway's current snapshot with the one route's backends replaced, sent over the wire and applied. */
async function applyBackends(gw: TestGateway, backends: BackendIR[]): Promise<ProxySnapshot> {
  const current = gw.gateway.snapshot;
  const next = withVersion({
    source: { kind: 'controller', gateway: 'default/gw' },
    binds: current.binds.map((b) => ({ ...b, listeners: b.listeners.map((l) => ({ ...l, routes: l.routes.map((r) => ({ ...r, backends })) })) })),
  });
  const received = decodeSnapshot(encodeSnapshot(next));
  await gw.gateway.runtime.apply(received);
  return received;
}

async function setup(): Promise<{ gw: TestGateway; a: Upstream; b: Upstream }> {
  const reply = (name: string) => (_req: unknown, res: { end: (s: string) => void }) => res.end(name);
  const a = await startUpstream(reply('a'));
  const b = await startUpstream(reply('b'));
  const gw = await startGateway((port) => simpleConfig(port, [{ name: 'r', backends: [{ host: a.host }] }]));
  cleanup.push(() => a.close(), () => b.close(), () => gw.close());
  return { gw, a, b };
}

const service = (endpoints: { address: string; port: number }[], weight = 1): ServiceBackendIR => ({
  kind: 'service',
  name: 'llm.default.svc.cluster.local:80',
  namespace: 'default',
  service: 'llm',
  port: 80,
  weight,
  endpoints,
});

describe('Service backends', () => {
  it('spread requests over the ready endpoints, round robin while nothing tells them apart', async () => {
    const { gw, a, b } = await setup();
    await applyBackends(gw, [service([{ address: '127.0.0.1', port: a.port }, { address: '127.0.0.1', port: b.port }])]);
    // The second request compares a (one latency sample) with b (none): b is never dearer, so
    // round robin decides whatever the first call took.
    const bodies: string[] = [];
    for (let i = 0; i < 2; i++) bodies.push((await send(`${gw.url}/x`)).body);
    expect(bodies).toEqual(['a', 'b']);
    const dump = (await (await fetch(`${gw.adminUrl}/config_dump`)).json()) as { version: string; backends: { type: string; name: string; namespace: string; endpoints: { address: string; requests: number }[] }[] };
    expect(dump.backends).toEqual([
      expect.objectContaining({
        type: 'Service',
        name: 'llm.default.svc.cluster.local:80',
        namespace: 'default',
        endpoints: [expect.objectContaining({ address: a.host, requests: 1, inFlight: 0, ejectedUntil: null }), expect.objectContaining({ address: b.host, requests: 1, inFlight: 0, ejectedUntil: null })],
      }),
    ]);
  });

  it('answers 503 when the Service has no ready endpoint, 500 when the reference did not resolve or there is no backend', async () => {
    const { gw } = await setup();
    await applyBackends(gw, [service([])]);
    const empty = await send(`${gw.url}/x`);
    expect(empty.status).toBe(503);
    await applyBackends(gw, [{ kind: 'invalid', name: 'default/missing', weight: 1, reason: 'BackendNotFound' }]);
    const invalid = await send(`${gw.url}/x`);
    expect(invalid.status).toBe(500);
    expect(invalid.body).toContain('no valid backend');
    await applyBackends(gw, []);
    expect((await send(`${gw.url}/x`)).status).toBe(500);
    await applyBackends(gw, [service([{ address: '127.0.0.1', port: 1 }], 0)]);
    expect((await send(`${gw.url}/x`)).status).toBe(500);
  });

  it('send the share of an unresolved reference to 500 and the rest to the Service', async () => {
    const { gw, a } = await setup();
    await applyBackends(gw, [service([{ address: '127.0.0.1', port: a.port }]), { kind: 'invalid', name: 'default/missing', weight: 1, reason: 'BackendNotFound' }]);
    const seen = new Set<number>();
    // Each request picks by weight at random: both answers show up well within 200 requests
    // (the chance of one missing is 2^-199).
    for (let i = 0; i < 200 && seen.size < 2; i++) seen.add((await send(`${gw.url}/x`)).status);
    expect([...seen].sort()).toEqual([200, 500]);
  });

  it('run a backendRef\'s own header changes only on the requests sent to that backend', async () => {
    const echo = (name: string) => (req: { headers: Record<string, unknown> }, res: { end: (s: string) => void }) => res.end(JSON.stringify({ name, backend: req.headers.backend, added: req.headers['x-added'], gone: req.headers['x-gone'] ?? null }));
    const a = await startUpstream(echo('a'));
    const b = await startUpstream(echo('b'));
    cleanup.push(() => a.close(), () => b.close());
    const { gw } = await setup();
    const withFilter: BackendIR = {
      ...service([{ address: '127.0.0.1', port: a.port }]),
      filters: [{ type: 'RequestHeaderModifier', set: [{ name: 'backend', value: 'a' }], add: [{ name: 'x-added', value: 'two' }], remove: ['x-gone'] }],
    };
    await applyBackends(gw, [withFilter, { ...service([{ address: '127.0.0.1', port: b.port }]), name: 'other.default.svc.cluster.local:80', service: 'other' }]);
    const seen = new Map<string, unknown>();
    // Picks are random by weight: both backends answer well within 200 requests (a miss is 2^-199).
    for (let i = 0; i < 200 && seen.size < 2; i++) {
      const r = JSON.parse((await send(`${gw.url}/x`, { headers: { backend: 'client', 'x-added': 'one', 'x-gone': 'yes' } })).body) as { name: string };
      seen.set(r.name, r);
    }
    expect(seen.get('a')).toEqual({ name: 'a', backend: 'a', added: 'one,two', gone: null });
    expect(seen.get('b')).toEqual({ name: 'b', backend: 'client', added: 'one', gone: 'yes' });
  });
});
