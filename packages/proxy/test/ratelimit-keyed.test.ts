// Keyed local limits (`by`) over real sockets, with an injected clock for windows: one budget per
// key value, the empty key for requests without one, exact admissions under concurrency, token
// reservations per key, expression keys and their input bounds, long values hashed, the bounded
// key table (overflow budget, cycling thousands of key values resets nobody, room again after a
// window), fixed UTC days, a key met at the gateway and the route level, reloads, and Months
// refused for local limits.
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadConfigFile } from '../src/config/load-file.js';
import { openTrace, send, simpleConfig, startGateway, startUpstream, type RawResponse, type TestGateway, type Upstream } from './helpers.js';
import { heldLlm, settledOrArrived, type HeldLlm } from './support/held-llm.js';

const DAY = 86_400_000;
let now = 0;
const clock = () => now;
beforeEach(() => {
  now = Date.UTC(2026, 0, 1, 12, 0, 0);
});

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

async function upstream(): Promise<Upstream> {
  const up = await startUpstream((_req, res) => res.end('ok'));
  cleanups.push(() => up.close());
  return up;
}

async function held(): Promise<HeldLlm> {
  const llm = await heldLlm();
  cleanups.push(() => llm.upstream.close());
  return llm;
}

async function gateway(routes: unknown[], opts: { listener?: Record<string, unknown>; config?: Record<string, unknown> } = {}): Promise<TestGateway> {
  const gw = await startGateway((port) => ({ ...(opts.config ? { config: opts.config } : {}), ...simpleConfig(port, routes, opts.listener) }), { clock });
  cleanups.push(() => gw.close());
  return gw;
}

const limited = (local: unknown[]) => ({ traffic: { rateLimit: { local } } });

function route(name: string, backend: string, local: unknown[] | null, path = '/') {
  return { name, matches: [{ path: { type: 'PathPrefix', value: path } }], ...(local ? { policies: limited(local) } : {}), backends: [{ host: backend }] };
}

const byUser = { type: 'Header', name: 'x-user' };

/** A GET through the gateway on a kept-alive connection (thousands of requests in a test). */
async function hit(gw: TestGateway, headers: Record<string, string> = {}, path = '/'): Promise<{ status: number; headers: Headers }> {
  const r = await fetch(`${gw.url}${path}`, { headers });
  await r.arrayBuffer();
  return { status: r.status, headers: r.headers };
}

/** The statuses of `n` calls, `at` a time (1: one after another); `call` gets the call's index. */
const statusesOf = async (n: number, call: (i: number) => Promise<{ status: number }>, at = 1): Promise<number[]> => {
  const out: number[] = [];
  for (let i = 0; i < n; i += at) out.push(...(await Promise.all(Array.from({ length: Math.min(at, n - i) }, (_, j) => call(i + j)))).map((r) => r.status));
  return out;
};

const metricsText = async (gw: TestGateway) => (await fetch(`http://${gw.gateway.ops.metrics.address}/metrics`)).text();

