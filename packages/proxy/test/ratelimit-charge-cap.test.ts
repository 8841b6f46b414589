// What one response can charge: a backend reports its own usage, and a tenant's backend behind
// a gateway-level token limit could otherwise charge up to 2^32-1 tokens in one response and
// exhaust a budget every route shares. config.maxTokensChargedPerResponse (default 2,000,000)
// bounds the charge to local token budgets and global Tokens descriptors alike; the global
// ones against the real envoyproxy/ratelimit and Redis, whose counters are read back.
import { randomUUID } from 'node:crypto';
import { startMockLlm, type MockLlm } from '@tollgate/mock-llm';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { send, simpleConfig, startGateway, type RawResponse, type TestGateway } from './helpers.js';
import { counters, rlsAvailability, rlsBinaries, startRls, type RlsService } from './support/rls.js';

const availability = rlsAvailability();
/** The most a response could charge before the cap: hits_addend is a uint32. */
const HUGE = 4_294_967_295;
const CONFIGS = { 'tg-cap': 'domain: tg-cap\ndescriptors:\n  - key: tenant\n    rate_limit: { unit: day, requests_per_unit: 3000000 }\n' };

let llm: MockLlm;
const cleanups: (() => Promise<void>)[] = [];
beforeAll(async () => {
  llm = await startMockLlm({ port: 0 });
});
afterAll(async () => {
  await llm?.close();
});
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

async function gateway(rateLimit: Record<string, unknown>, settings: Record<string, unknown> = {}): Promise<TestGateway> {
  const listener = { policies: { traffic: { rateLimit } } };
  const gw = await startGateway((port) => ({ config: settings, ...simpleConfig(port, [{ name: 'tenant', backends: [{ host: `127.0.0.1:${llm.port}` }] }], listener) }));
  cleanups.push(() => gw.close());
  return gw;
}

/** A completion whose backend reports `promptTokens` prompt tokens and 2 completion tokens. */
const chat = (gw: TestGateway, headers: Record<string, string>, promptTokens: number): Promise<RawResponse> =>
  send(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-mock-prompt-tokens': String(promptTokens), 'x-mock-completion-tokens': '2', ...headers },
    body: JSON.stringify({ model: 'mock-gpt', messages: [{ role: 'user', content: 'hi' }] }),
  });

const metrics = async (gw: TestGateway) => (await fetch(`http://${gw.gateway.ops.metrics.address}/metrics`)).text();
const dump = async (gw: TestGateway) => (await (await fetch(`${gw.adminUrl}/config_dump`)).json()) as { settings: Record<string, number> };

describe('the charge of one response to local token budgets', () => {
  it('is capped at config.maxTokensChargedPerResponse: a huge reported usage does not exhaust a gateway-level budget', async () => {
    const gw = await gateway({ local: [{ tokens: 5000, unit: 'Hours' }] }, { maxTokensChargedPerResponse: 1000 });
    expect((await dump(gw)).settings.maxTokensChargedPerResponse).toBe(1000);
    expect((await chat(gw, {}, HUGE)).status).toBe(200);
    // 1000 of 5000 charged: the next requests pass; uncapped, the budget would be gone.
    const next = await chat(gw, {}, 10);
    expect(next.status).toBe(200);
    expect(await metrics(gw)).toContain('tollgate_llm_tokens_total{route="main/tenant",model="mock-gpt",source="reported"} 1012');
    expect(gw.logs.lines.some((l) => String(l.msg).includes('more LLM tokens than one response may be charged') && l.reported === HUGE + 2)).toBe(true);
  });

  it('defaults to 2,000,000 tokens', async () => {
    const gw = await gateway({ local: [{ tokens: 2_000_100, unit: 'Hours' }] });
    expect((await chat(gw, {}, HUGE)).status).toBe(200);
    const next = await chat(gw, {}, 10);
    expect(next.status).toBe(200);
    expect(await metrics(gw)).toContain('tollgate_llm_tokens_total{route="main/tenant",model="mock-gpt",source="reported"} 2000012');
    expect((await dump(gw)).settings.maxTokensChargedPerResponse).toBe(2_000_000);
  });
});

describe.skipIf(!availability.run)('the charge of one response to global Tokens descriptors (envoyproxy/ratelimit)', () => {
  let rls: RlsService;
  beforeAll(async () => {
    rls = await startRls(rlsBinaries().found!, { configs: CONFIGS });
  });
  afterAll(async () => {
    await rls?.stop();
  });

  const tokens = (rls: RlsService) => ({
    global: { service: { host: rls.address }, timeout: '2s', domain: 'tg-cap', descriptors: [{ unit: 'Tokens', entries: [{ name: 'tenant', expression: 'request.headers["x-tenant"]' }] }] },
  });

  it.each([
    ['config.maxTokensChargedPerResponse', { maxTokensChargedPerResponse: 1000 }, 1000],
    ['the default', {}, 2_000_000],
  ])('the counter grows by at most %s per response', async (_what, settings, cap) => {
    const gw = await gateway(tokens(rls), settings);
    const tenant = `t-${randomUUID()}`;
    expect((await chat(gw, { 'x-tenant': tenant }, HUGE)).status).toBe(200);
    // The charge is a call of its own after the response: wait for the counter to appear.
    await expect.poll(async () => Object.values(await counters(rls, `tg-cap_tenant_${tenant}_`))).toHaveLength(1);
    expect(Object.values(await counters(rls, `tg-cap_tenant_${tenant}_`))).toEqual([cap]);
    // Within the limit of 3,000,000: the tenant is not locked out for the day.
    expect((await chat(gw, { 'x-tenant': tenant }, 10)).status).toBe(200);
  });
});
