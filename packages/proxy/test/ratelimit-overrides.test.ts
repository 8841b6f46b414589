// Per-key budgets (`overrides`) over real sockets: a key with its own budget, every other key on
// the entry's amount; a consumer's budget and its group's both apply, the group refusing a
// consumer whose own override has plenty left; x-ratelimit-policy naming the tightest limit (by
// its name or its place, and its key type, never a key value); a reload that raises or lowers
// an amount or an override keeping what was used in the window (local requests and tokens), and
// keyed global descriptors sending each key's own limit to the real envoyproxy/ratelimit, whose
// Redis counters survive a changed limit. Bad overrides are refused naming the field.
import { createHash, randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { until } from '@tollgate/testkit';
import { loadConfigFile } from '../src/config/load-file.js';
import { simpleConfig, startGateway, startUpstream, type TestGateway, type Upstream } from './helpers.js';
import { ALICE, BOB, CAROL, consumerKeyFile } from './support/consumer-keys.js';
import { counters, rlsAvailability, rlsBinaries, startRls, type RlsService } from './support/rls.js';

let now = 0;
const clock = () => now;
beforeEach(() => {
  now = Date.UTC(2026, 0, 1, 12, 0, 0);
});

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

const keyFile = consumerKeyFile();

/** An upstream answering every request with an LLM usage of `tokens`. */
async function upstream(tokens = 0): Promise<Upstream> {
  const up = await startUpstream((_req, res) => {
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ choices: [], usage: { total_tokens: tokens } }));
  });
  cleanups.push(() => up.close());
  return up;
}

/** The config of one route `r` with these local entries (and apiKey consumers from the key file). */
function config(port: number, backend: string, local: unknown[]): Record<string, unknown> {
  return simpleConfig(port, [{ name: 'r', policies: { traffic: { apiKey: { file: keyFile.path() }, rateLimit: { local } } }, backends: [{ host: backend }] }]);
}

async function gateway(make: (port: number) => Record<string, unknown>): Promise<TestGateway> {
  const gw = await startGateway(make, { clock });
  cleanups.push(() => gw.close());
  return gw;
}

interface Answer {
  readonly status: number;
  readonly headers: Headers;
}

async function hit(gw: TestGateway, headers: Record<string, string>): Promise<Answer> {
  const r = await fetch(gw.url, { headers });
  await r.arrayBuffer();
  return { status: r.status, headers: r.headers };
}

async function statuses(gw: TestGateway, headers: Record<string, string>, n: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) out.push((await hit(gw, headers)).status);
  return out;
}

const limitHeaders = (a: Answer) => ({
  limit: a.headers.get('x-ratelimit-limit'),
  remaining: a.headers.get('x-ratelimit-remaining'),
  policy: a.headers.get('x-ratelimit-policy'),
});

describe('per-key budgets of a local entry', () => {
  it('a key with an override has its own budget; every other key, and the keyless, the entry\'s amount', async () => {
    const up = await upstream();
    const local = [{ requests: 2, unit: 'Hours', by: { type: 'Consumer' }, overrides: [{ key: 'alice', requests: 4, burst: 1 }] }];
    const gw = await gateway((port) => config(port, up.host, local));
    expect(await statuses(gw, ALICE, 6)).toEqual([200, 200, 200, 200, 200, 429]);
    expect(await statuses(gw, BOB, 3)).toEqual([200, 200, 429]);
    const carol = await hit(gw, CAROL);
    expect(limitHeaders(carol)).toEqual({ limit: '2', remaining: '1', policy: 'route.local[0];by=Consumer' });
    // A new window gives alice her override's requests back (4), not the entry's 2.
    now += 3_600_000;
    expect(await statuses(gw, ALICE, 5)).toEqual([200, 200, 200, 200, 429]);
  });

  it('an override of the empty key is the budget of requests without a value; a long value is named by its hashed form', async () => {
    const up = await upstream();
    const long = 'v'.repeat(200);
    const hashed = `#${createHash('sha256').update(long, 'utf8').digest('base64url')}`;
    const local = [{ requests: 3, unit: 'Hours', by: { type: 'Header', name: 'x-team' }, overrides: [{ key: '', requests: 1 }, { key: hashed, requests: 5 }] }];
    const gw = await gateway((port) => simpleConfig(port, [{ name: 'r', policies: { traffic: { rateLimit: { local } } }, backends: [{ host: up.host }] }]));
    expect(await statuses(gw, {}, 2)).toEqual([200, 429]);
    expect(await statuses(gw, { 'x-team': '' }, 1)).toEqual([429]);
    expect(await statuses(gw, { 'x-team': 'red' }, 4)).toEqual([200, 200, 200, 429]);
    expect(await statuses(gw, { 'x-team': long }, 6)).toEqual([200, 200, 200, 200, 200, 429]);
  });

  it('a tokens override: the key is admitted while its own usage is within its own budget', async () => {
    const up = await upstream(40);
    const local = [{ tokens: 50, unit: 'Hours', by: { type: 'Consumer' }, overrides: [{ key: 'alice', tokens: 100 }] }];
    const gw = await gateway((port) => config(port, up.host, local));
    // 40 used of 100, then 80: within; 120: over.
    expect(await statuses(gw, ALICE, 4)).toEqual([200, 200, 200, 429]);
    // Bob has the entry's 50: 40, then 80 is over.
    expect(await statuses(gw, BOB, 3)).toEqual([200, 200, 429]);
  });
});