describe('a keyed local limit', () => {
  it('keeps one budget per key value; requests without a value share one budget, the empty key', async () => {
    const up = await upstream();
    const gw = await gateway([route('r', up.host, [{ requests: 2, unit: 'Minutes', by: byUser }])]);
    expect(await statusesOf(3, () => hit(gw, { 'x-user': 'alice' }))).toEqual([200, 200, 429]);
    expect(await statusesOf(3, () => hit(gw, { 'x-user': 'bob' }))).toEqual([200, 200, 429]);
    // No header and an empty one are the same key: leaving the key out is not a way around the limit.
    expect(await statusesOf(2, () => hit(gw))).toEqual([200, 200]);
    expect((await hit(gw, { 'x-user': '' })).status).toBe(429);
    expect((await hit(gw)).status).toBe(429);
    // The headers describe the request's own budget.
    const carol = await hit(gw, { 'x-user': 'carol' });
    expect([carol.headers.get('x-ratelimit-limit'), carol.headers.get('x-ratelimit-remaining')]).toEqual(['2', '1']);
    now += 60_000;
    expect((await hit(gw, { 'x-user': 'alice' })).status).toBe(200);
  });

  it('admits exactly N concurrent requests of one key, and each other key its own N', async () => {
    const llm = await held();
    const gw = await gateway([route('r', llm.upstream.host, [{ requests: 7, unit: 'Hours', by: byUser }])]);
    const answers: RawResponse[] = [];
    const fire = (user: string) => send(gw.url, { headers: { 'x-user': user } }).then((r) => (answers.push(r), llm.events.emit('progress'), r));
    const all = Promise.all([...Array.from({ length: 40 }, () => fire('alice')), ...Array.from({ length: 10 }, () => fire('bob'))]);
    await settledOrArrived(llm, () => answers.length, 50);
    expect(llm.arrived).toBe(14);
    llm.releaseAll();
    const rs = await all;
    expect(rs.slice(0, 40).filter((r) => r.status === 200)).toHaveLength(7);
    expect(rs.slice(40).filter((r) => r.status === 200)).toHaveLength(7);
    expect(rs.filter((r) => r.status === 429)).toHaveLength(36);
  });

  it('reserves tokens per key: concurrent requests are admitted as far as the key\'s budget covers, the crossing one succeeds', async () => {
    const llm = await held();
    const gw = await gateway([route('r', llm.upstream.host, [{ tokens: 100, unit: 'Hours', by: byUser }])]);
    // 28 bytes of prompt (7 tokens) + max_tokens 20: each reserves 27. Admitted while usage
    // plus reservations is at or below 100: 0, 27, 54, 81; the fifth sees 108.
    const body = JSON.stringify({ model: 'm', max_tokens: 20, messages: [{ role: 'user', content: 'twenty-eight bytes of prompt' }] });
    const answers: RawResponse[] = [];
    const fire = (user: string, usage: number) =>
      send(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-user': user, 'x-usage': String(usage) }, body }).then(
        (r) => (answers.push(r), llm.events.emit('progress'), r),
      );
    const all = Promise.all([...Array.from({ length: 10 }, () => fire('alice', 30)), ...Array.from({ length: 10 }, () => fire('bob', 1))]);
    await settledOrArrived(llm, () => answers.length, 20);
    expect(llm.arrived).toBe(8);
    llm.releaseAll();
    const rs = await all;
    expect(rs.slice(0, 10).filter((r) => r.status === 200)).toHaveLength(4);
    expect(rs.slice(10).filter((r) => r.status === 200)).toHaveLength(4);
    // alice used 4 x 30 = 120: over her budget; bob used 4 of his 100.
    expect((await send(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { 'x-user': 'alice', 'x-usage': '1' }, body })).status).toBe(429);
    const next = send(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { 'x-user': 'bob', 'x-usage': '1' }, body });
    await settledOrArrived(llm, () => 0, 9);
    llm.releaseAll();
    expect((await next).status).toBe(200);
  });

  it('keys by a CEL expression over the request; an input over its bound is refused unevaluated (431)', async () => {
    const up = await upstream();
    const key = { type: 'Expression', expression: 'request.headers["x-team"] + "/" + request.path' };
    const gw = await gateway([route('r', up.host, [{ requests: 1, unit: 'Hours', by: key }])], { config: { cel: { maxHeaderLength: 64 } } });
    expect((await hit(gw, { 'x-team': 'a' }, '/one')).status).toBe(200);
    expect((await hit(gw, { 'x-team': 'a' }, '/one')).status).toBe(429);
    expect((await hit(gw, { 'x-team': 'a' }, '/two')).status).toBe(200);
    expect((await hit(gw, { 'x-team': 'b' }, '/one')).status).toBe(200);
    // The expression fails without the header: the empty key, one budget for all such requests.
    expect((await hit(gw, {}, '/one')).status).toBe(200);
    expect((await hit(gw, {}, '/two')).status).toBe(429);
    const over = await hit(gw, { 'x-team': 'x'.repeat(65) }, '/three');
    expect(over.status).toBe(431);
    expect(over.headers.get('x-tollgate-error')).toBe('TG_EXPRESSION_INPUT_TOO_LARGE');
    expect(await metricsText(gw)).toContain('tollgate_ratelimit_decisions_total{kind="requests",level="route",result="refused"} 1');
  });

  it('hashes values longer than 128 characters: distinct long values keep distinct budgets', async () => {
    const up = await upstream();
    const gw = await gateway([route('r', up.host, [{ requests: 1, unit: 'Hours', by: byUser }])]);
    const long = 'u'.repeat(4000);
    expect((await hit(gw, { 'x-user': `${long}1` })).status).toBe(200);
    expect((await hit(gw, { 'x-user': `${long}2` })).status).toBe(200);
    expect((await hit(gw, { 'x-user': `${long}1` })).status).toBe(429);
    expect((await hit(gw, { 'x-user': `${long}2` })).status).toBe(429);
  });
});

