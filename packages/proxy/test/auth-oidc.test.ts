// oidc end to end over real sockets: a standalone proxy logging people in at Dex (a real OpenID
// provider, built by the test-tools install), the login driven through Dex's own pages by an
// HTTP client that follows the redirects and posts the password form; the session cookie then
// reaches mock-llm and an echo backend, the ID token's claims reach authorization rules, the
// session is refreshed with the refresh token and ended by the logout path. Adversarial cases:
// a tampered cookie, a forged state, a replayed code, a provider that hangs and one that answers
// garbage: a clear TG_* answer each, and the proxy keeps serving.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer as createHttpServer, type Server } from 'node:http';
import { createServer as createTcpServer, type Server as TcpServer, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { once } from 'node:events';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { MockLlm } from '@tollgate/mock-llm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CookieSealer } from '../src/auth/oidc-cookie.js';
import { freePort, startGateway, startUpstream, useMockLlm, type TestGateway, type Upstream } from './helpers.js';
import { DEX_USER, dexAvailability, startDex, type Dex } from './support/dex.js';

const dex = dexAvailability();
let llm: MockLlm;
useMockLlm((started) => (llm = started));

const CLIENT = { id: 'tollgate', secret: 'client-secret-for-the-test-0123456789' };
const SESSION_KEY = Buffer.alloc(32, 7).toString('base64');
const SKEW_S = 60;
const ID_TOKEN_S = 3600;

/** Cookies by name, as a browser keeps them for one origin (Max-Age=0 removes). */
class Jar {
  readonly cookies = new Map<string, string>();
  take(res: Response): void {
    for (const line of res.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const eq = pair!.indexOf('=');
      const name = pair!.slice(0, eq).trim();
      if (/max-age=0\b/i.test(line)) this.cookies.delete(name);
      else this.cookies.set(name, pair!.slice(eq + 1).trim());
    }
  }
  header(): string {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }
  copy(): Jar {
    const j = new Jar();
    for (const [k, v] of this.cookies) j.cookies.set(k, v);
    return j;
  }
}

const HTML = { accept: 'text/html,application/xhtml+xml' };

async function get(url: string, jar: Jar | null, headers: Record<string, string> = {}): Promise<Response> {
  const res = await fetch(url, { redirect: 'manual', headers: { ...headers, ...(jar && jar.cookies.size ? { cookie: jar.header() } : {}) } });
  jar?.take(res);
  return res;
}

/**
 * A browser's login at Dex, up to the callback (not followed): the gateway's redirect, Dex's
 * redirects to its password page, the form posted, Dex's redirect back. Returns the callback URL
 * and the gateway's cookies (the login state cookie).
 */
async function loginAtDex(gw: TestGateway, path: string): Promise<{ callback: string; jar: Jar; authorize: URL }> {
  const jar = new Jar();
  const first = await get(`${gw.url}${path}`, jar, HTML);
  expect(first.status).toBe(302);
  const authorize = new URL(first.headers.get('location')!);
  const dexJar = new Jar();
  let url = authorize.href;
  let res = await get(url, dexJar, HTML);
  for (let i = 0; res.status >= 300 && res.status < 400 && i < 10; i++) {
    url = new URL(res.headers.get('location')!, url).href;
    res = await get(url, dexJar, HTML);
  }
  expect(res.status).toBe(200);
  const page = await res.text();
  const action = /<form[^>]*action="([^"]*)"/i.exec(page)?.[1]?.replace(/&amp;/g, '&');
  const target = new URL(action || url, url).href;
  res = await fetch(target, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...(dexJar.cookies.size ? { cookie: dexJar.header() } : {}) },
    body: new URLSearchParams({ login: DEX_USER.email, password: DEX_USER.password }).toString(),
  });
  dexJar.take(res);
  for (let i = 0; i < 10 && res.status >= 300 && res.status < 400; i++) {
    url = new URL(res.headers.get('location')!, target).href;
    if (url.startsWith(gw.url)) return { callback: url, jar, authorize };
    res = await get(url, dexJar, HTML);
  }
  throw new Error(`Dex did not send the browser back (status ${res.status}): ${(await res.text()).slice(0, 300)}`);
}

async function login(gw: TestGateway, path = '/echo/page'): Promise<Jar> {
  const { callback, jar } = await loginAtDex(gw, path);
  const res = await get(callback, jar, HTML);
  expect(res.status, await res.clone().text()).toBe(302);
  expect(res.headers.get('location')).toBe(path);
  return jar;
}

