// What an operator sees of authentication on a real gateway with API keys (a keys file) and
// authorization rules over the consumer: the consumer's name, group and key id (never the key)
// in the trace and in the request log, the apiKey policy summarized in the trace and in
// /config_dump, and a policy of 100,000 keys that keeps /config_dump small.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TraceEvent } from '@tollgate/api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closedAfterEach, openTrace, send, simpleConfig, startGateway, startUpstream, type TestGateway, type Upstream } from './helpers.js';

const KEY = 'sk-alice-0123456789abcdef';
let dir: string;
let up: Upstream;
let gw: TestGateway;

async function keysFile(name: string, keys: { key: string; consumer: string; group?: string }[]): Promise<string> {
  const file = join(dir, name);
  await writeFile(file, JSON.stringify(keys));
  return file;
}

const route = (keys: string) => ({
  name: 'api',
  policies: {
    traffic: {
      apiKey: { file: keys },
      authorization: { rules: [{ name: 'teams', action: 'Allow', expression: 'consumer.group == "team-a"' }] },
    },
  },
  backends: [{ host: up.host }],
});

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tollgate-keys-'));
  up = await startUpstream();
  const keys = await keysFile('keys.json', [
    { key: KEY, consumer: 'alice', group: 'team-a' },
    { key: 'sk-bob-0123456789abcdef', consumer: 'bob', group: 'team-b' },
  ]);
  gw = await startGateway((port) => ({ config: { logLevel: 'debug' }, ...simpleConfig(port, [route(keys)]) }));
});

afterAll(async () => {
  await gw?.close();
  await up?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

async function traced(headers: Record<string, string>): Promise<TraceEvent[]> {
  const s = await openTrace(gw.adminUrl);
  await s.armed;
  await send(`${gw.url}/x`, { headers });
  return s.events;
}

const routePolicies = (events: TraceEvent[]) =>
  events.map((e) => e.message).find((m): m is Extract<TraceEvent['message'], { type: 'requestSnapshot' }> => m.type === 'requestSnapshot' && m.stage === 'route policies')!;

describe('the trace', () => {
  it("shows the consumer (name, group, the key's id) and each check's decision; never the key", async () => {
    const events = await traced({ authorization: `Bearer ${KEY}` });
    const auth = routePolicies(events).requestState.auth!;
    expect(auth.consumer).toMatchObject({ name: 'alice', group: 'team-a', via: 'apiKey' });
    expect(auth.consumer!.credentialId).toMatch(/^[0-9a-f]{8}$/);
    expect(auth.checks.map((c) => [c.kind, c.result, c.reason])).toEqual([
      ['apiKey', 'allow', 'allowed'],
      ['authorization', 'allow', 'allowed'],
    ]);
    const policy = events.map((e) => e.message).find((m) => m.type === 'policySelection');
    expect(policy).toMatchObject({ effectivePolicy: { apiKey: [{ source: 'route', config: { consumers: 2 } }] } });
    const listed = (policy as { effectivePolicy: { apiKey: { config: { keys: { id: string; consumer: string; group: string | null }[] } }[] } }).effectivePolicy.apiKey[0]!.config.keys;
    expect(listed.map((k) => `${k.consumer}/${k.group}`).sort()).toEqual(['alice/team-a', 'bob/team-b']);
    expect(listed.find((k) => k.consumer === 'alice')!.id).toBe(auth.consumer!.credentialId);
    expect(JSON.stringify(events)).not.toContain(KEY);
  });

  it('a consumer the rules refuse: the refusal names the consumer; a missing key is refused by apiKey with no consumer', async () => {
    const refused = routePolicies(await traced({ authorization: 'Bearer sk-bob-0123456789abcdef' })).requestState.auth!;
    expect(refused.consumer).toMatchObject({ name: 'bob', group: 'team-b' });
    expect(refused.checks.at(-1)).toMatchObject({ kind: 'authorization', result: 'deny', reason: 'not_allowed' });
    const missing = routePolicies(await traced({})).requestState.auth!;
    expect(missing.consumer).toBeNull();
    expect(missing.checks).toEqual([expect.objectContaining({ kind: 'apiKey', result: 'deny', reason: 'missing' })]);
  });
});

describe('the request log', () => {
  it("carries the consumer's name, never the key", async () => {
    await send(`${gw.url}/logged`, { headers: { authorization: `Bearer ${KEY}` } });
    const line = await gw.logs.waitFor((l) => l.msg === 'request done' && l.consumer === 'alice');
    expect(line).toMatchObject({ route: 'main/api', status: 200, consumer: 'alice' });
    expect(JSON.stringify(gw.logs.lines)).not.toContain(KEY);
  });
});

describe('the request the rules see', () => {
  const cleanups = closedAfterEach();

  it('is the client\'s without the credential apiKey consumed', async () => {
    const keys = await keysFile('one.json', [{ key: KEY, consumer: 'alice' }]);
    const policies = { traffic: { apiKey: { file: keys }, authorization: { rules: [{ name: 'sees-credential', action: 'Deny', expression: '"authorization" in request.headers' }] } } };
    const g = await startGateway((port) => simpleConfig(port, [{ name: 'api', policies, backends: [{ host: up.host }] }]));
    cleanups.push(() => g.close());
    expect((await send(`${g.url}/x`, { headers: { authorization: `Bearer ${KEY}` } })).status).toBe(200);
  });
});

describe('config_dump', () => {
  const cleanups = closedAfterEach();

  // Hashing 100,000 keys at load takes seconds, many more on a loaded machine: a test timeout of its own.
  it('a policy of 100,000 keys shows as a count and stays small', { timeout: 180_000 }, async () => {
    const many = await keysFile('many.json', Array.from({ length: 100_000 }, (_, i) => ({ key: `sk-generated-${i.toString(36).padStart(12, '0')}`, consumer: `consumer-${i}` })));
    const g = await startGateway((port) => simpleConfig(port, [route(many)]));
    cleanups.push(() => g.close());
    const text = await (await fetch(`${g.adminUrl}/config_dump`)).text();
    expect(text.length).toBeLessThan(16_384);
    const policy = (JSON.parse(text) as { policies: { policy: { apiKey: unknown } }[] }).policies[0]!.policy.apiKey;
    expect(policy).toEqual({ keyFrom: expect.any(Array) as unknown, consumers: 100_000 });
    expect(text).not.toContain('sk-generated-');
    expect(text).not.toContain('consumer-99999');
  });
});
