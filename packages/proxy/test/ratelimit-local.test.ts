// Local rate limits end to end, against mock-llm over real sockets, with an injected clock
// for window resets: request buckets with burst, token budgets (the crossing request
// succeeds, later ones get 429, the window resets by itself), streaming with and without
// include_usage, estimation, combined entries, gateway and route levels, concurrency,
// headers, metrics, and the official openai client.
import type { MockLlm } from '@tollgate/mock-llm';
import OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { closedAfterEach, openTrace, type RawResponse, send, simpleConfig, startGateway, startUpstream, type TestGateway, useMockLlm } from './helpers.js';

let llm: MockLlm;
let now = 1_000_000_000;
const clock = () => now;
useMockLlm((started) => (llm = started));
const cleanups = closedAfterEach();

async function gateway(routes: unknown[], listener: Record<string, unknown> = {}): Promise<TestGateway> {
  const gw = await startGateway((port) => simpleConfig(port, routes, listener), { clock });
  cleanups.push(() => gw.close());
  return gw;
}

/** A route to mock-llm's chat endpoint; `which` adds a match on the x-which header. */
function chatRoute(name: string, local: unknown[], which?: string) {
  const match = { path: { type: 'Exact', value: '/v1/chat/completions' }, ...(which ? { headers: [{ name: 'x-which', value: which }] } : {}) };
  return { name, matches: [match], policies: { traffic: { rateLimit: { local } } }, backends: [{ host: `127.0.0.1:${llm.port}` }] };
}

/** A chat completion whose usage is prompt + completion tokens as given. */
function chat(gw: TestGateway, opts: { prompt?: number; completion?: number; stream?: boolean; includeUsage?: boolean; usage?: 'none'; which?: string; headers?: Record<string, string> } = {}): Promise<RawResponse> {
  const body: Record<string, unknown> = { model: 'mock-gpt', messages: [{ role: 'user', content: 'count these tokens please' }] };
  if (opts.stream) body.stream = true;
  if (opts.includeUsage) body.stream_options = { include_usage: true };
  return send(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-mock-prompt-tokens': String(opts.prompt ?? 10),
      'x-mock-completion-tokens': String(opts.completion ?? 10),
      ...(opts.usage ? { 'x-mock-usage': opts.usage } : {}),
      ...(opts.which ? { 'x-which': opts.which } : {}),
      ...opts.headers,
    },
    body: JSON.stringify(body),
  });
}

const statuses = (rs: RawResponse[]) => rs.map((r) => r.status);

/** What chat()'s prompt reserves at admission: its 25 bytes of message content, 4 bytes a token. */
const PROMPT_RESERVE = 7;

describe('requests limit (token bucket)', () => {
  it('admits requests + burst, then 429 without calling the backend; refills by requests each unit', async () => {
    const gw = await gateway([chatRoute('chat', [{ requests: 3, burst: 2, unit: 'Minutes' }])]);
    const before = llm.requestCount;
    const rs: RawResponse[] = [];
    for (let i = 0; i < 6; i++) rs.push(await chat(gw));
    expect(statuses(rs)).toEqual([200, 200, 200, 200, 200, 429]);
    expect(llm.requestCount - before).toBe(5);
    expect(rs.map((r) => r.headers['x-ratelimit-remaining'])).toEqual(['4', '3', '2', '1', '0', '0']);
    expect(rs.every((r) => r.headers['x-ratelimit-limit'] === '5')).toBe(true);
    const refused = rs[5]!;
    expect(refused.body).toBe('rate limit exceeded');
    expect(refused.headers['content-type']).toContain('text/plain');
    expect(refused.headers['x-tollgate-error']).toBe('TG_RATE_LIMITED');
    expect(refused.headers['retry-after']).toBe(refused.headers['x-ratelimit-reset']);
    expect(Number(refused.headers['x-ratelimit-reset'])).toBeGreaterThan(0);
    expect(refused.headers['x-proxy-ratelimited']).toBeUndefined();
    now += 60_000;
    const after: RawResponse[] = [];
    for (let i = 0; i < 4; i++) after.push(await chat(gw));
    expect(statuses(after)).toEqual([200, 200, 200, 429]);
  });

  it('never admits more than the capacity under concurrency', async () => {
    const gw = await gateway([chatRoute('chat', [{ requests: 5, unit: 'Hours' }])]);
    const before = llm.requestCount;
    const rs = await Promise.all(Array.from({ length: 20 }, () => chat(gw)));
    expect(statuses(rs).filter((s) => s === 200)).toHaveLength(5);
    expect(statuses(rs).filter((s) => s === 429)).toHaveLength(15);
    expect(llm.requestCount - before).toBe(5);
  });
});

