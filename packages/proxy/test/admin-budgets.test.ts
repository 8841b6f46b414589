// GET /budgets over real sockets: a standalone proxy with apiKey consumers and keyed budgets
// (local requests per consumer, local LLM tokens per group, header keys) and the mock LLM;
// requests are sent, then the view is checked against the usage they made: limit, used,
// remaining, reset, most used first, its filters and bounds, and that a key that may be a
// credential is never shown. Keyed global descriptors show the last answer of the real
// envoyproxy/ratelimit for the key.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createHash, randomUUID } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startMockLlm, type MockLlm } from '@tollgate/mock-llm';
import { until } from '@tollgate/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NO_AUTH, NO_TRAFFIC_KINDS, decodeSnapshot, encodeSnapshot, type PolicyIR } from '@tollgate/api';
import { onFreePorts, send, simpleConfig, startGateway, startUpstream, untilEveryThreadServed, type TestGateway } from './helpers.js';
import { rlsAvailability, rlsBinaries, startRls, type RlsService } from './support/rls.js';
import { twoListeners } from './support/two-listeners.js';

interface Row {
  source: string;
  level: string | null;
  scope: string;
  entry: string;
  by: string;
  key: string | null;
  overflow: boolean;
  kind: string;
  limit: number;
  used: number;
  reserved: number;
  remaining: number;
  window: string;
  resetSeconds: number;
  resetAt: string;
  answeredAt: string | null;
}
interface View {
  version: string;
  total: number;
  shown: number;
  budgets: Row[];
  missingWorkers?: { worker: number; reason: string }[];
}

/** How the view shows the key of a value that may be a credential. */
function hashedKey(value: string): string {
  return `[redacted sha256:${createHash('sha256').update(value, 'utf8').digest('base64url').slice(0, 16)}]`;
}

const KEYS = {
  alice: 'sk-alice-0123456789',
  bob: 'sk-bob-0123456789ab',
  carol: 'sk-carol-0123456789',
};

let dir: string;
let keyFile: string;
let llm: MockLlm;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tollgate-budget-view-'));
  keyFile = join(dir, 'keys.json');
  await writeFile(
    keyFile,
    JSON.stringify([
      { key: KEYS.alice, consumer: 'alice', group: 'team-a' },
      { key: KEYS.bob, consumer: 'bob', group: 'team-a' },
      { key: KEYS.carol, consumer: 'carol', group: 'team-b' },
    ]),
  );
  llm = await startMockLlm({ port: 0 });
});
afterAll(async () => {
  await llm?.close();
  await rm(dir, { recursive: true, force: true });
});

function chat(gw: TestGateway, who: keyof typeof KEYS, tokens: number, headers: Record<string, string> = {}) {
  return send(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': KEYS[who], 'x-mock-prompt-tokens': String(tokens / 2), 'x-mock-completion-tokens': String(tokens / 2), ...headers },
    body: JSON.stringify({ model: 'mock-gpt', messages: [{ role: 'user', content: 'hi' }] }),
  });
}

/** Setup requests must pass: the view is checked against what they spent. */
async function admitted(r: Promise<{ status: number; body: string }>): Promise<void> {
  const { status, body } = await r;
  if (status !== 200) throw new Error(`setup request answered ${status}: ${body}`);
}

async function view(gw: TestGateway, query = ''): Promise<View> {
  const r = await send(`${gw.adminUrl}/budgets${query}`);
  expect(r.status, r.body).toBe(200);
  return JSON.parse(r.body) as View;
}

