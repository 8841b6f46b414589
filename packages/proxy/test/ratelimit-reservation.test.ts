// Token reservations and refunds of local limits, over real sockets against a backend that
// holds its responses until the test releases them, so "in flight" is a state the test
// controls rather than a race: admission reserves the prompt estimate plus max_tokens, the
// response settles the reservation with the reported usage, a failed response releases it,
// and a request the gateway refuses (a later limit, no route) gives back what earlier limits
// of the same request took.
import { once } from 'node:events';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { send, simpleConfig, startGateway, startUpstream, type RawResponse, type TestGateway } from './helpers.js';
import { heldBurst, heldLlm as startHeldLlm } from './support/held-llm.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

async function heldLlm() {
  const llm = await startHeldLlm();
  cleanups.push(() => llm.upstream.close());
  return llm;
}

async function gateway(routes: unknown[], listener: Record<string, unknown> = {}): Promise<TestGateway> {
  const gw = await startGateway((port) => simpleConfig(port, routes, listener));
  cleanups.push(() => gw.close());
  return gw;
}

function route(name: string, backend: string, local: unknown[] | null, which?: string) {
  return {
    name,
    matches: [{ path: { type: 'Exact', value: '/v1/chat/completions' }, ...(which ? { headers: [{ name: 'x-which', value: which }] } : {}) }],
    ...(local ? { policies: { traffic: { rateLimit: { local } } } } : {}),
    backends: [{ host: backend }],
  };
}

// 28 bytes of message content: a prompt estimate of 7 tokens (4 bytes a token).
const CONTENT = 'twenty-eight bytes of prompt';
const PROMPT_RESERVE = 7;