describe('tokens limit (budget per window)', () => {
  it('the request that crosses the budget succeeds; later ones get 429 until the window resets', async () => {
    const gw = await gateway([chatRoute('chat', [{ tokens: 100, unit: 'Minutes' }])]);
    const first = await chat(gw, { prompt: 30, completion: 30 }); // 60 used
    expect(first.status).toBe(200);
    expect(first.headers['x-ratelimit-remaining']).toBe(String(100 - PROMPT_RESERVE));
    const crossing = await chat(gw, { prompt: 30, completion: 30 }); // 120 used: crosses, still succeeds
    expect(crossing.status).toBe(200);
    expect(crossing.headers['x-ratelimit-remaining']).toBe(String(40 - PROMPT_RESERVE));
    const refused = await chat(gw);
    expect(refused.status).toBe(429);
    expect(refused.headers['x-ratelimit-remaining']).toBe('0');
    expect(refused.headers['x-ratelimit-limit']).toBe('100');
    now += 59_000;
    expect((await chat(gw)).status).toBe(429);
    now += 1_000;
    const reset = await chat(gw);
    expect(reset.status).toBe(200);
    expect(reset.headers['x-ratelimit-remaining']).toBe(String(100 - PROMPT_RESERVE));
  });

  it('a usage exactly at the budget is still within budget', async () => {
    const gw = await gateway([chatRoute('chat', [{ tokens: 40, unit: 'Hours' }])]);
    expect((await chat(gw, { prompt: 20, completion: 20 })).status).toBe(200);
    expect((await chat(gw, { prompt: 1, completion: 1 })).status).toBe(200);
    expect((await chat(gw)).status).toBe(429);
  });

  it('counts a stream from its final usage chunk and passes the chunk through when the client asked', async () => {
    const gw = await gateway([chatRoute('chat', [{ tokens: 50, unit: 'Hours' }])]);
    const r = await chat(gw, { stream: true, includeUsage: true, prompt: 25, completion: 30 });
    expect(r.status).toBe(200);
    expect(r.body).toContain('"choices":[]');
    expect(r.body).toContain('"total_tokens":55');
    expect(r.body.trimEnd().endsWith('data: [DONE]')).toBe(true);
    expect((await chat(gw)).status).toBe(429);
  });

  it('asks the backend for usage when the client did not, and hides that chunk from the client', async () => {
    const gw = await gateway([chatRoute('chat', [{ tokens: 50, unit: 'Hours' }])]);
    const r = await chat(gw, { stream: true, prompt: 25, completion: 30 });
    expect(r.status).toBe(200);
    expect(r.body).not.toContain('"usage":{');
    expect(r.body).not.toContain('"choices":[]');
    const words = r.body.split('\n\n').filter((e) => e.startsWith('data: {'));
    expect(words.length).toBeGreaterThan(30);
    expect(r.body.trimEnd().endsWith('data: [DONE]')).toBe(true);
    expect((await chat(gw)).status).toBe(429);
  });

  it('estimates with a tokenizer when the backend reports no usage, and says so in metrics', async () => {
    const gw = await gateway([chatRoute('chat', [{ tokens: 1_000_000, unit: 'Hours' }])]);
    const r = await chat(gw, { usage: 'none', completion: 12 });
    expect(r.status).toBe(200);
    expect(r.headers['x-ratelimit-remaining']).toBe(String(1_000_000 - PROMPT_RESERVE));
    const estimated = Number(/tollgate_llm_tokens_total\{route="main\/chat",model="mock-gpt",source="estimated"\} (\d+)/.exec(await metricsText(gw))?.[1]);
    expect(estimated).toBeGreaterThan(12);
    const next = await chat(gw);
    expect(Number(next.headers['x-ratelimit-remaining'])).toBe(1_000_000 - estimated - PROMPT_RESERVE);
    const metrics = await metricsText(gw);
    expect(metrics).toMatch(/tollgate_llm_tokens_total\{route="main\/chat",model="mock-gpt",source="reported"\} 20/);
  });

  it('forwards a body that is not JSON untouched and counts it by estimate', async () => {
    const received: string[] = [];
    const up = await startUpstream((_req, res, body) => {
      received.push(body.toString());
      res.setHeader('content-type', 'text/plain');
      res.end('plain answer');
    });
    cleanups.push(() => up.close());
    const gw = await gateway([{ name: 'chat', policies: { traffic: { rateLimit: { local: [{ tokens: 1000, unit: 'Hours' }] } } }, backends: [{ host: up.host }] }]);
    const raw = '{"model": "x", broken json';
    const r = await send(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: raw });
    expect(r.status).toBe(200);
    expect(received).toEqual([raw]);
    const next = await send(`${gw.url}/v1/chat/completions`, { method: 'POST', body: '{}' });
    expect(Number(next.headers['x-ratelimit-remaining'])).toBeLessThan(1000);
  });
});

const metricsText = async (gw: TestGateway) => (await fetch(`http://${gw.gateway.ops.metrics.address}/metrics`)).text();

