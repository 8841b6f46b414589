// Service backends, as the controller sends them: a snapshot that went through the wire
// encoding is applied, and requests spread over the Service's ready endpoints (real upstream
// servers on loopback); a Service without endpoints, or an unresolved reference, gets no
// request through: 503 for a Service without ready endpoints, 500 for an unresolved reference
// or no backend at all (what the Gateway API asks). service-balancing.test.ts has the balancer
// under load.
import { afterEach, describe, expect, it } from 'vitest';
import { decodeSnapshot, encodeSnapshot, withVersion, type BackendIR, type EndpointIR, type ProxySnapshot, type ServiceBackendIR } from '@tollgate/api';
import { freePort, openTrace, send, simpleConfig, startGateway, startUpstream, type TestGateway, type Upstream } from './helpers.js';

let cleanup: (() => Promise<void>)[] = [];
// The ready endpoints of the Services service() made in this test, by backend name.
let ready = new Map<string, readonly EndpointIR[]>();
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
  ready = new Map();
});

/** The gateway's current snapshot with the one route's backends replaced (their Services' endpoints listed), sent over the wire and applied. */
async function applyBackends(gw: TestGateway, backends: BackendIR[]): Promise<ProxySnapshot> {
  const current = gw.gateway.snapshot;
  const names = [...new Set(backends.flatMap((b) => (b.kind === 'service' ? [b.name] : [])))].sort();
  const next = withVersion({
    source: { kind: 'controller', gateway: 'default/gw' },
    binds: current.binds.map((b) => ({ ...b, listeners: b.listeners.map((l) => ({ ...l, routes: l.routes.map((r) => ({ ...r, backends })) })) })),
    endpoints: names.map((name) => ({ name, endpoints: ready.get(name) ?? [] })),
  });
  const received = decodeSnapshot(encodeSnapshot(next));
  await gw.gateway.runtime.apply(received);
  return received;
}

async function setup(config: Record<string, unknown> = {}): Promise<{ gw: TestGateway; a: Upstream; b: Upstream }> {
  const reply = (name: string) => (_req: unknown, res: { end: (s: string) => void }) => res.end(name);
  const a = await startUpstream(reply('a'));
  const b = await startUpstream(reply('b'));
  const gw = await startGateway((port) => ({ config, ...simpleConfig(port, [{ name: 'r', backends: [{ host: a.host }] }]) }));
  cleanup.push(() => a.close(), () => b.close(), () => gw.close());
  return { gw, a, b };
}

