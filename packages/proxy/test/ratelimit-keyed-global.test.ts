// Keyed global descriptors and their limit overrides, through the gateway against the real
// envoyproxy/ratelimit service and Redis: the key is the descriptor's first entry, the limit
// travels with it (RateLimitDescriptor.limit) and the service applies it although its own config
// for the domain has no limits at all; Tokens descriptors are charged under the override; the
// windows are the service's (UTC days, 30-day months from the epoch); requests without the key
// share the empty key; a gateway-level descriptor keyed on the consumer is asked after routing.
// Windows are a day or longer, so a window boundary cannot fall inside a run in practice; every
// test uses its own keys.
import { randomUUID } from 'node:crypto';
import { startMockLlm, type MockLlm } from '@tollgate/mock-llm';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { send, simpleConfig, startGateway, type RawResponse, type TestGateway } from './helpers.js';
import { counters, rlsAvailability, rlsBinaries, startRls, type RlsService } from './support/rls.js';
import { slowRelay } from './support/slow-relay.js';

const availability = rlsAvailability();
const DAY = 86_400;
const MONTH = 30 * DAY;
// A domain the operator grants, with no limits of its own: every limit comes from the policies.
const CONFIGS = { kg: 'domain: kg\n' };

describe.skipIf(!availability.run)('keyed global descriptors with limit overrides', () => {
  let rls: RlsService;
  let llm: MockLlm;
  const cleanups: (() => Promise<void>)[] = [];

  beforeAll(async () => {
    llm = await startMockLlm({ port: 0 });
    rls = await startRls(rlsBinaries().found!, { configs: CONFIGS });
  });
  afterAll(async () => {
    await rls?.stop();
    await llm?.close();
  });
  afterEach(async () => {
    while (cleanups.length) await cleanups.pop()!();
  });

  const global = (descriptors: unknown[], service = rls.address) => ({ service: { host: service }, timeout: '2s', domain: 'kg', descriptors });

  async function gateway(descriptors: unknown[], service?: string): Promise<TestGateway> {
    const gw = await startGateway((port) => simpleConfig(port, [{ name: 'chat', policies: { traffic: { rateLimit: { global: global(descriptors, service) } } }, backends: [{ host: `127.0.0.1:${llm.port}` }] }]));
    cleanups.push(() => gw.close());
    return gw;
  }

  const chat = (gw: TestGateway, headers: Record<string, string>, tokens = 10, path = '/v1/chat/completions'): Promise<RawResponse> =>
    send(`${gw.url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-mock-prompt-tokens': String(tokens / 2), 'x-mock-completion-tokens': String(tokens / 2), ...headers },
      body: JSON.stringify({ model: 'mock-gpt', messages: [{ role: 'user', content: 'hi' }] }),
    });

  const byUser = { type: 'Header', name: 'x-user' };
  const windowStart = (seconds: number) => Math.floor(Date.now() / 1000 / seconds) * seconds;

  it('a keyed Requests descriptor: the service applies the limit the policy sends, one counter per key', async () => {
    const gw = await gateway([{ unit: 'Requests', by: byUser, limit: { requestsPerUnit: 3, unit: 'Days' } }]);
    const alice = `a-${randomUUID()}`;
    const ok = [await chat(gw, { 'x-user': alice }), await chat(gw, { 'x-user': alice }), await chat(gw, { 'x-user': alice })];
    expect(ok.map((r) => r.status)).toEqual([200, 200, 200]);
    expect(ok.map((r) => r.headers['x-ratelimit-remaining'])).toEqual(['2', '1', '0']);
    expect(ok[0]!.headers['x-ratelimit-limit']).toBe(`3, 3;w=${DAY}`);
    const over = await chat(gw, { 'x-user': alice });
    expect(over.status).toBe(429);
    expect(over.headers['x-proxy-ratelimited']).toBe('true');
    expect((await chat(gw, { 'x-user': `b-${randomUUID()}` })).status).toBe(200);
    // The key is the descriptor's first entry (header.<name>); the window a UTC day.
    expect(await counters(rls, `kg_header.x-user_${alice}_`)).toEqual({ [`kg_header.x-user_${alice}_${windowStart(DAY)}`]: 4 });
  });

  it('without the override the same descriptor has no limit: the domain config holds none', async () => {
    const gw = await gateway([{ unit: 'Requests', by: byUser }]);
    const alice = `a-${randomUUID()}`;
    for (let i = 0; i < 5; i++) expect((await chat(gw, { 'x-user': alice })).status).toBe(200);
  });

  it('a keyed Tokens descriptor is checked under its override and charged with the usage after the response', async () => {
    // The service hears from the gateway 300 ms late: a charge sent after the response could
    // not be counted yet when the client reads the service's counters.
    const relay = await slowRelay(rls.address, 300);
    cleanups.push(() => relay.close());
    const gw = await gateway([{ unit: 'Tokens', by: byUser, limit: { requestsPerUnit: 50, unit: 'Days' } }], relay.address);
    const user = `a-${randomUUID()}`;
    const alice = { 'x-user': user };
    const counted = async () => Object.values(await counters(rls, `kg_header.x-user_${user}_`)).reduce((a, b) => a + b, 0);
    expect((await chat(gw, alice, 30)).status).toBe(200);
    // The charge is made before the response's last bytes: once the client has the response,
    // the service counts its usage, and the client's next request meets it.
    expect(await counted()).toBe(30);
    expect((await chat(gw, alice, 30)).status).toBe(200); // 60: crosses, succeeds
    expect(await counted()).toBe(60);
    const over = await chat(gw, alice, 2);
    expect(over.status).toBe(429);
    expect(over.headers['x-ratelimit-limit']).toBe(`50, 50;w=${DAY}`);
    expect((await chat(gw, { 'x-user': `b-${randomUUID()}` }, 2)).status).toBe(200);
  });

  it('a streamed completion is charged before its stream ends: two gateways sharing a budget admit it exactly', async () => {
    // Two replicas of one route, the client alternating between them: each request meets the
    // usage of every earlier one, whichever replica answered it.
    const descriptors = [{ unit: 'Tokens', by: byUser, limit: { requestsPerUnit: 100, unit: 'Days' } }];
    const relay = await slowRelay(rls.address, 300);
    cleanups.push(() => relay.close());
    const replicas = [await gateway(descriptors, relay.address), await gateway(descriptors, relay.address)];
    const user = `s-${randomUUID()}`;
    const counted = async () => Object.values(await counters(rls, `kg_header.x-user_${user}_`)).reduce((a, b) => a + b, 0);
    let admitted = 0;
    let refused = 0;
    for (let i = 0; i < 12 && refused < 2; i++) {
      const r = await send(`${replicas[i % 2]!.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-user': user, 'x-mock-prompt-tokens': '10', 'x-mock-completion-tokens': '10' },
        body: JSON.stringify({ model: 'mock-gpt', stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'hi' }] }),
      });
      if (r.status === 429) {
        refused++;
        continue;
      }
      expect(r.status).toBe(200);
      expect(r.body).toContain('data: [DONE]');
      admitted++;
      expect(await counted()).toBe(20 * admitted);
    }
    // 100 tokens, 20 a request: five reach the budget, the sixth (at the budget, not over it)
    // crosses it, and every later one is refused, on both replicas.
    expect(admitted).toBe(6);
    expect(refused).toBe(2);
  });

  it("Months is the service's fixed 30-day window counted from the epoch, not a calendar month", async () => {
    const gw = await gateway([{ unit: 'Requests', by: byUser, limit: { requestsPerUnit: 2, unit: 'Months' } }]);
    const alice = `a-${randomUUID()}`;
    const before = Math.floor(Date.now() / 1000);
    const r = await chat(gw, { 'x-user': alice });
    const after = Math.ceil(Date.now() / 1000);
    expect(r.status).toBe(200);
    expect(r.headers['x-ratelimit-limit']).toBe(`2, 2;w=${MONTH}`);
    const reset = Number(r.headers['x-ratelimit-reset']);
    expect(reset).toBeLessThanOrEqual(MONTH - (before % MONTH));
    expect(reset).toBeGreaterThanOrEqual(MONTH - (after % MONTH));
    expect(Object.keys(await counters(rls, `kg_header.x-user_${alice}_`))).toEqual([`kg_header.x-user_${alice}_${windowStart(MONTH)}`]);
  });

  it('requests without the key share one budget, the empty key: leaving the header out is no way around the limit', async () => {
    const gw = await gateway([{ unit: 'Requests', by: byUser, limit: { requestsPerUnit: 2, unit: 'Days' } }]);
    expect((await chat(gw, {})).status).toBe(200);
    expect((await chat(gw, { 'x-user': '' })).status).toBe(200);
    const over = await chat(gw, {});
    expect(over.status).toBe(429);
    expect(over.headers['x-proxy-ratelimited']).toBe('true');
    expect((await chat(gw, { 'x-user': `a-${randomUUID()}` })).status).toBe(200);
    expect(await counters(rls, 'kg_header.x-user__')).toEqual({ [`kg_header.x-user__${windowStart(DAY)}`]: 3 });
  });

  it('a gateway-level descriptor keyed on the consumer is asked after routing, the others before it', async () => {
    const user = `u-${randomUUID()}`;
    const group = { type: 'Expression', expression: `consumer.group + "/${user}"` };
    const descriptors = [
      { unit: 'Requests', by: byUser, limit: { requestsPerUnit: 3, unit: 'Days' } },
      { unit: 'Requests', by: group, limit: { requestsPerUnit: 3, unit: 'Days' } },
    ];
    const gw = await startGateway((port) =>
      simpleConfig(port, [{ name: 'chat', matches: [{ path: { type: 'Exact', value: '/v1/chat/completions' } }], backends: [{ host: `127.0.0.1:${llm.port}` }] }], {
        policies: { traffic: { rateLimit: { global: global(descriptors) } } },
      }),
    );
    cleanups.push(() => gw.close());
    // No route: the header descriptor counted it before routing; the consumer one never ran.
    expect((await chat(gw, { 'x-user': user }, 10, '/nowhere')).status).toBe(404);
    expect((await chat(gw, { 'x-user': user })).status).toBe(200);
    const day = windowStart(DAY);
    expect(await counters(rls, `kg_header.x-user_${user}_`)).toEqual({ [`kg_header.x-user_${user}_${day}`]: 2 });
    expect(await counters(rls, `kg_key_/${user}_`)).toEqual({ [`kg_key_/${user}_${day}`]: 1 });
  });
});