describe('GET /budgets: local keyed budgets', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    const local = [
      { requests: 5, unit: 'Hours', by: { type: 'Consumer' } },
      { tokens: 1000, unit: 'Hours', by: { type: 'ConsumerGroup' } },
      // The API key itself: a credential, never shown.
      { requests: 50, unit: 'Hours', by: { type: 'Header', name: 'x-api-key' } },
      { requests: 50, unit: 'Hours', by: { type: 'Header', name: 'x-team' } },
    ];
    gw = await startGateway((port) =>
      simpleConfig(port, [{ name: 'chat', policies: { traffic: { apiKey: { file: keyFile }, rateLimit: { local } } }, backends: [{ host: `127.0.0.1:${llm.port}` }] }]),
    );
    for (let i = 0; i < 3; i++) await admitted(chat(gw, 'alice', 100, { 'x-team': 'red' }));
    await admitted(chat(gw, 'bob', 50));
    for (let i = 0; i < 2; i++) await admitted(chat(gw, 'carol', 20, { 'x-team': 'blue' }));
  });
  afterAll(async () => {
    await gw?.close();
  });

  it('one row per key with limit, used, remaining and reset, as the requests spent them, most used first', async () => {
    const v = await view(gw);
    const row = (by: string, key: string) => v.budgets.find((r) => r.by === by && r.key === key);
    expect(row('consumer', 'alice')).toMatchObject({ source: 'local', level: 'route', scope: 'main/chat', entry: 'rateLimit.local[0]', kind: 'requests', limit: 5, used: 3, remaining: 2, window: 'Hours', overflow: false, answeredAt: null });
    expect(row('consumer', 'bob')).toMatchObject({ limit: 5, used: 1, remaining: 4 });
    expect(row('consumer', 'carol')).toMatchObject({ limit: 5, used: 2, remaining: 3 });
    expect(row('consumer_group', 'team-a')).toMatchObject({ entry: 'rateLimit.local[1]', kind: 'tokens', limit: 1000, used: 350, reserved: 0, remaining: 650 });
    expect(row('consumer_group', 'team-b')).toMatchObject({ kind: 'tokens', limit: 1000, used: 40, remaining: 960 });
    expect(row('header.x-team', 'red')).toMatchObject({ used: 3, remaining: 47 });
    // bob sent no x-team: the empty key, his request counted there.
    expect(row('header.x-team', '')).toMatchObject({ used: 1 });
    const alice = row('consumer', 'alice')!;
    expect(alice.resetSeconds).toBeGreaterThan(0);
    expect(alice.resetSeconds).toBeLessThanOrEqual(3600);
    expect(Date.parse(alice.resetAt)).toBeGreaterThan(Date.now());
    expect(v.total).toBe(v.budgets.length);
    expect(v.total).toBe(3 + 2 + 3 + 3);
    // Most used first: by the share of the limit spent.
    const shares = v.budgets.map((r) => (r.used + r.reserved) / r.limit);
    expect(shares).toEqual([...shares].sort((a, b) => b - a));
    expect(v.budgets[0]).toMatchObject({ by: 'consumer', key: 'alice' });
  });

  it('never shows an API key: a key on a credential header is shown as a hash, one per key', async () => {
    const r = await send(`${gw.adminUrl}/budgets`);
    for (const k of Object.values(KEYS)) expect(r.body).not.toContain(k);
    const v = JSON.parse(r.body) as View;
    const apiKeyRows = v.budgets.filter((b) => b.by === 'header.x-api-key');
    expect(apiKeyRows).toHaveLength(3);
    for (const b of apiKeyRows) expect(b.key).toMatch(/^\[redacted sha256:[A-Za-z0-9_-]{16}\]$/);
    expect(new Set(apiKeyRows.map((b) => b.key)).size).toBe(3);
    expect(apiKeyRows.map((b) => b.used).sort()).toEqual([1, 2, 3]);
  });

  it('narrows by key, by, scope and source; ?limit= bounds the rows and total counts them all', async () => {
    expect((await view(gw, '?key=alice')).budgets.map((r) => `${r.by}=${r.key}`)).toEqual(['consumer=alice']);
    const groups = await view(gw, '?by=consumer_group');
    expect(groups.budgets.map((r) => r.key)).toEqual(['team-a', 'team-b']);
    expect((await view(gw, '?scope=main%2Fchat&by=consumer')).total).toBe(3);
    expect((await view(gw, '?scope=other')).total).toBe(0);
    expect((await view(gw, '?source=global')).total).toBe(0);
    expect((await view(gw, '?source=local')).total).toBe(11);
    const one = await view(gw, '?limit=1');
    expect(one).toMatchObject({ total: 11, shown: 1 });
    expect(one.budgets).toHaveLength(1);
    expect(one.budgets[0]).toMatchObject({ by: 'consumer', key: 'alice' });
  });

  it('a bad query parameter is a 400 naming it', async () => {
    const cases: [string, RegExp][] = [
      ['?limit=0', /^\?limit= must be a whole number from 1 to 1000/],
      ['?limit=1001', /^\?limit= must be a whole number from 1 to 1000/],
      ['?limit=ten', /^\?limit= must be a whole number/],
      ['?limit=1&limit=2', /^\?limit= must be a whole number from 1 to 1000, given once/],
      ['?key=', /^\?key= must be non-empty and at most 512 characters/],
      [`?scope=${'s'.repeat(513)}`, /^\?scope= must be non-empty and at most 512 characters/],
      ['?key=a&key=b', /^\?key= is given more than once/],
      ['?by=user', /^\?by= must be consumer, consumer_group, claim.<name>, header.<name> or key/],
      ['?source=redis', /^\?source= must be local or global/],
    ];
    for (const [q, message] of cases) {
      const r = await send(`${gw.adminUrl}/budgets${q}`);
      expect(r.status, q).toBe(400);
      expect(r.headers['x-tollgate-error'], q).toBe('TG_ADMIN_BUDGETS_QUERY');
      expect(r.body, q).toMatch(message);
    }
    const unknown = await send(`${gw.adminUrl}/budgets?sort=used`);
    expect(unknown.status).toBe(400);
    expect(unknown.body).toContain('"sort"');
    // The proxy keeps serving.
    expect((await chat(gw, 'bob', 10)).status).toBe(200);
  });
});

