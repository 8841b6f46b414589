// Readiness and the gRPC channel to the rate limit service, against the real
// envoyproxy/ratelimit and Redis: the channel connects when a config names the service (not
// at the first call, which would then outlast its 100 ms deadline and fail open), and
// /healthz/ready answers 200 only once every service in use has answered (FailClosed) or its
// first connection attempt has concluded (FailOpen).
import { randomUUID } from 'node:crypto';
import { startMockLlm, type MockLlm } from '@tollgate/mock-llm';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { freePort, send, simpleConfig, startGateway, type TestGateway } from './helpers.js';
import { rlsAvailability, rlsBinaries, startRls, type RlsService } from './support/rls.js';

const availability = rlsAvailability();
const CONFIG = { 'tg-ready': 'domain: tg-ready\ndescriptors:\n  - key: user\n    rate_limit: { unit: day, requests_per_unit: 1 }\n' };

describe.skipIf(!availability.run)('readiness and the rate limit service', () => {
  let rls: RlsService;
  let llm: MockLlm;
  const cleanups: (() => Promise<void>)[] = [];

  beforeAll(async () => {
    llm = await startMockLlm({ port: 0 });
    rls = await startRls(rlsBinaries().found!, { configs: CONFIG });
  });
  afterAll(async () => {
    await rls?.stop();
    await llm?.close();
  });
  afterEach(async () => {
    while (cleanups.length) await cleanups.pop()!();
  });

  function route(name: string, service: string, failureMode?: string, timeout?: string) {
    const global = {
      service: { host: service },
      domain: 'tg-ready',
      ...(failureMode ? { failureMode } : {}),
      ...(timeout ? { timeout } : {}),
      descriptors: [{ unit: 'Requests', entries: [{ name: 'user', expression: 'request.headers["x-user"]' }] }],
    };
    return { name, matches: [{ path: { type: 'Exact', value: '/v1/chat/completions' }, headers: [{ name: 'x-route', value: name }] }], policies: { traffic: { rateLimit: { global } } }, backends: [{ host: `127.0.0.1:${llm.port}` }] };
  }

  async function gateway(routes: unknown[]): Promise<{ gw: TestGateway; config: Record<string, unknown> }> {
    const gw = await startGateway((port) => simpleConfig(port, routes));
    const config = simpleConfig(gw.port, routes);
    cleanups.push(() => gw.close());
    return { gw, config };
  }

  const ready = async (gw: TestGateway) => {
    const r = await send(`http://${gw.gateway.ops.readiness.address}/healthz/ready`);
    return { status: r.status, body: r.body };
  };
  const metrics = async (gw: TestGateway) => (await fetch(`http://${gw.gateway.ops.metrics.address}/metrics`)).text();
  const call = (gw: TestGateway, route: string, user: string) =>
    send(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-route': route, 'x-user': user },
      body: '{"model":"m","messages":[{"role":"user","content":"hi"}]}',
    });

  it('the first request after readiness is decided by the service (default 100 ms timeout), not failed open', async () => {
    const { gw } = await gateway([route('a', rls.address)]);
    await expect.poll(async () => (await ready(gw)).status).toBe(200);
    const user = `u-${randomUUID()}`;
    const first = await call(gw, 'a', user);
    expect(first.status).toBe(200);
    expect(first.headers['x-ratelimit-limit']).toBe('1, 1;w=86400');
    expect((await call(gw, 'a', user)).status).toBe(429);
    const text = await metrics(gw);
    expect(text).not.toContain('result="failed_open"');
    expect(text).toContain('tollgate_ratelimit_decisions_total{kind="global",level="global",result="allowed"} 1');
  });

  it('FailClosed: not ready while the service is down; ready once it answers, and the first request is limited by it', async () => {
    await rls.stopService();
    try {
      // What is tested is the gate, not the service's speed: a call on a loaded machine right
      // after the service restarted may take longer than the 100 ms default, and FailClosed
      // would then answer 500 for a reason this test is not about.
      const { gw } = await gateway([route('a', rls.address, 'FailClosed', '10s')]);
      const down = await ready(gw);
      expect(down).toEqual({ status: 503, body: `waiting for rate limit service ${rls.address}\n` });
      await rls.restartService();
      await expect.poll(async () => (await ready(gw)).status, { timeout: 10_000 }).toBe(200);
      const user = `u-${randomUUID()}`;
      expect((await call(gw, 'a', user)).status).toBe(200);
      expect((await call(gw, 'a', user)).status).toBe(429);
    } finally {
      await rls.restartService().catch(() => undefined);
    }
  });

  it('FailOpen: ready once the first connection attempt has failed; requests then pass unlimited', async () => {
    const nobody = `127.0.0.1:${await freePort()}`;
    const { gw } = await gateway([route('a', nobody, 'FailOpen')]);
    await expect.poll(async () => (await ready(gw)).status, { timeout: 30_000 }).toBe(200);
    const user = `u-${randomUUID()}`;
    expect((await call(gw, 'a', user)).status).toBe(200);
    expect((await call(gw, 'a', user)).status).toBe(200);
    expect(await metrics(gw)).toContain('tollgate_ratelimit_decisions_total{kind="global",level="global",result="failed_open"} 2');
  });

  it('a reload that adds a FailClosed service nobody answers on makes the proxy unready until it does', async () => {
    const { gw, config } = await gateway([route('a', rls.address, 'FailClosed')]);
    await expect.poll(async () => (await ready(gw)).status).toBe(200);
    const nobody = `127.0.0.1:${await freePort()}`;
    const binds = config.binds as { listeners: { routes: unknown[] }[] }[];
    binds[0]!.listeners[0]!.routes.push(route('b', nobody, 'FailClosed'));
    expect(await gw.rewrite(config)).toBe('reloaded');
    expect(await ready(gw)).toEqual({ status: 503, body: `waiting for rate limit service ${nobody}\n` });
    binds[0]!.listeners[0]!.routes.pop();
    expect(await gw.rewrite(config)).toBe('reloaded');
    expect((await ready(gw)).status).toBe(200);
  });
});