describe('a consumer budget and its group budget', () => {
  it('both apply: the group refuses a consumer whose own override has plenty left, and x-ratelimit-policy names the tightest', async () => {
    const up = await upstream();
    const local = [
      { requests: 2, unit: 'Hours', by: { type: 'Consumer' }, overrides: [{ key: 'alice', requests: 10 }] },
      { name: 'team-budget', requests: 4, unit: 'Hours', by: { type: 'ConsumerGroup' } },
    ];
    const gw = await gateway((port) => config(port, up.host, local));
    // Bob spends his own 2, half of team-a's 4.
    expect(await statuses(gw, BOB, 3)).toEqual([200, 200, 429]);
    const first = await hit(gw, ALICE);
    expect(first.status).toBe(200);
    // Alice: 9 of her own left, team-a 1: the group is the tightest.
    expect(limitHeaders(first)).toEqual({ limit: '4', remaining: '1', policy: 'team-budget;by=ConsumerGroup' });
    expect((await hit(gw, ALICE)).status).toBe(200);
    const refused = await hit(gw, ALICE);
    expect(refused.status).toBe(429);
    expect(limitHeaders(refused)).toEqual({ limit: '4', remaining: '0', policy: 'team-budget;by=ConsumerGroup' });
    expect(refused.headers.get('x-tollgate-error')).toBe('TG_RATE_LIMITED');
    // Carol (team-b): her own default 2 is tighter than her group's 4; the entry has no name.
    expect(limitHeaders(await hit(gw, CAROL))).toEqual({ limit: '2', remaining: '1', policy: 'route.local[0];by=Consumer' });
    // A header never carries another consumer's key value.
    expect([...refused.headers.values()].join(' ')).not.toMatch(/alice|bob|carol|team-a/);
  });
});

