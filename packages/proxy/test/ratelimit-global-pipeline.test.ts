// Global limits through the gateway, against the real envoyproxy/ratelimit service and Redis
// and mock-llm: requests and tokens descriptors on a route, combined with a local limit; the
// 429 a client sees (headers, body, openai client); both failure modes with the service stopped.
import { randomUUID } from 'node:crypto';
import { startMockLlm, type MockLlm } from '@tollgate/mock-llm';
import OpenAI from 'openai';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { send, simpleConfig, startGateway, type RawResponse, type TestGateway } from './helpers.js';
import { rlsAvailability, rlsBinaries, startRls, type RlsService } from './support/rls.js';

const availability = rlsAvailability();
const DAY = 86_400;
const CONFIGS = {
  'gw-requests': 'domain: gw-requests\ndescriptors:\n  - key: user\n    rate_limit: { unit: day, requests_per_unit: 3 }\n',
  'gw-tokens': 'domain: gw-tokens\ndescriptors:\n  - key: tenant\n    rate_limit: { unit: day, requests_per_unit: 50 }\n',
};

describe.skipIf(!availability.run)('global rate limits through the gateway', () => {
  let rls: RlsService;
  let llm: MockLlm;
  const cleanups: (() => Promise<void>)[] = [];

  beforeAll(async () => {
    llm = await startMockLlm({ port: 0 });
    rls = await startRls(rlsBinaries().found!, { configs: CONFIGS, responseHeaders: true });
  });
  afterAll(async () => {
    await rls?.stop();
    await llm?.close();
  });
  afterEach(async () => {
    while (cleanups.length) await cleanups.pop()!();
  });

  async function gateway(global: Record<string, unknown>, local?: unknown[]): Promise<TestGateway> {
    const rateLimit = { global: { service: { host: rls.address }, timeout: '2s', ...global }, ...(local ? { local } : {}) };
    const gw = await startGateway((port) => simpleConfig(port, [{ name: 'chat', policies: { traffic: { rateLimit } }, backends: [{ host: `127.0.0.1:${llm.port}` }] }]));
    cleanups.push(() => gw.close());
    return gw;
  }

  const chat = (gw: TestGateway, headers: Record<string, string>, tokens = 10): Promise<RawResponse> =>
    send(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-mock-prompt-tokens': String(tokens / 2), 'x-mock-completion-tokens': String(tokens / 2), ...headers },
      body: JSON.stringify({ model: 'mock-gpt', messages: [{ role: 'user', content: 'hi' }] }),
    });

  it('a Requests descriptor admits its limit, then 429 with the service headers, never calling the backend', async () => {
    const gw = await gateway({ domain: 'gw-requests', descriptors: [{ unit: 'Requests', entries: [{ name: 'user', expression: 'request.headers["x-user"]' }] }] });
    const user = { 'x-user': `u-${randomUUID()}` };
    const ok = [await chat(gw, user), await chat(gw, user), await chat(gw, user)];
    expect(ok.map((r) => r.status)).toEqual([200, 200, 200]);
    expect(ok.map((r) => r.headers['x-ratelimit-remaining'])).toEqual(['2', '1', '0']);
    expect(ok[0]!.headers['x-ratelimit-limit']).toBe(`3, 3;w=${DAY}`);
    expect(ok[0]!.headers['x-proxy-ratelimited']).toBeUndefined();
    const before = llm.requestCount;
    const over = await chat(gw, user);
    expect(over.status).toBe(429);
    expect(over.body).toBe('rate limit exceeded');
    // The same answer as a local limit's: text, the catalog code, the limit headers, retry-after.
    expect(over.headers['content-type']).toContain('text/plain');
    expect(over.headers['x-tollgate-error']).toBe('TG_RATE_LIMITED');
    expect(over.headers['x-proxy-ratelimited']).toBe('true');
    expect(over.headers['x-ratelimit-limit']).toBe(`3, 3;w=${DAY}`);
    expect(over.headers['ratelimit-limit']).toBe('3');
    expect(Number(over.headers['retry-after'])).toBeGreaterThan(0);
    expect(llm.requestCount).toBe(before);
    // Another user has their own counter.
    expect((await chat(gw, { 'x-user': `u-${randomUUID()}` })).status).toBe(200);
  });

  it('a Tokens descriptor is charged with the response usage after the call', async () => {
    const gw = await gateway({ domain: 'gw-tokens', descriptors: [{ unit: 'Tokens', entries: [{ name: 'tenant', expression: 'request.headers["x-tenant"]' }] }] });
    const tenant = { 'x-tenant': `t-${randomUUID()}` };
    expect((await chat(gw, tenant, 30)).status).toBe(200); // 30 of 50
    expect((await chat(gw, tenant, 30)).status).toBe(200); // 60: crosses, succeeds
    // The usage is charged by a second call to the service after the response
    // (docs/rate-limiting.md), which the next request can overtake on a loaded machine: small
    // requests, each a round trip later, until one is refused. Five of 2 tokens (10) could not
    // cross the limit of 50 on their own: only the two charges of 30 make it refuse.
    let over: RawResponse | undefined;
    for (let i = 0; i < 5 && over?.status !== 429; i++) over = await chat(gw, tenant, 2);
    expect(over!.status).toBe(429);
    expect(over!.headers['x-proxy-ratelimited']).toBe('true');
  });

  it('local and global combine: the local limit refuses first without asking the service', async () => {
    const gw = await gateway({ domain: 'gw-requests', descriptors: [{ unit: 'Requests', entries: [{ name: 'user', expression: 'request.headers["x-user"]' }] }] }, [{ requests: 1, unit: 'Hours' }]);
    const user = { 'x-user': `u-${randomUUID()}` };
    expect((await chat(gw, user)).status).toBe(200);
    const refused = await chat(gw, user);
    expect(refused.status).toBe(429);
    expect(refused.headers['x-proxy-ratelimited']).toBeUndefined();
  });

  it('a route-level global refusal gives back the gateway-level local request token', async () => {
    const rateLimit = { global: { service: { host: rls.address }, timeout: '2s', domain: 'gw-requests', descriptors: [{ unit: 'Requests', entries: [{ name: 'user', expression: 'request.headers["x-user"]' }] }] } };
    const gw = await startGateway(
      (port) => simpleConfig(port, [{ name: 'chat', policies: { traffic: { rateLimit } }, backends: [{ host: `127.0.0.1:${llm.port}` }] }], {
        policies: { traffic: { rateLimit: { local: [{ requests: 4, unit: 'Hours' }] } } },
      }),
    );
    cleanups.push(() => gw.close());
    const a = { 'x-user': `u-${randomUUID()}` };
    for (let i = 0; i < 3; i++) expect((await chat(gw, a)).status).toBe(200);
    // The gateway admits the 4th (its last token), the service refuses it: the token comes back.
    const over = await chat(gw, a);
    expect(over.status).toBe(429);
    expect(over.headers['x-proxy-ratelimited']).toBe('true');
    expect((await chat(gw, { 'x-user': `u-${randomUUID()}` })).status).toBe(200);
    expect((await chat(gw, { 'x-user': `u-${randomUUID()}` })).status).toBe(429);
  });

  it('a gateway-level global limit stays charged for a request the route refuses: the service cannot give back', async () => {
    const global = { service: { host: rls.address }, timeout: '2s', domain: 'gw-requests', descriptors: [{ unit: 'Requests', entries: [{ name: 'user', expression: 'request.headers["x-user"]' }] }] };
    const gw = await startGateway(
      (port) => simpleConfig(port, [{ name: 'chat', policies: { traffic: { rateLimit: { local: [{ requests: 1, unit: 'Hours' }] } } }, backends: [{ host: `127.0.0.1:${llm.port}` }] }], {
        policies: { traffic: { rateLimit: { global } } },
      }),
    );
    cleanups.push(() => gw.close());
    const user = { 'x-user': `u-${randomUUID()}` };
    expect((await chat(gw, user)).status).toBe(200);
    // Counted by the service (3 a day), then refused by the route's local limit.
    for (let i = 0; i < 2; i++) {
      const r = await chat(gw, user);
      expect(r.status).toBe(429);
      expect(r.headers['x-proxy-ratelimited']).toBeUndefined();
    }
    expect((await chat(gw, user)).headers['x-proxy-ratelimited']).toBe('true');
  });

  it('the openai client sees a RateLimitError on a global 429', async () => {
    const gw = await gateway({ domain: 'gw-requests', descriptors: [{ unit: 'Requests', entries: [{ name: 'user', expression: 'request.headers["x-user"]' }] }] });
    const client = new OpenAI({ apiKey: 'sk-test', baseURL: `${gw.url}/v1`, maxRetries: 0, defaultHeaders: { 'x-user': `u-${randomUUID()}` } });
    for (let i = 0; i < 3; i++) await client.chat.completions.create({ model: 'mock-gpt', messages: [{ role: 'user', content: 'hi' }] });
    const err = await client.chat.completions.create({ model: 'mock-gpt', messages: [{ role: 'user', content: 'hi' }] }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.RateLimitError);
    const limited = err as InstanceType<typeof OpenAI.RateLimitError>;
    expect(limited.headers?.get('x-proxy-ratelimited')).toBe('true');
    // As for a local limit: the gateway's message, its code, when to retry.
    expect(limited.message).toBe('429 rate limit exceeded');
    expect(limited.headers?.get('x-tollgate-error')).toBe('TG_RATE_LIMITED');
    expect(Number(limited.headers?.get('retry-after'))).toBeGreaterThan(0);
  });

  it('a reload that drops the global limit closes the channel to the service', async () => {
    const gw = await gateway({ domain: 'gw-requests', descriptors: [{ unit: 'Requests', entries: [{ name: 'user', expression: 'request.headers["x-user"]' }] }] });
    expect(gw.gateway.runtime.rateLimitServices.addresses()).toEqual([rls.address]);
    expect(await gw.rewrite(simpleConfig(gw.port, [{ name: 'chat', backends: [{ host: `127.0.0.1:${llm.port}` }] }]))).toBe('reloaded');
    expect(gw.gateway.runtime.rateLimitServices.addresses()).toEqual([]);
    expect((await chat(gw, { 'x-user': 'u' })).status).toBe(200);
  });

  describe('with the service stopped', () => {
    beforeAll(async () => rls.stopService());
    afterAll(async () => rls.restartService());

    it('FailOpen lets requests through', async () => {
      const gw = await gateway({ domain: 'gw-requests', failureMode: 'FailOpen', timeout: '500ms', descriptors: [{ unit: 'Requests', entries: [{ name: 'user', expression: 'request.headers["x-user"]' }] }] });
      const r = await chat(gw, { 'x-user': 'anyone' });
      expect(r.status).toBe(200);
      const metrics = await (await fetch(`http://${gw.gateway.ops.metrics.address}/metrics`)).text();
      expect(metrics).toContain('tollgate_ratelimit_decisions_total{kind="global",level="global",result="failed_open"} 1');
    });

    it('FailClosed refuses with 500 and never calls the backend', async () => {
      const gw = await gateway({ domain: 'gw-requests', failureMode: 'FailClosed', timeout: '500ms', descriptors: [{ unit: 'Requests', entries: [{ name: 'user', expression: 'request.headers["x-user"]' }] }] });
      const before = llm.requestCount;
      const r = await chat(gw, { 'x-user': 'anyone' });
      expect(r.status).toBe(500);
      expect(r.body).toBe('rate limit service unavailable');
      expect(r.headers['x-proxy-ratelimited']).toBeUndefined();
      expect(llm.requestCount).toBe(before);
    });
  });
});