describe.skipIf(!dex.run)('oidc against Dex', () => {
  let provider: Dex;
  let gw: TestGateway;
  let echo: Upstream;
  let dir: string;
  let offsetMs = 0;
  let hung: TcpServer;
  const held: Socket[] = [];
  let garbage: Server;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'tollgate-oidc-'));
    await writeFile(join(dir, 'client-secret'), `${CLIENT.secret}\n`);
    await writeFile(join(dir, 'session-key'), `${SESSION_KEY}\n`);
    echo = await startUpstream();
    // A provider that accepts connections and never answers; one that answers garbage.
    hung = createTcpServer((s) => held.push(s)).listen(0, '127.0.0.1');
    await once(hung, 'listening');
    garbage = createHttpServer((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{"issuer": 42, "not": "discovery"')).listen(0, '127.0.0.1');
    await once(garbage, 'listening');
    const port = await freePort();
    provider = await startDex({ id: CLIENT.id, secret: CLIENT.secret, redirectURIs: [`http://127.0.0.1:${port}/oauth2/callback`, `http://127.0.0.1:${port}/aud/callback`] }, `${ID_TOKEN_S}s`);
    const oidc = (over: Record<string, unknown> = {}) => ({
      issuer: provider.issuer,
      provider: { host: provider.address, timeout: '2s' },
      clientId: CLIENT.id,
      clientSecret: { file: join(dir, 'client-secret') },
      sessionKey: { file: join(dir, 'session-key') },
      scopes: ['openid', 'email', 'profile', 'offline_access'],
      clockSkew: `${SKEW_S}s`,
      ...over,
    });
    const route = (name: string, prefix: string, host: string, traffic?: Record<string, unknown>) => ({
      name,
      matches: [{ path: { type: 'PathPrefix', value: prefix } }],
      ...(traffic ? { policies: { traffic } } : {}),
      backends: [{ host }],
    });
    const llmHost = `127.0.0.1:${llm.port}`;
    gw = await startGateway(
      {
        binds: [
          {
            port,
            listeners: [
              {
                name: 'main',
                protocol: 'HTTP',
                policies: {
                  traffic: {
                    oidc: oidc(),
                    authorization: { rules: [{ name: 'example-people', action: 'Allow', expression: 'consumer.claims["email"].endsWith("@example.com")' }] },
                  },
                },
                routes: [
                  route('echo', '/echo', echo.host),
                  route('llm', '/v1', llmHost),
                  route('admins-only', '/admin', echo.host, { authorization: { rules: [{ name: 'root-only', action: 'Allow', expression: 'consumer.claims["email"] == "root@example.com"' }] } }),
                  route('wrong-audience', '/aud', echo.host, { oidc: oidc({ audiences: ['someone-else'], cookie: { name: 'aud-session' }, redirectPath: '/aud/callback' }) }),
                  route('hung', '/hung', echo.host, { oidc: oidc({ provider: { host: `127.0.0.1:${(hung.address() as AddressInfo).port}`, timeout: '300ms' } }) }),
                  route('garbage', '/garbage', echo.host, { oidc: oidc({ provider: { host: `127.0.0.1:${(garbage.address() as AddressInfo).port}`, timeout: '2s' } }) }),
                  route('budget', '/budget', echo.host, { rateLimit: { local: [{ requests: 1, unit: 'Minutes', by: { type: 'Claim', name: 'email' } }] } }),
                  // The callback and logout paths of the Gateway-level policy are on this route.
                  route('site', '/', echo.host),
                ],
              },
            ],
          },
        ],
      },
      { clock: () => Date.now() + offsetMs },
    );
  }, 60_000);

  afterAll(async () => {
    await gw?.close();
    await provider?.stop();
    await echo?.close();
    for (const s of held) s.destroy();
    hung?.close();
    garbage?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('a browser without a session goes to Dex with PKCE S256, state and nonce; anything else gets 401', async () => {
    const res = await get(`${gw.url}/echo/x?y=1`, new Jar(), HTML);
    expect(res.status).toBe(302);
    expect(res.headers.get('x-tollgate-error')).toBeNull();
    const to = new URL(res.headers.get('location')!);
    expect(`${to.origin}${to.pathname}`).toBe(`${provider.issuer}/auth`);
    expect(to.searchParams.get('code_challenge_method')).toBe('S256');
    expect(to.searchParams.get('code_challenge')).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(to.searchParams.get('state')).toBeTruthy();
    expect(to.searchParams.get('nonce')).toBeTruthy();
    expect(to.searchParams.get('redirect_uri')).toBe(`${gw.url}/oauth2/callback`);
    const state = res.headers.getSetCookie().find((c) => c.startsWith('tollgate-oidc.state='))!;
    expect(state).toMatch(/; Secure; HttpOnly; SameSite=Lax$/);

    const api = await get(`${gw.url}/v1/models`, null, { accept: 'application/json' });
    expect(api.status).toBe(401);
    expect(api.headers.get('x-tollgate-error')).toBe('TG_OIDC_LOGIN_REQUIRED');
    expect(await api.text()).toMatch(/no session cookie/);
  });

  it('logs in through Dex\'s pages; the session reaches mock-llm and the backend without the session cookie; claims reach the rules', async () => {
    const jar = await login(gw);
    const names = [...jar.cookies.keys()];
    expect(names).toContain('tollgate-oidc');
    expect(names).not.toContain('tollgate-oidc.state');

    const models = await get(`${gw.url}/v1/models`, jar, { accept: 'application/json' });
    expect(models.status).toBe(200);
    expect(((await models.json()) as { data: unknown[] }).data.length).toBeGreaterThan(0);

    const echoed = await get(`${gw.url}/echo/hello`, null, { cookie: `${jar.header()}; theme=dark` });
    expect(echoed.status).toBe(200);
    const seen = (await echoed.json()) as { headers: Record<string, string> };
    expect(seen.headers.cookie).toBe('theme=dark');

    // The route's own rule reads the ID token's email claim: this user is not root.
    const admin = await get(`${gw.url}/admin/x`, jar);
    expect(admin.status).toBe(403);
    expect(admin.headers.get('x-tollgate-error')).toBe('TG_FORBIDDEN');

    const dump = await (await fetch(`${gw.adminUrl}/config_dump`)).text();
    expect(dump).toContain('"oidc"');
    expect(dump).not.toContain(CLIENT.secret);
    expect(dump).not.toContain(SESSION_KEY);
    expect(JSON.stringify(gw.logs.lines)).not.toContain(CLIENT.secret);
  }, 30_000);

  it('a tampered, truncated or foreign session cookie is refused and cleared', async () => {
    const jar = await login(gw);
    const value = jar.cookies.get('tollgate-oidc')!;
    const flipped = value.slice(0, 20) + (value[20] === 'A' ? 'B' : 'A') + value.slice(21);
    // AES-GCM encrypts as a stream: flipping a bit of the ciphertext flips that bit of the
    // plaintext. Changing the last digit of the session's end this way gives a value that still
    // parses; only the authentication tag tells it from the real one.
    const plain = JSON.stringify(new CookieSealer(SESSION_KEY).open('tollgate-oidc', value, 20_000));
    const digit = plain.lastIndexOf('}') - 1;
    const raw = Buffer.from(value.slice(3), 'base64url');
    raw[12 + digit]! ^= 1;
    const forged = `v1.${raw.toString('base64url')}`;
    for (const bad of [flipped, forged, value.slice(0, value.length - 10), `v1.${Buffer.alloc(64).toString('base64url')}`, 'x'.repeat(12_000)]) {
      const res = await get(`${gw.url}/v1/models`, null, { cookie: `tollgate-oidc=${bad}` });
      expect(res.status).toBe(401);
      expect(res.headers.get('x-tollgate-error')).toBe('TG_OIDC_LOGIN_REQUIRED');
      expect(await res.text()).toMatch(/session cookie is not valid/);
      expect(res.headers.getSetCookie().some((c) => /^tollgate-oidc=; .*Max-Age=0/.test(c))).toBe(true);
    }
    expect((await get(`${gw.url}/v1/models`, jar)).status).toBe(200);
  }, 30_000);

  it('a callback with another state, or without the login cookie, is refused (400)', async () => {
    const { callback, jar } = await loginAtDex(gw, '/echo/state');
    const forged = new URL(callback);
    forged.searchParams.set('state', 'forged-state');
    const res = await get(forged.href, jar.copy());
    expect(res.status).toBe(400);
    expect(res.headers.get('x-tollgate-error')).toBe('TG_OIDC_CALLBACK_FAILED');
    expect(await res.text()).toMatch(/state is not the login's/);
    const noCookie = await get(callback, new Jar());
    expect(noCookie.status).toBe(400);
    expect(await noCookie.text()).toMatch(/no login cookie/);
  }, 30_000);

  it('an ID token whose nonce is not the login\'s is refused (400)', async () => {
    const { callback, jar } = await loginAtDex(gw, '/echo/nonce');
    // The login cookie is sealed with the session key, which the test knows: the same login
    // (state, PKCE verifier) with another nonce.
    const sealer = new CookieSealer(SESSION_KEY);
    const name = 'tollgate-oidc.state';
    const state = sealer.open(name, jar.cookies.get(name)!, 4096) as Record<string, unknown>;
    expect(state).not.toBeNull();
    jar.cookies.set(name, sealer.seal(name, { ...state, n: 'another-nonce' }));
    const res = await get(callback, jar);
    expect(res.status).toBe(400);
    expect(res.headers.get('x-tollgate-error')).toBe('TG_OIDC_CALLBACK_FAILED');
    expect(await res.text()).toMatch(/nonce is not the login's/);
    expect(jar.cookies.has('tollgate-oidc')).toBe(false);
  }, 30_000);

  it('the ID token\'s claims key a budget: the person\'s second request within the minute is refused', async () => {
    const jar = await login(gw);
    expect((await get(`${gw.url}/budget/a`, jar)).status).toBe(200);
    const second = await get(`${gw.url}/budget/b`, jar);
    expect(second.status).toBe(429);
    const budgets = await (await fetch(`${gw.adminUrl}/budgets`)).text();
    expect(budgets).toContain(DEX_USER.email);
  }, 30_000);

  it('returns to a long path after login; a path over 1024 characters returns to /', async () => {
    const long = `/echo/${'a'.repeat(1000)}?q=${'b'.repeat(10)}`;
    await login(gw, long);
    const { callback, jar } = await loginAtDex(gw, `/echo/${'c'.repeat(1100)}`);
    const res = await get(callback, jar);
    expect(res.status).toBe(302);
    expect(res.headers.get('location')).toBe('/');
  }, 30_000);

  it('a replayed code is refused by Dex: 400, and the first session stays good', async () => {
    const { callback, jar } = await loginAtDex(gw, '/echo/replay');
    const replayJar = jar.copy();
    const first = await get(callback, jar);
    expect(first.status).toBe(302);
    const again = await get(callback, replayJar);
    expect(again.status).toBe(400);
    expect(again.headers.get('x-tollgate-error')).toBe('TG_OIDC_CALLBACK_FAILED');
    expect(await again.text()).toMatch(/refused the grant/);
    expect((await get(`${gw.url}/v1/models`, jar)).status).toBe(200);
  }, 30_000);

  it('an ID token for another audience does not make a session', async () => {
    const { callback, jar } = await loginAtDex(gw, '/aud/x');
    const res = await get(callback, jar);
    expect(res.status).toBe(400);
    expect(await res.text()).toMatch(/aud names none/);
    expect([...jar.cookies.keys()]).not.toContain('aud-session');
  }, 30_000);

  it('refreshes with the refresh token once the ID token has expired', async () => {
    const jar = await login(gw);
    const before = jar.cookies.get('tollgate-oidc');
    // A request with the fresh session: the policy now keeps it as verified, which must not
    // outlive the ID token.
    expect((await get(`${gw.url}/echo/before`, jar)).status).toBe(200);
    expect(jar.cookies.get('tollgate-oidc')).toBe(before);
    // Dex stamps tokens in whole seconds: the refreshed token must be younger than the first
    // one by more than the margins below, so some real time has to pass between the two.
    await new Promise((r) => setTimeout(r, 6_000));
    // Past the first token's exp (+ skew), within the refreshed one's.
    offsetMs = (ID_TOKEN_S + SKEW_S - 3) * 1000;
    try {
      const res = await get(`${gw.url}/echo/after`, jar);
      expect(res.status, await res.clone().text()).toBe(200);
      expect(jar.cookies.get('tollgate-oidc')).not.toBe(before);
      expect((await get(`${gw.url}/echo/again`, jar)).status).toBe(200);
    } finally {
      offsetMs = 0;
    }
  }, 30_000);

  it('logout clears the session cookie and redirects', async () => {
    const jar = await login(gw);
    const res = await get(`${gw.url}/oauth2/logout`, jar, HTML);
    expect(res.status).toBe(302);
    expect(res.headers.getSetCookie().some((c) => /^tollgate-oidc=; .*Max-Age=0/.test(c))).toBe(true);
    expect(jar.cookies.has('tollgate-oidc')).toBe(false);
    const loc = res.headers.get('location')!;
    expect(loc === '/' || loc.startsWith(provider.issuer)).toBe(true);
    expect((await get(`${gw.url}/v1/models`, jar)).status).toBe(401);
  }, 30_000);

  it('a provider that never answers is a 503 within its timeout; one that answers garbage a 502; the proxy keeps serving', async () => {
    const hungRes = await get(`${gw.url}/hung/x`, new Jar(), HTML);
    expect(hungRes.status).toBe(503);
    expect(hungRes.headers.get('x-tollgate-error')).toBe('TG_OIDC_PROVIDER_UNAVAILABLE');
    expect(await hungRes.text()).toMatch(/did not answer/);
    const bad = await get(`${gw.url}/garbage/x`, new Jar(), HTML);
    expect(bad.status).toBe(502);
    expect(bad.headers.get('x-tollgate-error')).toBe('TG_OIDC_PROVIDER_ERROR');
    const jar = await login(gw);
    expect((await get(`${gw.url}/v1/models`, jar)).status).toBe(200);
  }, 30_000);
});