/** A Service backend (Service `name`, port 80) whose ready endpoints are `endpoints`. */
const service = (endpoints: EndpointIR[], weight = 1, name = 'llm'): ServiceBackendIR => {
  const backend: ServiceBackendIR = { kind: 'service', name: `${name}.default.svc.cluster.local:80`, namespace: 'default', service: name, port: 80, weight };
  ready.set(backend.name, endpoints);
  return backend;
};

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
    await applyBackends(gw, [withFilter, service([{ address: '127.0.0.1', port: b.port }], 1, 'other')]);
    const seen = new Map<string, unknown>();
    // Picks are random by weight: both backends answer well within 200 requests (a miss is 2^-199).
    for (let i = 0; i < 200 && seen.size < 2; i++) {
      const r = JSON.parse((await send(`${gw.url}/x`, { headers: { backend: 'client', 'x-added': 'one', 'x-gone': 'yes' } })).body) as { name: string };
      seen.set(r.name, r);
    }
    expect(seen.get('a')).toEqual({ name: 'a', backend: 'a', added: 'one,two', gone: null });
    expect(seen.get('b')).toEqual({ name: 'b', backend: 'client', added: 'one', gone: 'yes' });
  });

  it('run a backendRef\'s response header changes, rewrite and redirect only for the requests sent to that backend', async () => {
    const echo = (name: string) => (req: { url?: string; headers: Record<string, unknown> }, res: { setHeader: (n: string, v: string) => void; end: (s: string) => void }) => {
      res.setHeader('x-upstream', name);
      res.end(JSON.stringify({ name, path: req.url, host: req.headers.host }));
    };
    const a = await startUpstream(echo('a'));
    const b = await startUpstream(echo('b'));
    cleanup.push(() => a.close(), () => b.close());
    const { gw } = await setup();
    const rewritten: BackendIR = {
      ...service([{ address: '127.0.0.1', port: a.port }]),
      filters: [
        { type: 'ResponseHeaderModifier', set: [{ name: 'x-served-by', value: 'a' }], add: [], remove: ['x-upstream'] },
        { type: 'URLRewrite', hostname: 'a.internal', path: { type: 'ReplaceFullPath', value: '/rewritten' } },
      ],
    };
    const plain: BackendIR = service([{ address: '127.0.0.1', port: b.port }], 1, 'b');
    const redirected: BackendIR = {
      ...service([{ address: '127.0.0.1', port: b.port }], 1, 'c'),
      filters: [{ type: 'RequestRedirect', scheme: null, hostname: 'elsewhere.example.com', path: null, port: null, statusCode: 302 }],
    };
    await applyBackends(gw, [rewritten, plain, redirected]);
    const seen = new Map<string, unknown>();
    // Picks are random by weight: all three answer well within 300 requests (a miss is under 3 x (2/3)^299).
    for (let i = 0; i < 300 && seen.size < 3; i++) {
      const r = await send(`${gw.url}/x?q=1`);
      const key = r.status === 302 ? 'redirect' : (JSON.parse(r.body) as { name: string }).name;
      seen.set(key, { status: r.status, location: r.headers.location, servedBy: r.headers['x-served-by'], upstream: r.headers['x-upstream'], body: r.status === 302 ? null : (JSON.parse(r.body) as unknown) });
    }
    expect(seen.get('a')).toEqual({ status: 200, location: undefined, servedBy: 'a', upstream: undefined, body: { name: 'a', path: '/rewritten?q=1', host: 'a.internal' } });
    expect(seen.get('b')).toEqual({ status: 200, location: undefined, servedBy: undefined, upstream: 'b', body: { name: 'b', path: '/x?q=1', host: expect.stringContaining('127.0.0.1') as unknown } });
    expect(seen.get('redirect')).toEqual({ status: 302, location: `http://elsewhere.example.com:${new URL(gw.url).port}/x?q=1`, servedBy: undefined, upstream: undefined, body: null });
  });
});

