// Budgets per consumer, with apiKey consumers from a standalone key file, over real sockets:
// a consumer's budget whichever of its keys it presents, a group's budget shared by its
// consumers (both apply), budgets per JWT claim (the empty key for tokens without it), gateway-level consumer budgets evaluated after authentication (a
// refused key spends nothing, every route shares the consumer's budget) while the listener's
// unkeyed limits still run before routing, and consumer-keyed global descriptors whose limit
// travels with them to the real envoyproxy/ratelimit. The examples load.
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { loadConfigFile } from '../src/config/load-file.js';
import { send, simpleConfig, startGateway, startUpstream, type TestGateway, type Upstream } from './helpers.js';
import { jwks, sign, signingKey } from './support/jwt.js';
import { ALICE, ALICE_2, BOB, CAROL, consumerKeyFile, NOBODY } from './support/consumer-keys.js';
import { counters, rlsAvailability, rlsBinaries, startRls, type RlsService } from './support/rls.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

const keyFile = consumerKeyFile();

async function upstream(): Promise<Upstream> {
  const up = await startUpstream((_req, res) => res.end('ok'));
  cleanups.push(() => up.close());
  return up;
}

async function gateway(routes: unknown[], listener: Record<string, unknown> = {}): Promise<TestGateway> {
  const gw = await startGateway((port) => simpleConfig(port, routes, listener));
  cleanups.push(() => gw.close());
  return gw;
}


async function statuses(gw: TestGateway, headers: Record<string, string>, n: number, path = '/'): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) out.push((await send(`${gw.url}${path}`, { headers })).status);
  return out;
}

describe('local budgets per consumer (apiKey)', () => {
  it("a consumer's budget whichever key it presents; its group's budget shared by the group; both apply", async () => {
    const up = await upstream();
    const local = [
      { requests: 2, unit: 'Hours', by: { type: 'Consumer' } },
      { requests: 3, unit: 'Hours', by: { type: 'ConsumerGroup' } },
    ];
    const gw = await gateway([{ name: 'r', policies: { traffic: { apiKey: { file: keyFile.path() }, rateLimit: { local } } }, backends: [{ host: up.host }] }]);
    expect(await statuses(gw, ALICE, 2)).toEqual([200, 200]);
    // Alice's other key is still alice.
    expect(await statuses(gw, ALICE_2, 1)).toEqual([429]);
    // Bob has his own 2, but team-a has 1 of its 3 left.
    expect(await statuses(gw, BOB, 2)).toEqual([200, 429]);
    expect(await statuses(gw, CAROL, 3)).toEqual([200, 200, 429]);
    // An unknown key is refused by apiKey and spends nothing.
    expect((await send(gw.url, { headers: NOBODY })).status).toBe(401);
    const r = await send(gw.url, { headers: BOB });
    expect(r.status).toBe(429);
    expect(r.headers['x-ratelimit-remaining']).toBe('0');
  });

  it('a gateway-level consumer budget runs after authentication, one per consumer for every route, beside the listener\'s unkeyed limit', async () => {
    const up = await upstream();
    const routes = ['/a', '/b'].map((p) => ({ name: p.slice(1), matches: [{ path: { type: 'PathPrefix', value: p } }], backends: [{ host: up.host }] }));
    const gw = await gateway(routes, {
      policies: { traffic: { apiKey: { file: keyFile.path() }, rateLimit: { local: [{ requests: 3, unit: 'Hours', by: { type: 'Consumer' } }, { requests: 6, unit: 'Hours' }] } } },
    });
    // Before authentication every request would have had the empty key: one budget for all.
    expect([...(await statuses(gw, ALICE, 2, '/a')), ...(await statuses(gw, ALICE_2, 2, '/b'))]).toEqual([200, 200, 200, 429]);
    expect(await statuses(gw, BOB, 2, '/b')).toEqual([200, 200]);
    // 3 + 2 of the listener's unkeyed 6: carol has her own 3, the listener 1 left.
    expect(await statuses(gw, CAROL, 2, '/a')).toEqual([200, 429]);
  });
});

