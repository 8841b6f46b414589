// gwctl budgets against real standalone proxies: apiKey consumers with keyed budgets spend
// requests and LLM tokens, then `gwctl budgets --local` shows them per key, most used first, as
// a table, -o wide and -o json; its flags are checked (a bad one is exit 2, one the admin server
// refuses is exit 8 naming it); an API key is never printed. Two proxies asked as the proxies of
// one Gateway (the code path of gateway/<name> after the pods are found) are merged: a key's
// local budget is the sum of its proxies', with each proxy's numbers in -o json; a proxy that
// cannot be reached is a warning while the others answer.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { startMockLlm, type MockLlm } from '@tollgate/mock-llm';
import { freePort, onFreePort } from '@tollgate/testkit';
import { startStandaloneProxy, type StandaloneProxy } from '@tollgate/proxy';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { showBudgets } from '../src/commands/budgets.js';
import { localTarget } from '../src/target/local.js';
import { capture, gwctl } from './helpers.js';

const KEYS: Record<string, string> = { alice: 'sk-alice-0123456789', bob: 'sk-bob-0123456789ab', carol: 'sk-carol-0123456789' };

interface Budgeted {
  readonly gateway: StandaloneProxy;
  readonly port: number;
  readonly admin: string;
}

let dir: string;
let mock: MockLlm;
let one: Budgeted;
let two: Budgeted;

async function start(name: string): Promise<Budgeted> {
  const keyFile = join(dir, 'keys.json');
  const file = join(dir, `${name}.json`);
  const local = [
    { requests: 5, unit: 'Hours', by: { type: 'Consumer' } },
    { tokens: 1000, unit: 'Hours', by: { type: 'ConsumerGroup' } },
    { requests: 50, unit: 'Hours', by: { type: 'Header', name: 'x-api-key' } },
  ];
  const config = (port: number) => ({
    binds: [{ port, listeners: [{ name: 'main', protocol: 'HTTP', routes: [{ name: 'chat', policies: { traffic: { apiKey: { file: keyFile }, rateLimit: { local } } }, backends: [{ host: `127.0.0.1:${mock.port}` }] }] }] }],
  });
  const logs = new Writable({ write: (_c, _e, cb) => cb() });
  const { port, gateway } = await onFreePort(async (port) => {
    await writeFile(file, JSON.stringify(config(port)));
    const gateway = await startStandaloneProxy({ file, adminAddr: '127.0.0.1:0', metricsAddr: '127.0.0.1:0', readinessAddr: '127.0.0.1:0', logDestination: logs, watch: false });
    return { port, gateway };
  });
  return { gateway, port, admin: gateway.admin.address };
}

function spend(p: Budgeted, who: string, tokens: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const body = JSON.stringify({ model: 'mock-gpt', messages: [{ role: 'user', content: 'hi' }] });
    const req = httpRequest(
      `http://127.0.0.1:${p.port}/v1/chat/completions`,
      { method: 'POST', agent: false, headers: { 'content-type': 'application/json', 'x-api-key': KEYS[who]!, 'x-mock-prompt-tokens': String(tokens / 2), 'x-mock-completion-tokens': String(tokens / 2) } },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'gwctl-budgets-'));
  await writeFile(
    join(dir, 'keys.json'),
    JSON.stringify([
      { key: KEYS.alice, consumer: 'alice', group: 'team-a' },
      { key: KEYS.bob, consumer: 'bob', group: 'team-a' },
      { key: KEYS.carol, consumer: 'carol', group: 'team-b' },
    ]),
  );
  mock = await startMockLlm({ port: 0 });
  one = await start('one');
  two = await start('two');
  // Proxy one: alice 3 requests of 100 tokens, bob 1 of 50, carol 2 of 20. Proxy two: alice 1 of 100, carol 1 of 20.
  for (const [p, who, n, tokens] of [[one, 'alice', 3, 100], [one, 'bob', 1, 50], [one, 'carol', 2, 20], [two, 'alice', 1, 100], [two, 'carol', 1, 20]] as const) {
    for (let i = 0; i < n; i++) {
      const status = await spend(p, who, tokens);
      if (status !== 200) throw new Error(`setup request of ${who} answered ${status}`);
    }
  }
});
afterAll(async () => {
  await one?.gateway.close();
  await two?.gateway.close();
  await mock?.close();
  await rm(dir, { recursive: true, force: true });
});

const local = () => ['--local', '--admin-addr', one.admin];
const rowsOf = (stdout: string) => stdout.trimEnd().split('\n').slice(1).map((l) => l.split(/\s{3,}/));

