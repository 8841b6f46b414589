// Readiness and the gRPC channel to the rate limit service, against the real
// envoyproxy/ratelimit and Redis: the channel connects when a config names the service (not
// at the first call, which would then outlast its 100 ms deadline and fail open), and
// /healthz/ready waits only for the services of gateway-level policies (what the Gateway's
// owner configured): until each has answered (FailClosed) or its first connection attempt has
// concluded (FailOpen). A service named by a route-level policy never holds readiness: when it
// cannot answer, that route's requests alone fail as its failureMode says.
import { randomUUID } from 'node:crypto';
import { startMockLlm, type MockLlm } from '@tollgate/mock-llm';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { freePort, openTrace, send, simpleConfig, startGateway, type TestGateway } from './helpers.js';
import { RlsClientPool } from '../src/ratelimit/global/index.js';
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

  function global(service: string, failureMode?: string, timeout?: string) {
    return {
      service: { host: service },
      domain: 'tg-ready',
      ...(failureMode ? { failureMode } : {}),
      ...(timeout ? { timeout } : {}),
      descriptors: [{ unit: 'Requests', entries: [{ name: 'user', expression: 'request.headers["x-user"]' }] }],
    };
  }

  /** A route on x-route: <name>, with a route-level global limit when `limit` is given. */
  function route(name: string, limit?: ReturnType<typeof global>) {
    return {
      name,
      matches: [{ path: { type: 'Exact', value: '/v1/chat/completions' }, headers: [{ name: 'x-route', value: name }] }],
      ...(limit ? { policies: { traffic: { rateLimit: { global: limit } } } } : {}),
      backends: [{ host: `127.0.0.1:${llm.port}` }],
    };
  }

  /** A gateway whose listener has the gateway-level global limit `limit` (when given). */
  async function gateway(routes: unknown[], limit?: ReturnType<typeof global>): Promise<{ gw: TestGateway; config: Record<string, unknown> }> {
    const listener = limit ? { policies: { traffic: { rateLimit: { global: limit } } } } : {};
    const gw = await startGateway((port) => simpleConfig(port, routes, listener));
    const config = simpleConfig(gw.port, routes, listener);
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
    const { gw } = await gateway([route('a')], global(rls.address));
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
      const { gw } = await gateway([route('a')], global(rls.address, 'FailClosed', '10s'));
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
    const { gw } = await gateway([route('a')], global(nobody, 'FailOpen'));
    await expect.poll(async () => (await ready(gw)).status, { timeout: 30_000 }).toBe(200);
    const user = `u-${randomUUID()}`;
    expect((await call(gw, 'a', user)).status).toBe(200);
    expect((await call(gw, 'a', user)).status).toBe(200);
    expect(await metrics(gw)).toContain('tollgate_ratelimit_decisions_total{kind="global",level="global",result="failed_open"} 2');
  });

  it('a reload that adds a gateway-level FailClosed service nobody answers on makes the proxy unready until it does', async () => {
    const { gw, config } = await gateway([route('a', global(rls.address, 'FailClosed'))]);
    expect((await ready(gw)).status).toBe(200);
    const nobody = `127.0.0.1:${await freePort()}`;
    const listener = (config.binds as { listeners: Record<string, unknown>[] }[])[0]!.listeners[0]!;
    listener.policies = { traffic: { rateLimit: { global: global(nobody, 'FailClosed') } } };
    expect(await gw.rewrite(config)).toBe('reloaded');
    expect(await ready(gw)).toEqual({ status: 503, body: `waiting for rate limit service ${nobody}\n` });
    delete listener.policies;
    expect(await gw.rewrite(config)).toBe('reloaded');
    expect((await ready(gw)).status).toBe(200);
  });

  describe.each([
    ['refuses connections', async () => `127.0.0.1:${await freePort()}`],
    ['has no address (a name that does not resolve)', async () => 'rls.nowhere.invalid:8081'],
  ])('a route-level limit whose service %s', (_what, address) => {
    it.each(['FailClosed', 'FailOpen'])('%s: the proxy is ready at once and stays ready; only that route is affected, in metrics and the trace', async (mode) => {
      const nobody = await address();
      const { gw } = await gateway([route('tenant', global(nobody, mode)), route('other')]);
      // Ready from the moment the config is loaded: nothing waits on the tenant's service.
      expect(await ready(gw)).toEqual({ status: 200, body: 'ready\n' });

      const session = await openTrace(gw.adminUrl);
      await session.armed;
      const refused = await call(gw, 'tenant', `u-${randomUUID()}`);
      const events = await session.events;
      // FailClosed refuses the route's requests; FailOpen serves them without the limit.
      const answer = mode === 'FailClosed' ? { status: 500, error: 'TG_RATELIMIT_SERVICE_UNAVAILABLE' } : { status: 200, error: undefined };
      expect({ status: refused.status, error: refused.headers['x-tollgate-error'] }).toEqual(answer);
      // The other route of the listener never meets the tenant's limit.
      expect((await call(gw, 'other', `u-${randomUUID()}`)).status).toBe(200);
      expect((await ready(gw)).status).toBe(200);

      const text = await metrics(gw);
      expect(text).toContain(`tollgate_ratelimit_service_connected{service="${nobody}"} 0`);
      expect(text).toContain(`tollgate_ratelimit_decisions_total{kind="global",level="global",result="${mode === 'FailClosed' ? 'error' : 'failed_open'}"} 1`);
      expect(text).toContain(`tollgate_requests_total{route="main/tenant",status="${mode === 'FailClosed' ? 500 : 200}"} 1`);
      expect(text).toContain('tollgate_requests_total{route="main/other",status="200"} 1');

      // The trace names the route-level remoteRateLimit and ends with the route's answer.
      const selection = events.find((e) => e.message.type === 'policySelection')!.message as {
        effectivePolicy: Record<string, { source: string; config: { service: string; failureMode: string } }[] | null>;
      };
      const attached = selection.effectivePolicy.remoteRateLimit!.map((a) => ({ source: a.source, service: a.config.service, failureMode: a.config.failureMode }));
      expect(attached).toEqual([{ source: 'route', service: nobody, failureMode: mode }]);
      const final = events.find((e) => e.message.type === 'responseSnapshot' && e.message.stage === 'final response')!.message as { requestState: { response: { code: number; headers: Record<string, string> } } };
      expect({ status: final.requestState.response.code, error: final.requestState.response.headers['x-tollgate-error'] }).toEqual(answer);
    });
  });

  it('a service shared by a gateway-level and a route-level limit holds readiness for the gateway-level one', async () => {
    const nobody = `127.0.0.1:${await freePort()}`;
    const { gw } = await gateway([route('tenant', global(nobody, 'FailOpen'))], global(nobody, 'FailClosed'));
    expect(await ready(gw)).toEqual({ status: 503, body: `waiting for rate limit service ${nobody}\n` });
  });

  it('a call made while the channel is still connecting waits for the connection: the first requests of a route-level limit are decided by the service', async () => {
    const pool = new RlsClientPool();
    try {
      const client = pool.get(rls.address);
      // Readiness does not wait for this channel (route-level): the call comes before it connected.
      expect(client.attempted).toBe(false);
      const user = `u-${randomUUID()}`;
      const request = { domain: 'tg-ready', descriptors: [{ entries: [{ key: 'user', value: user }] }], hits_addend: 1 };
      expect((await client.shouldRateLimit(request, 10_000)).overall_code).toBe('OK');
      expect((await client.shouldRateLimit(request, 10_000)).overall_code).toBe('OVER_LIMIT');
    } finally {
      await pool.close();
    }
  });
});