describe('GET /budgets: the overflow budget of a full key table', () => {
  it('is one row without a key, marked overflow', async () => {
    const gw = await startGateway((port) => ({
      config: { maxRateLimitKeys: 1 },
      ...simpleConfig(port, [{ name: 'r', policies: { traffic: { rateLimit: { local: [{ requests: 10, unit: 'Hours', by: { type: 'Header', name: 'x-user' } }] } } }, backends: [{ host: `127.0.0.1:${llm.port}` }] }]),
    }));
    try {
      for (const user of ['u1', 'u2', 'u3']) expect((await send(`${gw.url}/v1/models`, { headers: { 'x-user': user } })).status).toBe(200);
      const v = await view(gw);
      expect(v.budgets.map((r) => [r.key, r.overflow, r.used])).toEqual([
        [null, true, 2],
        ['u1', false, 1],
      ]);
    } finally {
      await gw.close();
    }
  });
});

describe('GET /budgets: per-key overrides', () => {
  it("each key's row has its own limit: its override, else the entry's amount", async () => {
    const local = [{ requests: 5, unit: 'Hours', by: { type: 'Consumer' }, overrides: [{ key: 'alice', requests: 8 }] }];
    const gw = await startGateway((port) =>
      simpleConfig(port, [{ name: 'chat', policies: { traffic: { apiKey: { file: keyFile }, rateLimit: { local } } }, backends: [{ host: `127.0.0.1:${llm.port}` }] }]),
    );
    try {
      for (let i = 0; i < 3; i++) await admitted(chat(gw, 'alice', 10));
      await admitted(chat(gw, 'bob', 10));
      const v = await view(gw);
      expect(v.budgets.map((b) => [b.key, b.limit, b.used, b.remaining])).toEqual([
        ['alice', 8, 3, 5],
        ['bob', 5, 1, 4],
      ]);
    } finally {
      await gw.close();
    }
  });
});

describe('GET /budgets: expression keys', () => {
  it('an expression over the consumer is shown; one that reads the request is shown as a hash', async () => {
    const local = [
      { requests: 10, unit: 'Hours', by: { type: 'Expression', expression: 'consumer.name + "@" + consumer.group' } },
      { requests: 10, unit: 'Hours', by: { type: 'Expression', expression: 'request.headers["x-api-key"]' } },
    ];
    const gw = await startGateway((port) =>
      simpleConfig(port, [{ name: 'chat', policies: { traffic: { apiKey: { file: keyFile }, rateLimit: { local } } }, backends: [{ host: `127.0.0.1:${llm.port}` }] }]),
    );
    try {
      await admitted(chat(gw, 'alice', 10));
      const r = await send(`${gw.adminUrl}/budgets`);
      expect(r.body).not.toContain(KEYS.alice);
      const v = JSON.parse(r.body) as View;
      expect(v.budgets.map((b) => [b.entry, b.by, b.key?.replace(/sha256:.*/, 'sha256:')]).sort()).toEqual([
        ['rateLimit.local[0]', 'key', 'alice@team-a'],
        ['rateLimit.local[1]', 'key', '[redacted sha256:'],
      ]);
    } finally {
      await gw.close();
    }
  });
});