function chat(gw: TestGateway, opts: { maxTokens?: number; field?: 'max_tokens' | 'max_completion_tokens'; usage?: number; which?: string; path?: string } = {}): Promise<RawResponse> {
  const body: Record<string, unknown> = { model: 'm', messages: [{ role: 'user', content: CONTENT }] };
  if (opts.maxTokens !== undefined) body[opts.field ?? 'max_tokens'] = opts.maxTokens;
  return send(`${gw.url}${opts.path ?? '/v1/chat/completions'}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-usage': String(opts.usage ?? 0), ...(opts.which ? { 'x-which': opts.which } : {}) },
    body: JSON.stringify(body),
  });
}

describe('token reservations', () => {
  it('concurrent requests reserve max_tokens at admission: no more are admitted than the budget covers', async () => {
    const llm = await heldLlm();
    const gw = await gateway([route('chat', llm.upstream.host, [{ tokens: 100, unit: 'Hours' }])]);
    // Each reserves 7 + 50 = 57: the first two are admitted (0 and 57 are within 100), the
    // rest refused while both are in flight. Without reservations all ten reached the backend.
    const pending = await heldBurst(llm, 10, () => chat(gw, { maxTokens: 50, usage: 57 }));
    expect(llm.arrived).toBe(2);
    llm.releaseAll();
    const rs = await Promise.all(pending);
    expect(rs.filter((r) => r.status === 429)).toHaveLength(8);
    // x-ratelimit-remaining counts the reservations made so far, this request's included.
    expect(rs.filter((r) => r.status === 200).map((r) => r.headers['x-ratelimit-remaining']).sort()).toEqual(['0', String(100 - 57)]);
    expect(rs.find((r) => r.status === 429)!.headers['x-ratelimit-remaining']).toBe('0');
  });

  it('max_completion_tokens is reserved too, and wins over max_tokens', async () => {
    const llm = await heldLlm();
    const gw = await gateway([route('chat', llm.upstream.host, [{ tokens: 1000, unit: 'Hours' }])]);
    const body = { model: 'm', messages: [{ role: 'user', content: CONTENT }], max_tokens: 10, max_completion_tokens: 300 };
    const pending = send(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    await once(llm.events, 'arrived');
    llm.releaseAll();
    expect((await pending).headers['x-ratelimit-remaining']).toBe(String(1000 - PROMPT_RESERVE - 300));
  });

  it('the usage replaces the reservation once the response completes', async () => {
    const llm = await heldLlm();
    const gw = await gateway([route('chat', llm.upstream.host, [{ tokens: 1000, unit: 'Hours' }])]);
    const first = chat(gw, { maxTokens: 500, usage: 40 });
    await once(llm.events, 'arrived');
    llm.releaseAll();
    expect((await first).headers['x-ratelimit-remaining']).toBe(String(1000 - PROMPT_RESERVE - 500));
    // 40 used, the 507 reserved are back; the next request reserves only its prompt.
    const second = chat(gw, { usage: 10 });
    await once(llm.events, 'arrived');
    llm.releaseAll();
    expect((await second).headers['x-ratelimit-remaining']).toBe(String(1000 - 40 - PROMPT_RESERVE));
  });

  it('a response that is not charged (not 2xx) releases its reservation', async () => {
    const llm = await heldLlm();
    const gw = await gateway([route('chat', llm.upstream.host, [{ tokens: 100, unit: 'Hours' }])]);
    const failed = chat(gw, { maxTokens: 90, usage: 97 });
    await once(llm.events, 'arrived');
    llm.releaseAll(500);
    expect((await failed).status).toBe(500);
    const next = chat(gw, { usage: 1 });
    await once(llm.events, 'arrived');
    llm.releaseAll();
    expect((await next).headers['x-ratelimit-remaining']).toBe(String(100 - PROMPT_RESERVE));
  });

  it('an answer that is not charged gives its reservation back with its headers, before its body ends', async () => {
    // The first request's answer: a 500 whose body the backend holds open; every later one a 200.
    let failing: ServerResponse | null = null;
    const up = await startUpstream((req, res) => {
      if (!failing && req.headers['x-usage'] === '97') {
        failing = res;
        res.writeHead(500, { 'content-type': 'application/json' });
        res.write('{"error":');
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ choices: [{ message: { content: 'ok' } }], usage: { total_tokens: 1 } }));
    });
    cleanups.push(() => up.close());
    const gw = await gateway([route('chat', up.host, [{ tokens: 100, unit: 'Hours' }])]);
    const body = JSON.stringify({ model: 'm', messages: [{ role: 'user', content: CONTENT }], max_tokens: 90 });
    // 97 reserved (7 of prompt, 90 of max_tokens): the client has the 500's headers, not its end.
    const first = await new Promise<IncomingMessage>((resolve, reject) => {
      const req = http.request(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-usage': '97' } }, resolve);
      req.on('error', reject);
      req.end(body);
    });
    expect(first.statusCode).toBe(500);
    // The next request reserves its 7: admitted only if the 97 are back already (on whichever thread).
    const next = await chat(gw, { usage: 1 });
    expect(next.status).toBe(200);
    expect(next.headers['x-ratelimit-remaining']).toBe(String(100 - PROMPT_RESERVE));
    const ended = once(first, 'end');
    first.resume();
    (failing as ServerResponse | null)!.end('"failed"}');
    await ended;
  });

  it('a gateway-level tokens entry reserves too (the body is read before the gateway policies)', async () => {
    const llm = await heldLlm();
    const gw = await gateway([route('chat', llm.upstream.host, null)], { policies: { traffic: { rateLimit: { local: [{ tokens: 100, unit: 'Hours' }] } } } });
    const pending = await heldBurst(llm, 4, () => chat(gw, { maxTokens: 93, usage: 100 }));
    // 100 reserved by the first: 100 is still within the budget, so the second is admitted
    // (the budget has tokens left when it arrives), the third and fourth are not.
    expect(llm.arrived).toBe(2);
    llm.releaseAll();
    expect((await Promise.all(pending)).map((r) => r.status).sort()).toEqual([200, 200, 429, 429]);
  });
});

describe('refunds: a request the gateway refuses is not counted by limits that admitted it', () => {
  it('a route-level refusal gives back the gateway-level request token and token reservation', async () => {
    const llm = await heldLlm();
    const gw = await gateway(
      [route('a', llm.upstream.host, [{ requests: 1, unit: 'Hours' }], 'a'), route('b', llm.upstream.host, null, 'b')],
      { policies: { traffic: { rateLimit: { local: [{ requests: 10, unit: 'Hours' }, { tokens: 250, unit: 'Hours' }] } } } },
    );
    const ok = chat(gw, { which: 'a', maxTokens: 100 });
    await once(llm.events, 'arrived');
    llm.releaseAll();
    expect((await ok).status).toBe(200);
    // Refused by route a's own limit: the gateway's request token and reservation (107) come
    // back each time; kept, the three reservations (321) would exhaust the 250 tokens.
    for (let i = 0; i < 3; i++) expect((await chat(gw, { which: 'a', maxTokens: 100 })).status).toBe(429);
    const b = chat(gw, { which: 'b', maxTokens: 100 });
    await once(llm.events, 'arrived');
    llm.releaseAll();
    const rb = await b;
    expect(rb.status).toBe(200);
    // Gateway: 10 requests, 8 left after a and b; tokens: nothing used (usage 0), b's 107 reserved.
    expect(rb.headers['x-ratelimit-remaining']).toBe('8');
  });

  it('a request no route matches gives back the gateway-level request token', async () => {
    const llm = await heldLlm();
    const gw = await gateway([route('chat', llm.upstream.host, null)], { policies: { traffic: { rateLimit: { local: [{ requests: 1, unit: 'Hours' }] } } } });
    for (let i = 0; i < 3; i++) expect((await chat(gw, { path: '/nowhere' })).status).toBe(404);
    const r = chat(gw);
    await once(llm.events, 'arrived');
    llm.releaseAll();
    expect((await r).status).toBe(200);
    expect((await chat(gw)).status).toBe(429);
  });

  it('a refused request is refused without reaching the backend, and a refusal body has no trailing newline', async () => {
    const llm = await heldLlm();
    const gw = await gateway([route('chat', llm.upstream.host, [{ requests: 1, unit: 'Hours' }])]);
    const first = chat(gw);
    await once(llm.events, 'arrived');
    const refused = await chat(gw);
    expect(refused.status).toBe(429);
    expect(refused.body).toBe('rate limit exceeded');
    expect(refused.headers['content-length']).toBe(String('rate limit exceeded'.length));
    llm.releaseAll();
    await first;
    expect(llm.arrived).toBe(1);
  });
});