describe('endpoints that go away', () => {
  const metricsText = async (gw: TestGateway) => (await fetch(`http://${gw.gateway.ops.metrics.address}/metrics`)).text();
  const retries = async (gw: TestGateway, error: string) =>
    Number(new RegExp(`^tollgate_upstream_unsent_retries_total\\{route="[^"]+",error="${error}"\\} (\\d+)$`, 'm').exec(await metricsText(gw))?.[1] ?? 0);

  it('a request refused by one endpoint goes to another endpoint of the backend, whatever the method: every answer is 200, with its body', async () => {
    const { gw } = await setup();
    // startUpstream's default handler echoes method, path and body.
    const live = await startUpstream();
    cleanup.push(() => live.close());
    const refusing = await freePort();
    // The refusing endpoint first: the first pick is the round-robin cursor's, endpoint 0.
    await applyBackends(gw, [service([{ address: '127.0.0.1', port: refusing }, { address: '127.0.0.1', port: live.port }])]);
    for (let i = 0; i < 10; i++) {
      const method = ['POST', 'GET', 'PUT', 'DELETE', 'PATCH'][i % 5]!;
      const body = method === 'GET' || method === 'DELETE' ? undefined : `body ${i}`;
      const r = await send(`${gw.url}/x/${i}`, { method, body, headers: body ? { 'content-type': 'text/plain' } : {} });
      expect(r.status).toBe(200);
      expect(JSON.parse(r.body)).toMatchObject({ method, url: `/x/${i}`, body: body ?? '' });
    }
    expect(live.requests).toHaveLength(10);
    // The first request met the refusing endpoint (which is then ejected, so later ones go straight to the live one).
    expect(await retries(gw, 'TG_UPSTREAM_REFUSED')).toBeGreaterThanOrEqual(1);
  });

  it('the trace shows each attempt: the refused one with its error, then the one that answered', async () => {
    const { gw } = await setup();
    const live = await startUpstream();
    cleanup.push(() => live.close());
    const refusing = await freePort();
    await applyBackends(gw, [service([{ address: '127.0.0.1', port: refusing }, { address: '127.0.0.1', port: live.port }])]);
    const trace = await openTrace(gw.adminUrl);
    await trace.armed;
    expect((await send(`${gw.url}/x`, { method: 'POST', body: 'once' })).status).toBe(200);
    const calls = (await trace.events).filter((e) => e.message.type === 'backendCallStart' || e.message.type === 'backendCallResult').map((e) => e.message);
    expect(calls).toEqual([
      { type: 'backendCallStart', target: `127.0.0.1:${refusing}` },
      { type: 'backendCallResult', status: 503, error: expect.objectContaining({ kind: 'TG_UPSTREAM_REFUSED' }) as unknown },
      { type: 'backendCallStart', target: live.host },
      { type: 'backendCallResult', status: 200, error: null },
    ]);
  });

  it('every endpoint refusing: 503 TG_UPSTREAM_REFUSED, each endpoint tried at most once per request, ejected ones not tried again', async () => {
    const { gw } = await setup();
    const ports = [await freePort(), await freePort()];
    await applyBackends(gw, [service(ports.map((port) => ({ address: '127.0.0.1', port })))]);
    const first = await send(`${gw.url}/x`, { method: 'POST', body: 'x' });
    expect(first.status).toBe(503);
    expect(first.headers['x-tollgate-error']).toBe('TG_UPSTREAM_REFUSED');
    // The first request tried both endpoints: one retry.
    expect(await retries(gw, 'TG_UPSTREAM_REFUSED')).toBe(1);
    // Both are ejected now: the next request is tried on one (none is left to pick) and answered at once.
    expect((await send(`${gw.url}/x`)).status).toBe(503);
    expect(await retries(gw, 'TG_UPSTREAM_REFUSED')).toBe(1);
  });

  it('a request that reached an endpoint is not sent to another, even when the connection then broke', async () => {
    const { gw } = await setup();
    const breaking = await startUpstream((req) => req.socket.destroy(), { readBody: false });
    const live = await startUpstream();
    cleanup.push(() => breaking.close(), () => live.close());
    await applyBackends(gw, [service([{ address: '127.0.0.1', port: breaking.port }, { address: '127.0.0.1', port: live.port }])]);
    const r = await send(`${gw.url}/x`, { method: 'POST', body: 'charge me once' });
    expect(r.status).toBe(502);
    expect(r.headers['x-tollgate-error']).toBe('TG_UPSTREAM_RESET');
    expect(breaking.requests).toHaveLength(1);
    expect(live.requests).toHaveLength(0);
  });

  it('config.connectAttempts 1: the refused request is answered with its error, no other endpoint tried', async () => {
    const { gw } = await setup({ connectAttempts: 1 });
    const live = await startUpstream();
    cleanup.push(() => live.close());
    await applyBackends(gw, [service([{ address: '127.0.0.1', port: await freePort() }, { address: '127.0.0.1', port: live.port }])]);
    expect((await send(`${gw.url}/x`)).status).toBe(503);
    expect(live.requests).toHaveLength(0);
    expect(await retries(gw, 'TG_UPSTREAM_REFUSED')).toBe(0);
  });
});