describe('the key table of a keyed limit', () => {
  it('holds config.maxRateLimitKeys keys; new keys beyond share one overflow budget, and cycling thousands of keys resets nobody', async () => {
    const up = await upstream();
    const gw = await gateway([route('r', up.host, [{ requests: 2, unit: 'Minutes', by: byUser }])], { config: { maxRateLimitKeys: 100 } });
    expect(await statusesOf(3, () => hit(gw, { 'x-user': 'alice' }))).toEqual([200, 200, 429]);
    // 1,500 requests, 16 at a time, each with a key never seen: 99 find room beside alice, the
    // rest share one overflow budget of 2, whichever arrive first.
    const cycled = await statusesOf(1500, (i) => hit(gw, { 'x-user': `k-${i}` }), 16);
    expect(cycled.filter((s) => s === 200)).toHaveLength(99 + 2);
    expect(await metricsText(gw)).toContain('tollgate_ratelimit_key_overflow_total{kind="requests",level="route"} 1401');
    expect(gw.logs.lines.filter((l) => String(l.msg).startsWith('a keyed rate limit has as many keys as config.maxRateLimitKeys allows'))).toHaveLength(1);
    // Nobody's budget was reset: alice is still refused; a key with room still has it.
    expect((await hit(gw, { 'x-user': 'alice' })).status).toBe(429);
    const dump = (await (await fetch(`${gw.adminUrl}/config_dump`)).json()) as { settings: Record<string, number> };
    expect(dump.settings.maxRateLimitKeys).toBe(100);

    // Next window: the keys no longer in use make room; alice spends her new budget at once, and
    // 1,500 more new keys cannot take it from her while it is in use.
    now += 60_000;
    expect(await statusesOf(3, () => hit(gw, { 'x-user': 'alice' }))).toEqual([200, 200, 429]);
    const again = await statusesOf(1500, (i) => hit(gw, { 'x-user': `n-${i}` }), 16);
    expect(again.filter((s) => s === 200)).toHaveLength(99 + 2);
    expect((await hit(gw, { 'x-user': 'alice' })).status).toBe(429);
  });

  it('keeps a key whose tokens are still to be charged, past the end of its window', async () => {
    const llm = await held();
    const gw = await gateway([route('r', llm.upstream.host, [{ tokens: 50, unit: 'Minutes', by: byUser }])], { config: { maxRateLimitKeys: 1 } });
    const body = JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }] });
    const chat = (user: string, usage: number) => send(gw.url, { method: 'POST', headers: { 'content-type': 'application/json', 'x-user': user, 'x-usage': String(usage) }, body });
    const inFlight = chat('alice', 80);
    await settledOrArrived(llm, () => 0, 1);
    // The window ends while alice's request is in flight; a new key finds the table full: the
    // sweep may not drop alice, whose usage is still to come.
    now += 60_000;
    const other = chat('bob', 1);
    await settledOrArrived(llm, () => 0, 2);
    llm.releaseAll();
    expect((await inFlight).status).toBe(200);
    expect((await other).status).toBe(200);
    // alice's 80 tokens were charged to her window: she is over her 50 (were she admitted, the
    // backend would hold her request: released once it arrives, so a failure fails, not hangs).
    let answered = 0;
    const last = chat('alice', 1).then((r) => (answered++, llm.events.emit('progress'), r));
    await settledOrArrived(llm, () => answered, 3);
    llm.releaseAll();
    expect((await last).status).toBe(429);
  });
});

describe('windows', () => {
  it('a Days window is a fixed UTC day, keyed or not', async () => {
    const up = await upstream();
    now = Date.UTC(2026, 2, 14, 23, 59, 0);
    const gw = await gateway([route('keyed', up.host, [{ requests: 1, unit: 'Days', by: byUser }], '/k'), route('shared', up.host, [{ requests: 1, unit: 'Days' }], '/s')]);
    for (const path of ['/k', '/s']) {
      expect((await hit(gw, { 'x-user': 'a' }, path)).status).toBe(200);
      const refused = await hit(gw, { 'x-user': 'a' }, path);
      expect(refused.status).toBe(429);
      expect(refused.headers.get('x-ratelimit-reset')).toBe('60');
    }
    now += 60_000; // midnight UTC
    for (const path of ['/k', '/s']) expect((await hit(gw, { 'x-user': 'a' }, path)).status).toBe(200);
    now += DAY - 1;
    expect((await hit(gw, { 'x-user': 'a' }, '/k')).status).toBe(429);
  });

  it('refuses Months for a local limit, naming the field and saying why; the config in force keeps serving', async () => {
    const up = await upstream();
    const gw = await gateway([route('r', up.host, [{ requests: 5, unit: 'Hours' }])]);
    expect(await gw.rewrite(simpleConfig(gw.port, [route('r', up.host, [{ requests: 5, unit: 'Months', by: byUser }])]))).toBe('refused');
    const line = gw.logs.messages().find((m) => m.startsWith('config reload refused'));
    expect(line).toContain('binds[0].listeners[0].routes[0].policies.traffic.rateLimit.local[0].unit: Months is not available for a local limit');
    expect(line).toContain('start again at zero when it restarts');
    expect((await hit(gw)).status).toBe(200);
  });
});