describe('changing a budget at runtime (config reload)', () => {
  it('a raised override or amount applies to what was used in the window; a lowered one refuses at once', async () => {
    const up = await upstream();
    const entry = (requests: number, overrides?: unknown[]) => [{ requests, unit: 'Hours', by: { type: 'Consumer' }, ...(overrides ? { overrides } : {}) }];
    const gw = await gateway((port) => config(port, up.host, entry(3)));
    expect(await statuses(gw, ALICE, 4)).toEqual([200, 200, 200, 429]);
    expect(await statuses(gw, BOB, 1)).toEqual([200]);

    // Alice's budget raised to 5: she has used 3 of it, so 2 more pass, not 5.
    expect(await gw.rewrite(config(gw.port, up.host, entry(3, [{ key: 'alice', requests: 5 }])))).toBe('reloaded');
    const raised = await hit(gw, ALICE);
    expect(limitHeaders(raised)).toEqual({ limit: '5', remaining: '1', policy: 'route.local[0];by=Consumer' });
    expect(await statuses(gw, ALICE, 2)).toEqual([200, 429]);

    // Lowered to 4 and the default to 1: alice (5 used) and bob (1 used) are refused at once.
    expect(await gw.rewrite(config(gw.port, up.host, entry(1, [{ key: 'alice', requests: 4 }])))).toBe('reloaded');
    expect(await statuses(gw, ALICE, 1)).toEqual([429]);
    expect(await statuses(gw, BOB, 1)).toEqual([429]);
    // Carol never came: the new default applies to her whole.
    expect(await statuses(gw, CAROL, 2)).toEqual([200, 429]);

    // The next window refills each key under its new limit.
    now += 3_600_000;
    expect(await statuses(gw, ALICE, 5)).toEqual([200, 200, 200, 200, 429]);
    expect(await statuses(gw, BOB, 2)).toEqual([200, 429]);
  });

  it('a tokens budget keeps its usage when the amount changes; a named, unkeyed entry', async () => {
    const up = await upstream(40);
    const entry = (tokens: number) => [{ name: 'route-tokens', tokens, unit: 'Hours' }];
    const gw = await gateway((port) => config(port, up.host, entry(100)));
    expect(await statuses(gw, ALICE, 3)).toEqual([200, 200, 200]);
    expect(await statuses(gw, ALICE, 1)).toEqual([429]);
    // 120 used: raised to 150, 30 are left.
    expect(await gw.rewrite(config(gw.port, up.host, entry(150)))).toBe('reloaded');
    const raised = await hit(gw, BOB);
    expect(raised.status).toBe(200);
    expect(limitHeaders(raised)).toEqual({ limit: '150', remaining: '30', policy: 'route-tokens' });
    // 160 used: over 150.
    expect(await statuses(gw, BOB, 1)).toEqual([429]);
    // Lowered to 50 after a new window's 40: within; a second 40 crosses it, the third is refused.
    now += 3_600_000;
    expect(await statuses(gw, CAROL, 1)).toEqual([200]);
    expect(await gw.rewrite(config(gw.port, up.host, entry(50)))).toBe('reloaded');
    expect(await statuses(gw, CAROL, 2)).toEqual([200, 429]);
  });

  it('refuses bad overrides naming the field; the config in force keeps serving with its counters', async () => {
    const up = await upstream();
    const good = [{ requests: 2, unit: 'Hours', by: { type: 'Consumer' } }];
    const gw = await gateway((port) => config(port, up.host, good));
    expect(await statuses(gw, ALICE, 1)).toEqual([200]);
    const bad: [unknown[], RegExp][] = [
      [[{ ...good[0], overrides: [{ key: 'alice', requests: 3 }, { key: 'bob', requests: 3 }, { key: 'alice', requests: 4 }] }], /local\[0\]\.overrides\[2\]\.key: duplicate key "alice" \(also at index 0\)/],
      [[{ requests: 2, unit: 'Hours', overrides: [{ key: 'alice', requests: 3 }] }], /local\[0\]\.overrides: overrides are only allowed with by/],
      [[{ ...good[0], overrides: [{ key: 'alice', tokens: 3 }] }], /local\[0\]\.overrides\[0\]\.tokens: every override sets the amount the entry sets.*this entry sets requests/],
      [[{ ...good[0], overrides: [{ key: 'a'.repeat(129), requests: 3 }] }], /local\[0\]\.overrides\[0\]\.key: /],
      [[{ ...good[0], overrides: Array.from({ length: 1001 }, (_, i) => ({ key: `c${i}`, requests: 3 })) }], /local\[0\]\.overrides: .*1000/],
      [[{ ...good[0], name: 'no spaces allowed' }], /local\[0\]\.name: /],
    ];
    for (const [local, message] of bad) {
      expect(await gw.rewrite(config(gw.port, up.host, local))).toBe('refused');
      const line = gw.logs.messages().filter((m) => m.startsWith('config reload refused')).at(-1) ?? '';
      expect(line).toMatch(message);
    }
    // Still the first config, with alice's request counted.
    expect(await statuses(gw, ALICE, 2)).toEqual([200, 429]);
  });
});

const availability = rlsAvailability();

