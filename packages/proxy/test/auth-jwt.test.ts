// jwt end to end over real sockets: a standalone proxy with jwt policies in front of an echo
// backend, tokens signed with jose (and forged by hand), and a real HTTPS JWKS server with a CA
// made here. The proxy's clock is injected, so token lifetimes and key set caching move when
// the test says, never by waiting.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_CLAIM_LENGTH, MAX_CONSUMER_CLAIMS, type TraceEvent } from '@tollgate/api';
import { mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { boundedClaims } from '../src/auth/jwt-claims.js';
import { loadConfigFile } from '../src/config/load-file.js';
import { closedAfterEach, echoed, openTrace, send, simpleConfig, startGateway, startUpstream, type RawResponse, type TestGateway, type Upstream } from './helpers.js';
import { hmacWithPublicKey, jwks, sign, signingKey, signRaw, startJwksServer, unsigned, type JwksServer, type SigningKey } from './support/jwt.js';
import { issueTestCertificate, nextEvent, until } from '@tollgate/testkit';

let now = Date.UTC(2026, 5, 1);
const clock = () => now;
const cleanups = closedAfterEach();
let upstream: Upstream;

const ISSUER = 'https://issuer.test';
const rsa = signingKey('rsa-1');
const ec = signingKey('ec-1', 'ES256');
const ed = signingKey('ed-1', 'EdDSA');
const ec384 = signingKey('ec-2', 'ES384');
/** Same kid as `rsa`, another key: what a forger has. */
const forger = signingKey('rsa-1');

beforeAll(async () => {
  upstream = await startUpstream();
});
afterAll(async () => {
  await upstream?.close();
});

function provider(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    name: 'corp',
    issuer: ISSUER,
    audiences: ['tollgate'],
    jwks: { inline: jwks(rsa, ec, ed, ec384) },
    groupClaim: 'team',
    claimsToHeaders: [
      { claim: 'sub', header: 'x-user' },
      { claim: 'roles', header: 'X-Roles' },
      { claim: 'name', header: 'x-name' },
    ],
    ...extra,
  };
}

function route(name: string, prefix: string, jwt: unknown) {
  return { name, matches: [{ path: { type: 'PathPrefix', value: prefix } }], ...(jwt ? { policies: { traffic: { jwt } } } : {}), backends: [{ host: upstream.host }] };
}

async function gateway(jwt: unknown, opts: { logLevel?: string } = {}): Promise<TestGateway> {
  const gw = await startGateway((port) => ({ ...(opts.logLevel ? { config: { logLevel: opts.logLevel } } : {}), ...simpleConfig(port, [route('api', '/api', jwt), route('open', '/open', null)]) }), { clock });
  cleanups.push(() => gw.close());
  return gw;
}

const good = (key: SigningKey = rsa, claims: Record<string, unknown> = {}, header: Record<string, unknown> = {}) =>
  sign(key, { iss: ISSUER, aud: 'tollgate', sub: 'alice', team: 'red', ...claims }, { nowMs: now, header });

/** A file in a directory of its own, removed after the test. */
async function tempFile(name: string, text: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'tollgate-jwt-'));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  const file = join(dir, name);
  await writeFile(file, text);
  return file;
}

/** Replaces a file's content at once (written beside it, renamed over it), as a deployment would. */
async function replaceFile(file: string, text: string): Promise<void> {
  await writeFile(`${file}.tmp`, text);
  await rename(`${file}.tmp`, file);
}

const bearer = (token: string, extra: Record<string, string> = {}) => ({ authorization: `Bearer ${token}`, ...extra });
const get = (gw: TestGateway, path: string, headers: Record<string, string> = {}) => send(`${gw.url}${path}`, { headers });