describe('GET /budgets: a GatewayPolicy on the whole Gateway', () => {
  it('is one row per key for all its listeners, as its counters are', async () => {
    const up = await startUpstream();
    const gw = await startGateway((port) => simpleConfig(port, [{ name: 'r', backends: [{ host: up.host }] }]));
    try {
      const policy: PolicyIR = {
        origin: { kind: 'GatewayPolicy', namespace: 'apps', name: 'limits', target: { kind: 'Gateway', namespace: 'apps', name: 'gw', sectionName: null } },
        localRateLimit: [{ kind: 'requests', requests: 10, burst: 0, unit: 'Hours', by: { type: 'Header', name: 'x-user' } }],
        remoteRateLimit: null,
        transformation: null,
        ...NO_AUTH,
        ...NO_TRAFFIC_KINDS,
      };
      const ports = await onFreePorts(2, async ([a, b]) => {
        const ports: [number, number] = [a!, b!];
        await gw.gateway.runtime.apply(decodeSnapshot(encodeSnapshot(twoListeners(ports, up.port, () => policy))));
        return ports;
      });
      for (const port of [...ports, ...ports, ports[0]]) await admitted(send(`http://127.0.0.1:${port}/x`, { headers: { 'x-user': 'u1' } }));
      const v = await view(gw);
      expect(v.budgets.map((r) => [r.scope, r.level, r.key, r.used, r.remaining])).toEqual([['Gateway apps/gw', 'gateway', 'u1', 5, 5]]);
    } finally {
      await gw.close();
      await up.close();
    }
  });
});

const availability = rlsAvailability();