describe('a key met at two places', () => {
  it('a gateway-level keyed budget is one per key for every route; a route-level one on the same key applies too, and a route refusal gives the gateway its request back', async () => {
    const up = await upstream();
    const gw = await gateway([route('a', up.host, [{ requests: 1, unit: 'Hours', by: byUser }], '/a'), route('b', up.host, null, '/b')], {
      listener: { policies: limited([{ requests: 3, unit: 'Hours', by: byUser }]) },
    });
    const alice = { 'x-user': 'alice' };
    // /a: alice's route budget of 1, then refused there: the gateway's 3 are not spent by it.
    expect([(await hit(gw, alice, '/a')).status, (await hit(gw, alice, '/a')).status]).toEqual([200, 429]);
    // /b has no route limit: alice has 2 of her gateway budget left, on any route.
    expect(await statusesOf(3, () => hit(gw, alice, '/b'))).toEqual([200, 200, 429]);
    expect((await hit(gw, { 'x-user': 'bob' }, '/b')).status).toBe(200);
  });

  it('a gateway-level entry keyed on the consumer runs after routing (and authentication); the listener\'s other entries before routing', async () => {
    const up = await upstream();
    const gw = await gateway([route('r', up.host, null)], {
      listener: { policies: limited([{ requests: 5, unit: 'Hours' }, { requests: 1, unit: 'Hours', by: { type: 'Consumer' } }]) },
    });
    expect((await hit(gw)).status).toBe(200);
    const trace = await openTrace(gw.adminUrl);
    await trace.armed;
    // No consumer here: the empty key, spent by the first request.
    expect((await hit(gw)).status).toBe(429);
    const stages = (await trace.events).map((e) => {
      const m = e.message as { type: string; stage?: string };
      return m.stage ?? m.type;
    });
    expect(stages).toEqual(['requestStarted', 'initial request', 'gateway policies', 'routeSelection', 'policySelection', 'final response', 'requestFinished']);
  });

  it('a reload that keeps the keyed entry keeps every key\'s counters', async () => {
    const up = await upstream();
    const gw = await gateway([route('r', up.host, [{ requests: 2, unit: 'Hours', by: byUser }])]);
    expect(await statusesOf(2, () => hit(gw, { 'x-user': 'alice' }))).toEqual([200, 200]);
    expect((await hit(gw, { 'x-user': 'bob' })).status).toBe(200);
    expect(await gw.rewrite(simpleConfig(gw.port, [route('r', up.host, [{ requests: 2, unit: 'Hours', by: byUser }]), route('x', up.host, null, '/x')]))).toBe('reloaded');
    expect((await hit(gw, { 'x-user': 'alice' })).status).toBe(429);
    expect(await statusesOf(2, () => hit(gw, { 'x-user': 'bob' }))).toEqual([200, 429]);
  });
});

describe('examples/ratelimit-keyed.yaml', () => {
  it('loads: a header key at the gateway level, an expression key on a Days token budget', async () => {
    const loaded = await loadConfigFile(fileURLToPath(new URL('../../../examples/ratelimit-keyed.yaml', import.meta.url)));
    const listener = loaded.snapshot.binds[0]!.listeners[0]!;
    expect(listener.policy?.localRateLimit).toEqual([{ kind: 'requests', requests: 100, burst: 0, unit: 'Minutes', by: { type: 'Header', name: 'x-tenant' } }]);
    expect(listener.routes[0]!.policy?.localRateLimit?.[0]).toMatchObject({ kind: 'tokens', unit: 'Days', by: { type: 'Expression' } });
    expect(loaded.config.config?.maxRateLimitKeys).toBe(50_000);
  });
});