async function metric(gw: TestGateway, name: string, labels: Record<string, string>): Promise<number> {
  const text = await (await fetch(`http://${gw.gateway.ops.metrics.address}/metrics`)).text();
  const want = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`)) continue;
    if (want.every((l) => line.includes(l))) return Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return 0;
}

function expectRefused(r: RawResponse, detail: string | RegExp): void {
  expect(r.status).toBe(401);
  expect(r.headers['x-tollgate-error']).toBe('TG_UNAUTHENTICATED');
  expect(r.headers['www-authenticate']).toMatch(/^Bearer realm="tollgate", error="invalid_token", error_description="[^"]+"$/);
  expect(r.body).toMatch(detail);
}

describe('inline key set', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startGateway((port) => simpleConfig(port, [route('api', '/api', { providers: [provider()] }), route('open', '/open', null)]), { clock });
  });
  afterAll(async () => gw?.close());

  it('passes a token of the provider: the token is not forwarded, claims become headers, a client\'s own claim header is replaced', async () => {
    const token = await good(rsa, { roles: ['admin', 'dev'], name: 'Alice' });
    const r = await get(gw, '/api/x', bearer(token, { 'x-user': 'mallory' }));
    expect(r.status).toBe(200);
    const seen = echoed(r);
    expect(seen.headers.authorization).toBeUndefined();
    expect(seen.headers['x-user']).toBe('alice');
    expect(seen.headers['x-roles']).toBe('["admin","dev"]');
    expect(seen.headers['x-name']).toBe('Alice');
  });

  it.each([
    ['ES256', ec],
    ['ES384', ec384],
    ['EdDSA', ed],
  ] as const)('passes a %s token', async (_alg, key) => {
    const r = await get(gw, '/api', bearer(await good(key)));
    expect(r.status).toBe(200);
  });

  it('passes PS256 with an RSA key, and a token expired less than the clock skew (60s) ago', async () => {
    const ps = { ...rsa, alg: 'PS256' as const };
    expect((await get(gw, '/api', bearer(await good(ps)))).status).toBe(200);
    const nowS = Math.floor(now / 1000);
    expect((await get(gw, '/api', bearer(await good(rsa, { exp: nowS - 30 })))).status).toBe(200);
  });

  it('a token verified before is taken from the cache only while it is valid: past exp and the skew it is refused as expired', async () => {
    const start = now;
    try {
      const exp = Math.floor(now / 1000) + 120;
      const token = await good(rsa, { exp });
      expect((await get(gw, '/api', bearer(token))).status).toBe(200);
      expect((await get(gw, '/api', bearer(token))).status).toBe(200);
      now = exp * 1000 + 60_000 + 1;
      expectRefused(await get(gw, '/api', bearer(token)), /expired/);
      // Not before its nbf either, cached or not.
      const nbf = Math.floor(now / 1000) + 600;
      const early = await good(rsa, { nbf, exp: nbf + 600 });
      expectRefused(await get(gw, '/api', bearer(early)), /not valid yet/);
    } finally {
      now = start;
    }
  });

  it('refuses a request without a token with a challenge that names no error', async () => {
    const r = await get(gw, '/api', { 'x-user': 'mallory' });
    expect(r.status).toBe(401);
    expect(r.headers['www-authenticate']).toBe('Bearer realm="tollgate"');
    expect(r.body).toBe('authentication required: no token; send it in one of: Authorization: Bearer');
    expect(upstream.requests.some((q) => q.headers['x-user'] === 'mallory')).toBe(false);
  });

  const nowS = () => Math.floor(now / 1000);
  const refusals: [string, string, () => Promise<string> | string, RegExp][] = [
    ['a forged signature (another key, same kid)', 'bad_signature', () => good(forger), /signature does not verify/],
    ['an expired token (beyond the skew)', 'expired', () => good(rsa, { exp: nowS() - 61 }), /has expired/],
    ['a token whose nbf is in the future', 'not_yet_valid', () => good(rsa, { nbf: nowS() + 120 }), /not valid yet/],
    ['alg: none', 'bad_algorithm', () => unsigned({ iss: ISSUER, aud: 'tollgate', sub: 'alice', exp: nowS() + 60 }), /alg is not accepted/],
    ['alg: none spelled "None" with a signature part', 'bad_algorithm', () => `${unsigned({ iss: ISSUER, aud: 'tollgate', sub: 'alice', exp: nowS() + 60 }, { alg: 'None', kid: 'rsa-1' })}AAAA`, /alg is not accepted/],
    ['HS256 signed with the RSA public key as the secret (key confusion)', 'bad_algorithm', () => hmacWithPublicKey(rsa, { iss: ISSUER, aud: 'tollgate', sub: 'alice' }, now), /alg is not accepted/],
    ['an ES256 header naming the RSA key', 'bad_algorithm', () => good(ec, {}, { kid: 'rsa-1' }), /does not fit the type of the key/],
    ['an RS256 header naming the EC key', 'bad_algorithm', () => good(rsa, {}, { kid: 'ec-1' }), /does not fit the type of the key/],
    ['another issuer', 'bad_issuer', () => good(rsa, { iss: 'https://evil.test' }), /iss is not the provider's issuer/],
    ['another audience', 'bad_audience', () => good(rsa, { aud: 'someone-else' }), /aud names none/],
    ['a kid the set does not hold', 'unknown_key', () => good(rsa, {}, { kid: 'rsa-9' }), /names no key of provider corp/],
    ['a payload that is not JSON, correctly signed', 'malformed', () => signRaw(rsa, 'not json at all'), /payload is not a JSON object/],
    ['an encrypted token (five parts)', 'malformed', () => 'eyJhbGciOiJSU0EtT0FFUCJ9.a.b.c.d', /JWE/],
    ['text that is not a JWT', 'malformed', () => 'not-a-jwt', /not a JWT/],
    ['a header that is not JSON', 'malformed', () => `${Buffer.from('{{{').toString('base64url')}.e30.sig`, /header is not a JSON object/],
    ['a token without exp', 'malformed', () => sign(rsa, { iss: ISSUER, aud: 'tollgate', sub: 'alice' }, { nowMs: now, noExp: true }), /no valid exp/],
    ['a token without the consumer claim (sub)', 'malformed', () => sign(rsa, { iss: ISSUER, aud: 'tollgate' }, { nowMs: now }), /no sub claim/],
    ['a consumer claim with a line break', 'malformed', () => good(rsa, { sub: 'alice\nadmin' }), /no sub claim/],
    ['a group claim that is not a string', 'malformed', () => good(rsa, { team: { nested: true } }), /team claim is not a string/],
    ['a token over maxTokenLength (8192)', 'malformed', () => good(rsa, { pad: 'x'.repeat(9000) }), /longer than 8192 characters/],
  ];

  it.each(refusals)('refuses %s (401, reason %s), never reaching the backend', async (_what, reason, make, detail) => {
    const before = await metric(gw, 'tollgate_auth_decisions_total', { kind: 'jwt', result: 'deny', reason });
    const seen = upstream.requests.length;
    const token = await make();
    const r = await get(gw, '/api', bearer(token));
    expectRefused(r, detail);
    expect(r.body).not.toContain(token);
    expect(r.headers['www-authenticate']).not.toContain(token);
    expect(upstream.requests.length).toBe(seen);
    expect(await metric(gw, 'tollgate_auth_decisions_total', { kind: 'jwt', result: 'deny', reason })).toBe(before + 1);
  });

  it('answers an OpenAI-style call in OpenAI\'s error shape, so the official clients raise AuthenticationError', async () => {
    const r = await send(`${gw.url}/api/v1/chat/completions`, { method: 'POST', headers: { ...bearer(await good(forger)), 'content-type': 'application/json' }, body: '{"model":"m","messages":[]}' });
    expect(r.status).toBe(401);
    expect(JSON.parse(r.body)).toEqual({ error: { message: 'authentication required: the token\'s signature does not verify', type: 'authentication_error', param: null, code: 'TG_UNAUTHENTICATED' } });
  });

  it('keeps serving after every refusal: the next good token passes', async () => {
    expect((await get(gw, '/api', bearer(await good()))).status).toBe(200);
  });

  it('refuses a token over the header section Node reads (16 KiB) with 431 before any check', async () => {
    const r = await get(gw, '/api', bearer('a'.repeat(20_000)));
    expect(r.status).toBe(431);
  });

  it('sanitises claim values copied to headers: CR/LF never splits a header, UTF-8 is sent as its bytes', async () => {
    const token = await good(rsa, { name: 'evil\r\nx-admin: 1', roles: 'José 李' });
    const r = await get(gw, '/api', bearer(token, { 'x-name': 'spoofed' }));
    expect(r.status).toBe(200);
    const h = echoed(r).headers;
    expect(h['x-name']).toBeUndefined();
    expect(h['x-admin']).toBeUndefined();
    expect(Buffer.from(h['x-roles']!, 'latin1').toString('utf8')).toBe('José 李');
  });
});

describe('where the token is read', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    const tokenFrom = [
      { type: 'Header', name: 'X-Token', prefix: 'JWT ' },
      { type: 'Cookie', name: 'session' },
      { type: 'Query', name: 'access' },
    ];
    gw = await startGateway((port) => simpleConfig(port, [route('api', '/api', { providers: [provider({ tokenFrom })] })]), { clock });
  });
  afterAll(async () => gw?.close());

  it('reads a header after its prefix (any case) and removes the header', async () => {
    const r = await get(gw, '/api', { 'x-token': `jwt ${await good()}` });
    expect(r.status).toBe(200);
    expect(echoed(r).headers['x-token']).toBeUndefined();
  });

  it('a header without the prefix holds no token', async () => {
    const r = await get(gw, '/api', { 'x-token': await good() });
    expect(r.status).toBe(401);
    expect(r.headers['www-authenticate']).toBe('Bearer realm="tollgate"');
  });

  it('reads a cookie and forwards the other cookies', async () => {
    const r = await get(gw, '/api', { cookie: `a=1; session=${await good()}; b=2` });
    expect(r.status).toBe(200);
    expect(echoed(r).headers.cookie).toBe('a=1; b=2');
  });

  it('reads a query parameter and removes it, keeping the others byte for byte', async () => {
    const r = await get(gw, `/api/x?q=a%20b&access=${await good()}&z`);
    expect(r.status).toBe(200);
    expect(echoed(r).url).toBe('/api/x?q=a%20b&z');
  });

  it('refuses a token sent twice, or in two places, rather than choose one (ambiguous)', async () => {
    const t = await good();
    const cookies = await get(gw, '/api', { cookie: `session=${t}; session=${await good(rsa, { sub: 'bob' })}` });
    const params = await get(gw, `/api?access=${t}&access=${t}`);
    const places = await get(gw, `/api?access=${t}`, { cookie: `session=${t}` });
    expect([cookies.status, params.status, places.status]).toEqual([401, 401, 401]);
    for (const r of [cookies, params, places]) expect(r.headers['www-authenticate']).toMatch(/^Bearer realm="tollgate", error="invalid_request", error_description="[^"]+"$/);
    expect(cookies.body).toContain('the cookie session is sent 2 times');
    expect(params.body).toContain('the query parameter access is sent 2 times');
    expect(places.body).toContain('credentials in two places (cookie session and query parameter access)');
    expect(await metric(gw, 'tollgate_auth_decisions_total', { kind: 'jwt', reason: 'ambiguous' })).toBe(3);
  });

  it('refuses an empty place (malformed), and ignores places it was not told to read: a Bearer token is no token here', async () => {
    const empty = await get(gw, '/api', { 'x-token': 'JWT ' });
    expect(empty.status).toBe(401);
    expect(empty.body).toContain('the x-token header has "JWT" and no credential after it');
    const r = await get(gw, '/api', bearer(await good()));
    expect(r.status).toBe(401);
    expect(r.headers['www-authenticate']).toBe('Bearer realm="tollgate"');
    expect(r.body).toContain('no token; send it in one of: header x-token after "JWT ", cookie session, query parameter access');
  });
});

describe('a key set file beside the config', () => {
  it('applies an edit of the file without a restart: a rotated key passes, the removed one is refused', async () => {
    const file = await tempFile('jwks.json', jwks(rsa));
    const gw = await gateway({ providers: [provider({ jwks: { file } })] });
    expect((await get(gw, '/api', bearer(await good()))).status).toBe(200);
    const rotated = signingKey('rsa-2');
    const reloaded = nextEvent(gw.gateway.source, 'reloaded');
    await replaceFile(file, jwks(rotated));
    await reloaded;
    expect((await get(gw, '/api', bearer(await good(rotated)))).status).toBe(200);
    expectRefused(await get(gw, '/api', bearer(await good())), /kid names no key/);
  });

  it('refuses an edit that puts a symmetric key in the file, naming it, and keeps the last good keys', async () => {
    const file = await tempFile('jwks.json', jwks(rsa));
    const gw = await gateway({ providers: [provider({ jwks: { file } })] });
    const refused = nextEvent(gw.gateway.source, 'refused');
    await replaceFile(file, JSON.stringify({ keys: [{ kty: 'oct', k: 'c2VjcmV0', kid: 'rsa-1' }] }));
    const [err] = (await refused) as [Error];
    expect(err.message).toMatch(/policies\.traffic\.jwt\.providers\[0\]\.jwks\.file: file .*jwks\.json: keys\[0\] is a symmetric \(oct\) key/);
    expect((await get(gw, '/api', bearer(await good()))).status).toBe(200);
  });
});

describe('mode Optional', () => {
  it('passes a request without a token without a consumer (and without the client\'s claim headers); still refuses a bad token', async () => {
    const gw = await gateway({ mode: 'Optional', providers: [provider()] });
    const r = await get(gw, '/api', { 'x-user': 'mallory', 'x-roles': 'admin' });
    expect(r.status).toBe(200);
    expect(echoed(r).headers['x-user']).toBeUndefined();
    expect(echoed(r).headers['x-roles']).toBeUndefined();
    expectRefused(await get(gw, '/api', bearer(await good(forger))), /signature does not verify/);
    expect((await get(gw, '/api', bearer(await good()))).status).toBe(200);
  });
});

describe('several providers', () => {
  it('the token\'s iss picks the provider among those reading the same place', async () => {
    const other = signingKey('other-1', 'ES256');
    const gw = await gateway({
      providers: [
        provider({ claimsToHeaders: [{ claim: 'sub', header: 'x-user' }] }),
        { name: 'partner', issuer: 'https://partner.test', jwks: { inline: jwks(other) }, claimsToHeaders: [{ claim: 'sub', header: 'x-partner' }] },
      ],
    });
    const viaPartner = await sign(other, { iss: 'https://partner.test', sub: 'p-1' }, { nowMs: now });
    const r = await get(gw, '/api', bearer(viaPartner, { 'x-user': 'mallory' }));
    expect(r.status).toBe(200);
    expect(echoed(r).headers['x-partner']).toBe('p-1');
    // A client's header of another provider's mapping is removed as well.
    expect(echoed(r).headers['x-user']).toBeUndefined();
    // The corp key does not verify partner tokens, whatever the kid says.
    expectRefused(await get(gw, '/api', bearer(await sign(rsa, { iss: 'https://partner.test', sub: 'p-1' }, { nowMs: now }))), /kid names no key of provider partner/);
    expectRefused(await get(gw, '/api', bearer(await sign(rsa, { iss: 'https://nobody.test', sub: 'x' }, { nowMs: now }))), /issuer of none of the providers/);
  });
});

describe('remote key set over HTTPS', () => {
  let server: JwksServer;
  beforeAll(async () => {
    server = await startJwksServer({ kind: 'serve', body: jwks(rsa) });
  });
  afterAll(async () => server?.close());

  /** A provider fetching from the test server; the CA file is written beside the config. */
  async function remoteGateway(remote: Record<string, unknown> = {}, logLevel?: string): Promise<TestGateway> {
    const caFile = await tempFile('ca.pem', server.ca.cert);
    return gateway({ providers: [provider({ jwks: { remote: { host: server.address, path: '/keys', tls: { caFile, hostname: 'jwks.test' }, timeout: '30s', ...remote } } })] }, { logLevel });
  }

  it('fetches the set when the config is applied and verifies with it', async () => {
    server.behave({ kind: 'serve', body: jwks(rsa) });
    const before = server.requests;
    const gw = await remoteGateway();
    expect((await get(gw, '/api', bearer(await good()))).status).toBe(200);
    expect(server.requests).toBe(before + 1);
    expect(await metric(gw, 'tollgate_jwks_fetches_total', { result: 'ok' })).toBe(1);
  });

  it('fetches again for an unknown kid (after the rotation), at most once per 10s, concurrent misses sharing one fetch', async () => {
    server.behave({ kind: 'serve', body: jwks(rsa) });
    const gw = await remoteGateway();
    expect((await get(gw, '/api', bearer(await good()))).status).toBe(200);
    const rotated = signingKey('rsa-2');
    const fetched = server.requests;
    // Within 10s of the first fetch: no new fetch, the kid is unknown.
    expectRefused(await get(gw, '/api', bearer(await good(rotated))), /kid names no key/);
    expect(server.requests).toBe(fetched);
    server.behave({ kind: 'serve', body: jwks(rsa, rotated) });
    now += 10_000;
    const tokens = await Promise.all(Array.from({ length: 5 }, () => good(rotated)));
    const rs = await Promise.all(tokens.map((t) => get(gw, '/api', bearer(t))));
    expect(rs.map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
    expect(server.requests).toBe(fetched + 1);
    // Made-up kids right after: refused without another fetch.
    for (let i = 0; i < 3; i++) expectRefused(await get(gw, '/api', bearer(await good(signingKey(`made-up-${i}`)))), /kid names no key/);
    expect(server.requests).toBe(fetched + 1);
  });

  it('keeps the last good set when a refresh fails, and says so in the log and the metrics', async () => {
    server.behave({ kind: 'serve', body: jwks(rsa) });
    const gw = await remoteGateway({ cacheDuration: '1m' });
    expect((await get(gw, '/api', bearer(await good()))).status).toBe(200);
    server.behave({ kind: 'status', status: 500 });
    now += 61_000;
    const fetched = server.requests;
    // The set is stale: this request is served with it and starts a refresh in the background.
    expect((await get(gw, '/api', bearer(await good()))).status).toBe(200);
    await until(() => metric(gw, 'tollgate_jwks_fetches_total', { result: 'status' }).then((n) => n === 1), { what: 'the failed refresh' });
    expect(server.requests).toBe(fetched + 1);
    const line = await gw.logs.waitFor((l) => String(l.msg).includes('could not be fetched'));
    expect(line.msg).toMatch(/could not be fetched \(the server answered 500\); keeping the key set fetched 61s ago/);
    expect((await get(gw, '/api', bearer(await good()))).status).toBe(200);
  });

  it.each([
    ['hangs', { kind: 'hang' }, 'timeout'],
    ['answers garbage', { kind: 'garbage' }, 'invalid'],
    ['answers 503', { kind: 'status', status: 503 }, 'status'],
    ['streams 50 MB', { kind: 'huge', bytes: 50 * 1024 * 1024 }, 'too_large'],
  ] as const)('a JWKS server that %s before any set was fetched: 503 TG_JWKS_UNAVAILABLE, other routes keep serving', async (_what, behaviour, result) => {
    server.behave(behaviour);
    // The fetch's time limit ends the hanging case only; the others must fail for what they are,
    // however slow the machine.
    const gw = await remoteGateway({ timeout: behaviour.kind === 'hang' ? '2s' : '30s' });
    const open = await get(gw, '/open');
    expect(open.status).toBe(200);
    const r = await get(gw, '/api', bearer(await good()));
    expect(r.status).toBe(503);
    expect(r.headers['x-tollgate-error']).toBe('TG_JWKS_UNAVAILABLE');
    expect(r.headers['retry-after']).toBe('10');
    expect(r.headers['www-authenticate']).toBeUndefined();
    expect(await metric(gw, 'tollgate_jwks_fetches_total', { result })).toBe(1);
    expect(await metric(gw, 'tollgate_auth_decisions_total', { kind: 'jwt', reason: 'keys_unavailable' })).toBe(1);
    // The proxy stopped reading a 50 MB answer: the server could not write it all.
    const cutShort = behaviour.kind === 'huge' ? server.hugeBytesWritten < behaviour.bytes : true;
    expect(cutShort).toBe(true);
    // Until the next attempt is due, refused at once; then fetched again.
    server.behave({ kind: 'serve', body: jwks(rsa) });
    expect((await get(gw, '/api', bearer(await good()))).status).toBe(503);
    now += 10_000;
    expect((await get(gw, '/api', bearer(await good()))).status).toBe(200);
  });

  it('refuses a server whose certificate the configured CA did not sign', async () => {
    server.behave({ kind: 'serve', body: jwks(rsa) });
    const other = issueTestCertificate({ commonName: 'Other CA', ca: true });
    const caFile = await tempFile('other.pem', other.cert);
    const gw = await gateway({ providers: [provider({ jwks: { remote: { host: server.address, path: '/keys', tls: { caFile, hostname: 'jwks.test' } } } })] });
    const r = await get(gw, '/api', bearer(await good()));
    expect(r.status).toBe(503);
    expect(await metric(gw, 'tollgate_jwks_fetches_total', { result: 'unreachable' })).toBe(1);
  });
});

describe('what an operator sees', () => {
  it('the trace shows the consumer and the check\'s outcome, never the token; no log line (at trace level) and no /config_dump holds it', async () => {
    const gw = await gateway({ providers: [provider({ tokenFrom: [{ type: 'Bearer' }, { type: 'Header', name: 'x-my-token' }, { type: 'Query', name: 'my_token' }] })] }, { logLevel: 'trace' });
    const tokens = [await good(), await good(forger), await good(rsa, { sub: 'carol' }), await good(rsa, { sub: 'dave' })];
    const requests: Record<string, string>[] = [bearer(tokens[0]!), bearer(tokens[1]!), { 'x-my-token': tokens[2]! }, {}];
    const traced: unknown[] = [];
    for (const [i, headers] of requests.entries()) {
      // A session traces the next request.
      const trace = await openTrace(gw.adminUrl);
      await trace.armed;
      const r = await get(gw, i === 3 ? `/api?my_token=${tokens[3]!}` : '/api', headers);
      expect(r.status).toBe(i === 1 ? 401 : 200);
      traced.push(await trace.events);
    }
    const events = JSON.stringify(traced);
    // What the trace does show: the consumer and the check's outcome.
    const auths = (traced as TraceEvent[][]).map((evs) => evs.map((e) => (e.message.type === 'requestSnapshot' && e.message.stage === 'route policies' ? e.message.requestState.auth : undefined)).find(Boolean));
    expect(auths[0]).toEqual({ consumer: { name: 'alice', group: 'red', via: 'jwt', credentialId: 'corp' }, checks: [{ kind: 'jwt', result: 'allow', reason: 'allowed', note: 'provider corp' }] });
    expect(auths[1]).toMatchObject({ consumer: null, checks: [{ kind: 'jwt', result: 'deny', reason: 'bad_signature' }] });
    expect(auths[2]).toMatchObject({ consumer: { name: 'carol' } });
    const dump = await (await fetch(`${gw.adminUrl}/config_dump`)).text();
    const logs = JSON.stringify(gw.logs.lines);
    for (const t of tokens) {
      const signature = t.split('.')[2]!;
      expect(logs).not.toContain(signature);
      expect(dump).not.toContain(signature);
      expect(events).not.toContain(signature);
    }
  });
});

describe('claims an authorization rule sees', () => {
  it('keeps at most MAX_CONSUMER_CLAIMS claims of at most MAX_CLAIM_LENGTH characters; others are left out, not cut', () => {
    const payload: Record<string, unknown> = { big: 'x'.repeat(MAX_CLAIM_LENGTH + 1), list: [1, 2], n: 3 };
    for (let i = 0; i < MAX_CONSUMER_CLAIMS + 5; i++) payload[`c${i}`] = `v${i}`;
    const { claims, dropped } = boundedClaims(payload);
    expect(claims.big).toBeUndefined();
    expect(claims.list).toBe('[1,2]');
    expect(claims.n).toBe('3');
    expect(Object.keys(claims)).toHaveLength(MAX_CONSUMER_CLAIMS);
    expect(dropped).toBe(1 + 5 + 2);
  });
});

describe('examples/auth-jwt.yaml', () => {
  it('loads: its providers become the listener\'s and the route\'s jwt policies', async () => {
    const loaded = await loadConfigFile(fileURLToPath(new URL('../../../examples/auth-jwt.yaml', import.meta.url)));
    const listener = loaded.snapshot.binds[0]!.listeners[0]!;
    expect(listener.policy!.jwt!.providers.map((p) => [p.name, p.keys.kind])).toEqual([
      ['corp', 'remote'],
      ['ci', 'static'],
    ]);
    expect(listener.routes[1]!.policy!.jwt).toMatchObject({ mode: 'Optional', providers: [{ name: 'corp-web', tokenFrom: [{ type: 'Cookie', name: 'session' }, { type: 'Header', name: 'x-portal-token', prefix: 'Token ' }] }] });
  });
});