describe('local budgets per JWT claim', () => {
  it('one budget per value of the claim; a token without the claim and a request without a token (Optional) share the empty key', async () => {
    const up = await upstream();
    const key = signingKey('k1');
    const jwt = { mode: 'Optional', providers: [{ name: 'corp', issuer: 'https://issuer.test', audiences: ['tollgate'], jwks: { inline: jwks(key) } }] };
    const local = [{ requests: 2, unit: 'Hours', by: { type: 'Claim', name: 'org' } }];
    const gw = await gateway([{ name: 'r', policies: { traffic: { jwt, rateLimit: { local } } }, backends: [{ host: up.host }] }]);
    const as = async (claims: Record<string, unknown>) => ({ authorization: `Bearer ${await sign(key, { iss: 'https://issuer.test', aud: 'tollgate', ...claims }, { nowMs: Date.now() })}` });
    expect(await statuses(gw, await as({ sub: 'alice', org: 'acme' }), 1)).toEqual([200]);
    expect(await statuses(gw, await as({ sub: 'bob', org: 'acme' }), 2)).toEqual([200, 429]);
    expect(await statuses(gw, await as({ sub: 'dave', org: 'globex' }), 1)).toEqual([200]);
    expect(await statuses(gw, await as({ sub: 'erin' }), 1)).toEqual([200]);
    expect(await statuses(gw, {}, 2)).toEqual([200, 429]);
  });
});

const availability = rlsAvailability();

describe.skipIf(!availability.run)('global budgets per consumer (apiKey, envoyproxy/ratelimit)', () => {
  let rls: RlsService;
  beforeAll(async () => {
    rls = await startRls(rlsBinaries().found!, { configs: { budgets: 'domain: budgets\n' } });
  });
  afterAll(async () => {
    await rls?.stop();
  });

  it("a consumer-keyed descriptor carries the consumer's limit to the service: one counter per consumer, on a gateway-level policy too", async () => {
    const up = await upstream();
    const group = `g-${randomUUID()}`;
    const descriptors = [
      { unit: 'Requests', by: { type: 'Consumer' }, limit: { requestsPerUnit: 2, unit: 'Days' }, entries: [{ name: 'run', expression: `"${group}"` }] },
    ];
    const gw = await gateway([{ name: 'r', backends: [{ host: up.host }] }], {
      policies: { traffic: { apiKey: { file: keyFile.path() }, rateLimit: { global: { service: { host: rls.address }, timeout: '2s', domain: 'budgets', descriptors } } } },
    });
    expect(await statuses(gw, ALICE, 3)).toEqual([200, 200, 429]);
    expect(await statuses(gw, BOB, 1)).toEqual([200]);
    expect((await send(gw.url, { headers: NOBODY })).status).toBe(401);
    const day = Math.floor(Date.now() / 86_400_000) * 86_400;
    expect(await counters(rls, 'budgets_consumer_')).toMatchObject({
      [`budgets_consumer_alice_run_${group}_${day}`]: 3,
      [`budgets_consumer_bob_run_${group}_${day}`]: 1,
    });
  });
});

describe('examples/ratelimit-budgets.yaml', () => {
  it('loads, with its key file', async () => {
    const loaded = await loadConfigFile(fileURLToPath(new URL('../../../examples/ratelimit-budgets.yaml', import.meta.url)));
    const route = loaded.snapshot.binds[0]!.listeners[0]!.routes[0]!;
    expect(route.policy?.localRateLimit?.map((l) => l.by?.type)).toEqual(['Consumer', 'ConsumerGroup', 'Consumer']);
    expect(loaded.namedFiles.some((f) => f.endsWith('examples/ratelimit-budgets-keys.json'))).toBe(true);
  });
});