describe('gwctl budgets --local', () => {
  it('a table per key, most used first, matching what was spent', async () => {
    const r = await gwctl(['budgets', ...local()]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const [header, ...lines] = r.stdout.trimEnd().split('\n');
    expect(header).toMatch(/^KEY\s+BY\s+USED\s+LIMIT\s+REMAINING\s+RESET\s+SCOPE\s+ENTRY\s+SOURCE$/);
    const rows = lines.map((l) => l.split(/\s{2,}/));
    expect(rows[0]!.slice(0, 5)).toEqual(['alice', 'consumer', '3', '5', '2']);
    expect(rows[0]![6]).toBe('main/chat');
    expect(rows[0]![8]).toBe('local');
    expect(rows[0]![5]).toMatch(/^(\d+m)?(\d+s)?$|^1h$/);
    const byKey = new Map(rows.map((r) => [`${r[1]}=${r[0]}`, r.slice(2, 5)]));
    expect(byKey.get('consumer=carol')).toEqual(['2', '5', '3']);
    expect(byKey.get('consumer=bob')).toEqual(['1', '5', '4']);
    expect(byKey.get('consumer_group=team-a')).toEqual(['350', '1000', '650']);
    expect(byKey.get('consumer_group=team-b')).toEqual(['40', '1000', '960']);
    // Sorted by the share of the limit spent.
    const shares = rows.map((r) => Number(r[2]) / Number(r[3]));
    expect(shares).toEqual([...shares].sort((a, b) => b - a));
    for (const k of Object.values(KEYS)) expect(r.stdout).not.toContain(k);
    expect(rows.filter((r) => r[1] === 'header.x-api-key').map((r) => r[0])).toEqual(expect.arrayContaining([expect.stringMatching(/^\[redacted sha256:/)]));
  });

  it('-o json has the rows; --key, --by and --limit narrow them', async () => {
    const r = await gwctl(['budgets', ...local(), '-o', 'json', '--by', 'consumer_group']);
    expect(r.code).toBe(0);
    const doc = JSON.parse(r.stdout) as { proxies: { proxy: string }[]; missing: unknown[]; budgets: { key: string; used: number; limit: number; kind: string; replicas: unknown[] }[] };
    expect(doc.proxies.map((p) => p.proxy)).toEqual([one.admin]);
    expect(doc.missing).toEqual([]);
    expect(doc.budgets.map((b) => [b.key, b.kind, b.used, b.limit, b.replicas.length])).toEqual([
      ['team-a', 'tokens', 350, 1000, 1],
      ['team-b', 'tokens', 40, 1000, 1],
    ]);
    const alice = await gwctl(['budgets', ...local(), '--key', 'alice']);
    expect(rowsOf(alice.stdout).map((row) => row[0])).toEqual(['alice']);
    const top = await gwctl(['budgets', ...local(), '--limit', '2']);
    expect(rowsOf(top.stdout)).toHaveLength(2);
    const wide = await gwctl(['budgets', ...local(), '-o', 'wide', '--key', 'alice']);
    expect(wide.stdout).toMatch(/RESERVED\s+WINDOW\s+PROXIES\s+ANSWERED\n/);
    expect(wide.stdout).toMatch(/\s0\s+Hours\s+1\s+-\n$/);
  });

  it('bad flags are usage errors (exit 2); a value the admin server refuses is exit 8 naming it', async () => {
    for (const [args, message] of [
      [['--limit', '0'], /option '--limit <rows>' argument '0' is invalid. must be a whole number from 1 to 1000/],
      [['--limit', 'lots'], /must be a whole number from 1 to 1000/],
      [['--source', 'redis'], /argument 'redis' is invalid. Allowed choices are local, global/],
      [['-o', 'csv'], /Allowed choices are table, wide, json, yaml/],
    ] as const) {
      const r = await gwctl(['budgets', ...local(), ...args]);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr).toMatch(message);
    }
    const by = await gwctl(['budgets', ...local(), '--by', 'user']);
    expect(by.code).toBe(8);
    expect(by.stderr).toBe('gwctl: GET /budgets answered 400: ?by= must be consumer, consumer_group, claim.<name>, header.<name> or key, e.g. ?by=consumer; leave it out for every kind of key\n');
    const both = await gwctl(['budgets', 'gateway/public', ...local()]);
    expect(both.code).toBe(2);
    const help = await gwctl(['budgets', '--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('gwctl budgets gateway/public -n edge');
  });

  it('an admin server that is not there is exit 7', async () => {
    const port = await freePort();
    const r = await gwctl(['budgets', '--local', '--admin-addr', `127.0.0.1:${port}`]);
    expect(r.code).toBe(7);
  });
});

describe('gwctl budgets: the proxies of a Gateway, merged', () => {
  it("one row per key: local budgets are the sum of the proxies', each proxy's numbers in -o json", async () => {
    const c = capture();
    await showBudgets([localTarget(one.admin), localTarget(two.admin)], 0, { output: 'json', by: 'consumer' }, c.io);
    expect(c.stderr.text).toBe('');
    const doc = JSON.parse(c.stdout.text) as { proxies: { proxy: string }[]; budgets: { key: string; used: number; limit: number; remaining: number; replicas: { proxy: string; used: number; limit: number }[] }[] };
    expect(doc.proxies.map((p) => p.proxy)).toEqual([one.admin, two.admin]);
    expect(doc.budgets.map((b) => [b.key, b.used, b.limit, b.remaining])).toEqual([
      ['alice', 4, 10, 6],
      ['carol', 3, 10, 7],
      ['bob', 1, 5, 4],
    ]);
    expect(doc.budgets[0]!.replicas).toEqual([
      expect.objectContaining({ proxy: one.admin, used: 3, limit: 5 }),
      expect.objectContaining({ proxy: two.admin, used: 1, limit: 5 }),
    ]);
    const table = capture();
    await showBudgets([localTarget(one.admin), localTarget(two.admin)], 0, { by: 'consumer_group', output: 'wide' }, table.io);
    expect(table.stdout.text).toMatch(/^team-a\s+consumer_group\s+450\s+2000\s+1550\s+.*\s2\s+-$/m);
  });

  it('a proxy that does not answer is a warning; the others are shown', async () => {
    const port = await freePort();
    const c = capture();
    await showBudgets([localTarget(one.admin), localTarget(`127.0.0.1:${port}`)], 0, { output: 'json', key: 'alice' }, c.io);
    expect(c.stderr.text).toMatch(new RegExp(`^gwctl: warning: cannot reach the admin server at 127\\.0\\.0\\.1:${port}: .*; its budgets are not included\\n$`));
    const doc = JSON.parse(c.stdout.text) as { missing: { proxy: string }[]; budgets: { used: number }[] };
    expect(doc.missing.map((m) => m.proxy)).toEqual([`127.0.0.1:${port}`]);
    expect(doc.budgets.map((b) => b.used)).toEqual([3]);
  });
});