describe('combined entries and levels', () => {
  it('entries are independent: failing any one refuses', async () => {
    const gw = await gateway([chatRoute('chat', [{ requests: 2, unit: 'Minutes' }, { tokens: 10_000, unit: 'Minutes' }])]);
    expect(statuses([await chat(gw), await chat(gw), await chat(gw)])).toEqual([200, 200, 429]);
    const gw2 = await gateway([chatRoute('chat', [{ requests: 100, unit: 'Minutes' }, { tokens: 15, unit: 'Minutes' }])]);
    const rs = [await chat(gw2, { prompt: 10, completion: 10 }), await chat(gw2)];
    expect(statuses(rs)).toEqual([200, 429]);
    // The headers describe the entry with the least remaining: the tokens budget here.
    expect(rs[0]!.headers['x-ratelimit-limit']).toBe('15');
  });

  it('gateway-level counters are shared by every route; route-level ones are per route', async () => {
    const gw = await gateway(
      [chatRoute('a', [{ requests: 1, unit: 'Minutes' }], 'a'), chatRoute('b', [{ requests: 10, unit: 'Minutes' }], 'b')],
      { policies: { traffic: { rateLimit: { local: [{ requests: 3, unit: 'Minutes' }] } } } },
    );
    const rs = [await chat(gw, { which: 'a' }), await chat(gw, { which: 'a' }), await chat(gw, { which: 'b' }), await chat(gw, { which: 'b' }), await chat(gw, { which: 'b' })];
    // /a: 1 per route; the gateway's 3 are shared: a(ok) a(route 429: the gateway gives its
    // token back) b(ok) b(ok) b(gateway 429).
    expect(statuses(rs)).toEqual([200, 429, 200, 200, 429]);
  });

  it('a gateway-level refusal happens before routing (the trace has no route selection)', async () => {
    const gw = await gateway([chatRoute('chat', [])].map((r) => ({ ...r, policies: undefined })), { policies: { traffic: { rateLimit: { local: [{ requests: 1, unit: 'Hours' }] } } } });
    expect((await chat(gw)).status).toBe(200);
    const trace = await openTrace(gw.adminUrl);
    await trace.armed;
    expect((await chat(gw)).status).toBe(429);
    const types = (await trace.events).map((e) => e.message as { type: string; stage?: string });
    expect(types.map((m) => m.stage ?? m.type)).toEqual(['requestStarted', 'initial request', 'gateway policies', 'final response', 'requestFinished']);
  });

  it('keeps counters across a reload that leaves the limit unchanged', async () => {
    const gw = await gateway([chatRoute('chat', [{ requests: 2, unit: 'Hours' }])]);
    expect(statuses([await chat(gw), await chat(gw)])).toEqual([200, 200]);
    const next = simpleConfig(gw.port, [chatRoute('chat', [{ requests: 2, unit: 'Hours' }]), { name: 'extra', matches: [{ path: { value: '/extra' } }], backends: [{ host: `127.0.0.1:${llm.port}` }] }]);
    expect(await gw.rewrite(next)).toBe('reloaded');
    expect((await chat(gw)).status).toBe(429);
  });
});

describe('metrics', () => {
  it('counts decisions by kind, level and result, and requests by route and status', async () => {
    const gw = await gateway([chatRoute('chat', [{ requests: 1, unit: 'Hours' }])]);
    await chat(gw);
    await chat(gw);
    const text = await metricsText(gw);
    expect(text).toContain('tollgate_ratelimit_decisions_total{kind="requests",level="route",result="allowed"} 1');
    expect(text).toContain('tollgate_ratelimit_decisions_total{kind="requests",level="route",result="limited"} 1');
    expect(text).toContain('tollgate_requests_total{route="main/chat",status="429"} 1');
    expect(text).toContain('tollgate_upstream_latency_seconds_count{route="main/chat"} 1');
  });
});

describe('the official openai client through the gateway', () => {
  it('works non-streaming and streaming, and sees a RateLimitError on 429', async () => {
    const gw = await gateway([chatRoute('chat', [{ requests: 2, unit: 'Hours' }, { tokens: 100_000, unit: 'Hours' }])]);
    const client = new OpenAI({ apiKey: 'sk-test', baseURL: `${gw.url}/v1`, maxRetries: 0 });
    const completion = await client.chat.completions.create({ model: 'mock-gpt', messages: [{ role: 'user', content: 'hello gateway' }] });
    expect(completion.choices[0]!.message.content).toBeTruthy();
    expect(completion.usage!.total_tokens).toBeGreaterThan(0);
    const stream = await client.chat.completions.create({ model: 'mock-gpt', stream: true, messages: [{ role: 'user', content: 'stream please' }] });
    let text = '';
    let usageSeen = false;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta?.content ?? '';
      if (chunk.usage) usageSeen = true;
    }
    expect(text.length).toBeGreaterThan(0);
    expect(usageSeen).toBe(false);
    const err = await client.chat.completions.create({ model: 'mock-gpt', messages: [{ role: 'user', content: 'one too many' }] }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.RateLimitError);
    expect((err as InstanceType<typeof OpenAI.RateLimitError>).status).toBe(429);
    const limited = err as InstanceType<typeof OpenAI.RateLimitError>;
    expect(limited.headers?.get('x-ratelimit-remaining')).toBe('0');
    // The client's error carries the gateway's message and, in the headers, its code.
    expect(limited.message).toBe('429 rate limit exceeded');
    expect(limited.headers?.get('x-tollgate-error')).toBe('TG_RATE_LIMITED');
    expect(Number(limited.headers?.get('retry-after'))).toBeGreaterThan(0);
  });
});