describe.skipIf(!availability.run)('per-key limits of keyed global descriptors (envoyproxy/ratelimit)', () => {
  let rls: RlsService;
  beforeAll(async () => {
    rls = await startRls(rlsBinaries().found!, { configs: { budgets: 'domain: budgets\n' } });
  });
  afterAll(async () => {
    await rls?.stop();
  });

  function globalConfig(port: number, backend: string, run: string, limit: number, overrides: unknown[]): Record<string, unknown> {
    const descriptors = [{ unit: 'Requests', by: { type: 'Consumer' }, entries: [{ name: 'run', expression: `"${run}"` }], limit: { requestsPerUnit: limit, unit: 'Days' }, overrides }];
    return simpleConfig(port, [{ name: 'r', backends: [{ host: backend }] }], {
      policies: { traffic: { apiKey: { file: keyFile.path() }, rateLimit: { global: { service: { host: rls.address }, timeout: '2s', domain: 'budgets', descriptors } } } },
    });
  }

  it("each key's own limit is sent with its descriptor; a changed limit keeps the service's count", async () => {
    const up = await upstream();
    const run = `r-${randomUUID()}`;
    // The service's windows are real time: the gateway's clock does not move them.
    const gw = await gateway((port) => globalConfig(port, up.host, run, 2, [{ key: 'alice', requestsPerUnit: 4 }]));
    expect(await statuses(gw, ALICE, 5)).toEqual([200, 200, 200, 200, 429]);
    const bob = await hit(gw, BOB);
    expect(limitHeaders(bob)).toEqual({ limit: '2, 2;w=86400', remaining: '1', policy: 'gateway.global.descriptors[0];by=Consumer' });
    expect(await statuses(gw, BOB, 2)).toEqual([200, 429]);

    // Bob raised to 4 (he has 3 counted, his refused request included: the service counts it),
    // alice lowered to 3: bob gets 1, alice is refused at once.
    expect(await gw.rewrite(globalConfig(gw.port, up.host, run, 2, [{ key: 'alice', requestsPerUnit: 3 }, { key: 'bob', requestsPerUnit: 4 }]))).toBe('reloaded');
    expect(await statuses(gw, BOB, 2)).toEqual([200, 429]);
    expect(await statuses(gw, ALICE, 1)).toEqual([429]);
    const day = Math.floor(Date.now() / 86_400_000) * 86_400;
    expect(await counters(rls, `budgets_consumer_`)).toMatchObject({
      [`budgets_consumer_alice_run_${run}_${day}`]: 6,
      [`budgets_consumer_bob_run_${run}_${day}`]: 5,
    });
  });

  it("a key's check and its charge both carry the key's own limit", async () => {
    const up = await upstream(60);
    const run = `r-${randomUUID()}`;
    const descriptors = [
      { name: 'consumer-tokens', unit: 'Tokens', by: { type: 'Consumer' }, entries: [{ name: 'run', expression: `"${run}"` }], limit: { requestsPerUnit: 50, unit: 'Days' }, overrides: [{ key: 'alice', requestsPerUnit: 100 }] },
    ];
    const gw = await gateway((port) =>
      simpleConfig(port, [{ name: 'r', policies: { traffic: { apiKey: { file: keyFile.path() }, rateLimit: { global: { service: { host: rls.address }, timeout: '2s', domain: 'budgets', descriptors } } } }, backends: [{ host: up.host }] }]),
    );
    const day = Math.floor(Date.now() / 86_400_000) * 86_400;
    const charged = (who: string, n: number) => until(async () => (await counters(rls, `budgets_consumer_${who}_`))[`budgets_consumer_${who}_run_${run}_${day}`] === n, { what: `${who} charged ${n}` });
    // Charged only under a limit: the service charges nothing for a descriptor it has no limit for.
    expect((await hit(gw, ALICE)).status).toBe(200);
    await charged('alice', 60);
    expect((await hit(gw, BOB)).status).toBe(200);
    await charged('bob', 60);
    // 60 used: within alice's 100, over bob's 50.
    const alice = await hit(gw, ALICE);
    expect(alice.status).toBe(200);
    expect(limitHeaders(alice)).toEqual({ limit: '100, 100;w=86400', remaining: '40', policy: 'consumer-tokens;by=Consumer' });
    await charged('alice', 120);
    expect((await hit(gw, ALICE)).status).toBe(429);
    const bob = await hit(gw, BOB);
    expect(bob.status).toBe(429);
    expect(limitHeaders(bob)).toEqual({ limit: '50, 50;w=86400', remaining: '0', policy: 'consumer-tokens;by=Consumer' });
  });
});

describe('examples/ratelimit-overrides.yaml', () => {
  it('loads, with its key file', async () => {
    const loaded = await loadConfigFile(fileURLToPath(new URL('../../../examples/ratelimit-overrides.yaml', import.meta.url)));
    const route = loaded.snapshot.binds[0]!.listeners[0]!.routes[0]!;
    expect(route.policy?.localRateLimit?.map((l) => [l.name, l.overrides?.length])).toEqual([
      ['consumer-daily', 2],
      ['team-daily', 1],
      [undefined, 1],
    ]);
  });
});