describe.skipIf(!availability.run)('GET /budgets: keyed global descriptors (real envoyproxy/ratelimit)', () => {
  let rls: RlsService;
  let gw: TestGateway;
  let global: { descriptors: unknown[] } & Record<string, unknown>;
  const configOf = (port: number, descriptors: unknown[]) =>
    simpleConfig(port, [{ name: 'chat', policies: { traffic: { apiKey: { file: keyFile }, rateLimit: { global: { ...global, descriptors } } } }, backends: [{ host: `127.0.0.1:${llm.port}` }] }]);
  beforeAll(async () => {
    rls = await startRls(rlsBinaries().found!, { configs: { bv: 'domain: bv\n' } });
    global = {
      service: { host: rls.address },
      timeout: '2s',
      domain: 'bv',
      descriptors: [
        { unit: 'Requests', by: { type: 'Consumer' }, limit: { requestsPerUnit: 5, unit: 'Days' } },
        { unit: 'Tokens', by: { type: 'ConsumerGroup' }, limit: { requestsPerUnit: 1000, unit: 'Days' } },
        { unit: 'Requests', by: { type: 'Header', name: 'cookie' }, limit: { requestsPerUnit: 100, unit: 'Days' } },
        { unit: 'Requests', by: { type: 'Expression', expression: 'consumer.name + "/" + consumer.group' }, limit: { requestsPerUnit: 100, unit: 'Days' } },
        { unit: 'Requests', by: { type: 'Expression', expression: 'request.headers["cookie"]' }, limit: { requestsPerUnit: 100, unit: 'Days' } },
      ],
    };
    gw = await startGateway((port) => configOf(port, global.descriptors));
  });
  afterAll(async () => {
    await gw?.close();
    await rls?.stop();
  });

  it("shows the service's last answer per key, marked as such; a credential header's key is a hash", async () => {
    // Each run has its own Redis; the token of this run is only in the header.
    const bearer = `session=tok-${randomUUID()}`;
    for (let i = 0; i < 2; i++) expect((await chat(gw, 'alice', 100, { cookie: bearer })).status).toBe(200);
    expect((await chat(gw, 'carol', 40, { cookie: bearer })).status).toBe(200);
    // Tokens are charged after each response, by a call of their own: its answer is awaited.
    const charged = (v: View) => v.budgets.some((b) => b.key === 'team-a' && b.used === 200) && v.budgets.some((b) => b.key === 'team-b' && b.used === 40);
    await until(async () => charged(await view(gw, '?source=global')), { what: "the answers to the token charges" });
    const r = await send(`${gw.adminUrl}/budgets?source=global`);
    expect(r.body).not.toContain(bearer.slice(8));
    const v = JSON.parse(r.body) as View;
    const row = (by: string, key: string) => v.budgets.find((b) => b.by === by && b.key === key);
    // The answer to alice's second request: the service counted 2 of 5.
    expect(row('consumer', 'alice')).toMatchObject({ source: 'global (last answer)', level: null, scope: 'main/chat', entry: 'rateLimit.global.descriptors[0]', kind: 'requests', limit: 5, used: 2, remaining: 3, window: '86400s' });
    expect(row('consumer', 'carol')).toMatchObject({ limit: 5, used: 1, remaining: 4 });
    // Tokens: the answer to the charge after each response.
    expect(row('consumer_group', 'team-a')).toMatchObject({ kind: 'tokens', limit: 1000, used: 200, remaining: 800 });
    expect(row('consumer_group', 'team-b')).toMatchObject({ kind: 'tokens', limit: 1000, used: 40, remaining: 960 });
    const auth = v.budgets.filter((b) => b.by === 'header.cookie');
    expect(auth).toHaveLength(1);
    expect(auth[0]).toMatchObject({ used: 3, remaining: 97 });
    expect(auth[0]!.key).toMatch(/^\[redacted sha256:/);
    // An expression over the consumer is shown; one that reads the request is a hash.
    expect(row('key', 'alice/team-a')).toMatchObject({ entry: 'rateLimit.global.descriptors[3]', used: 2 });
    const fromRequest = v.budgets.filter((b) => b.entry === 'rateLimit.global.descriptors[4]');
    expect(fromRequest.map((b) => [b.key?.slice(0, 17), b.used])).toEqual([['[redacted sha256:', 3]]);
    const alice = row('consumer', 'alice')!;
    expect(Date.parse(alice.answeredAt!)).toBeLessThanOrEqual(Date.now());
    expect(alice.resetSeconds).toBeGreaterThan(0);
    expect(alice.resetSeconds).toBeLessThanOrEqual(86_400);
    expect(v.budgets[0]).toMatchObject({ by: 'consumer', key: 'alice' });
  });

  it("shows the answers every thread got: the worker thread's with the main thread's", async () => {
    // A key of its own for each request (a cookie): only the thread that took it asks the service about it.
    const cookieKey = { unit: 'Requests', by: { type: 'Header', name: 'cookie' }, limit: { requestsPerUnit: 100, unit: 'Days' } };
    const two = await startGateway((port) => configOf(port, [cookieKey]), { workers: 2 });
    try {
      const cookies: string[] = [];
      await untilEveryThreadServed(two.adminUrl, async (i) => {
        cookies.push(`session=threads-${randomUUID()}-${i}`);
        expect((await chat(two, 'carol', 2, { cookie: cookies.at(-1)!, connection: 'close' })).status).toBe(200);
      });
      const v = await view(two, '?source=global');
      expect(v.budgets.map((b) => b.key).sort()).toEqual(cookies.map(hashedKey).sort());
      expect(v.budgets.every((b) => b.used === 1 && b.limit === 100)).toBe(true);
      expect(v.missingWorkers).toBeUndefined();
    } finally {
      await two.close();
    }
  });

  it("a reload keeps the answers of the descriptors it keeps and drops the others'", async () => {
    expect((await view(gw, '?source=global&key=alice')).total).toBe(1);
    expect(await gw.rewrite(configOf(gw.port, global.descriptors.slice(0, 3)))).toBe('reloaded');
    const v = await view(gw, '?source=global');
    expect(v.budgets.some((b) => b.entry === 'rateLimit.global.descriptors[0]' && b.key === 'alice')).toBe(true);
    expect(v.budgets.filter((b) => b.entry === 'rateLimit.global.descriptors[3]' || b.entry === 'rateLimit.global.descriptors[4]')).toEqual([]);
    // Its budget moved to another descriptor: the old answer is not shown under the new one.
    expect(await gw.rewrite(configOf(gw.port, [{ unit: 'Requests', by: { type: 'Header', name: 'x-team' }, limit: { requestsPerUnit: 5, unit: 'Days' } }]))).toBe('reloaded');
    expect((await view(gw, '?source=global')).total).toBe(0);
  });
});
