// basicAuth end to end over real sockets: htpasswd lines made by htpasswd and openssl passwd
// (bcrypt, apr1, SHA-512-crypt, SHA-256-crypt), verified on worker threads; 401 with a Basic
// challenge for missing, malformed and wrong credentials; verified credentials cached (and a
// changed password or a removed user not); a stream of wrong guesses that fills the workers'
// queue is answered 503 busy while other traffic and cached credentials are served; an
// htpasswd with refused hashes names the line and never the hash.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { until } from '@tollgate/testkit';
import { loadConfigFile } from '../src/config/load-file.js';
import { beforeAll, describe, expect, it } from 'vitest';
import { closedAfterEach, send, simpleConfig, startGateway, startUpstream, type TestGateway, type Upstream } from './helpers.js';
import { metricValue, replaceNamedFile } from './support/gateway-files.js';
import { rawRequest } from './support/raw-http.js';

// Made here with `htpasswd -nbB -C 5`, `htpasswd -nbm`, `openssl passwd -6` and `openssl passwd -5`.
const ALICE = { user: 'alice', password: 's3cret:with:colons', line: 'alice:$2y$05$UoN.uiu24LIFj9tiYO5WzOYkW4516R/9BVBvZ5LwkU11byXUSofqC' };
const BOB = { user: 'bob', password: 'hunter2', line: 'bob:$apr1$vuDxNBQl$YvE3CPwVkyrC.Ea.jLi871' };
const UNICODE = { user: 'üser', password: 'pässwörd', line: 'üser:$6$Zx9.ab/c$NNVmeaY3JLpA/BNX/3RbHajyMoeQhYzNcl1e0UI2svWAPpA.gEc2Vzvp0bmGzCbN/B5kzIezpmLXQ8Txtqxwl1' };
const CAROL = { user: 'carol', password: 'c@rol pass', line: 'carol:$5$rounds=5000$carolsalt$8exD5ElehuN6H5XGuilgnJBBq3IlbMuXTBtedWJp9D5' };
const HTPASSWD = ['# team accounts', ALICE.line, '', BOB.line, UNICODE.line, CAROL.line, ''].join('\n');

const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`, 'utf8').toString('base64')}`;

const cleanups = closedAfterEach();
let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tollgate-htpasswd-'));
  return () => rm(dir, { recursive: true, force: true });
});

let n = 0;
async function setup(htpasswd: string, options: { realm?: string; settings?: Record<string, unknown> } = {}): Promise<{ gw: TestGateway; up: Upstream; file: string }> {
  const file = join(dir, `htpasswd-${n++}`);
  await writeFile(file, htpasswd);
  const up = await startUpstream();
  cleanups.push(() => up.close());
  const basicAuth = { htpasswd: { file }, ...(options.realm ? { realm: options.realm } : {}) };
  const routes = [
    { name: 'private', matches: [{ path: { value: '/private' } }], policies: { traffic: { basicAuth } }, backends: [{ host: up.host }] },
    { name: 'open', matches: [{ path: { value: '/open' } }], backends: [{ host: up.host }] },
  ];
  const gw = await startGateway((port) => ({ ...(options.settings ? { config: options.settings } : {}), ...simpleConfig(port, routes) }));
  cleanups.push(() => gw.close());
  return { gw, up, file };
}

const get = (gw: TestGateway, authorization?: string, path = '/private') => send(`${gw.url}${path}`, { headers: authorization === undefined ? {} : { authorization } });



describe('basicAuth: credentials', () => {
  it('admits users of every accepted scheme, ":" in a password and a non-ASCII user; the backend gets no Authorization', async () => {
    const { gw, up } = await setup(HTPASSWD);
    for (const u of [ALICE, BOB, UNICODE, CAROL]) {
      const r = await get(gw, basic(u.user, u.password));
      expect(r.status, u.user).toBe(200);
      const raw = up.requests.at(-1)!.rawHeaders;
      expect(raw.some((h, i) => i % 2 === 0 && h.toLowerCase() === 'authorization')).toBe(false);
    }
    // The scheme name in any case.
    expect((await rawRequest(gw.port, '/private', [['Authorization', basic(BOB.user, BOB.password).replace('Basic', 'bASIC')]])).status).toBe(200);
  });

  it('refuses missing, unknown and wrong credentials with 401 and a Basic challenge, without calling the backend', async () => {
    const { gw, up } = await setup(HTPASSWD, { realm: 'Team API' });
    const none = await get(gw);
    expect(none.status).toBe(401);
    expect(none.headers['www-authenticate']).toBe('Basic realm="Team API", charset="UTF-8"');
    expect(none.headers['x-tollgate-error']).toBe('TG_UNAUTHENTICATED');
    const wrong = await get(gw, basic(ALICE.user, 's3cret'));
    expect(wrong.status).toBe(401);
    expect(wrong.body).toContain('the user name or password is not valid');
    const unknown = await get(gw, basic('mallory', ALICE.password));
    expect(unknown.status).toBe(401);
    expect(unknown.body).toBe(wrong.body);
    // The user name is compared as sent: another case is another user.
    expect((await get(gw, basic('ALICE', ALICE.password))).status).toBe(401);
    expect(up.requests).toHaveLength(0);
    expect(await metricValue(gw, 'tollgate_auth_decisions_total{kind="basicAuth",result="deny",reason="wrong_password"}')).toBe(1);
    expect(await metricValue(gw, 'tollgate_auth_decisions_total{kind="basicAuth",result="deny",reason="unknown_user"}')).toBe(2);
    expect(await metricValue(gw, 'tollgate_auth_decisions_total{kind="basicAuth",result="deny",reason="missing"}')).toBe(1);
  });

  it('refuses malformed credentials, saying what is wrong', async () => {
    const { gw, up } = await setup(HTPASSWD);
    const cases: [string, string][] = [
      ['Basic', 'says Basic but carries no credentials'],
      ['Basic !!!!', 'not base64'],
      ['Basic YWxpY2U6czNjcmV0MQ', 'not base64'], // unpadded
      [`Basic ${Buffer.from('alice-no-colon').toString('base64')}`, 'no ":" between user and password'],
      [`Basic ${Buffer.from([0x61, 0x3a, 0xff, 0xfe]).toString('base64')}`, 'not UTF-8'],
      [`Basic ${'QUFB'.repeat(1100)}`, 'longer than 4096 characters'],
      [`Bearer ${'x'.repeat(20)}`, 'holds another scheme'],
    ];
    for (const [value, why] of cases) {
      const r = await rawRequest(gw.port, '/private', [['Authorization', value]]);
      expect(r.status, value.slice(0, 40)).toBe(401);
      expect(r.body).toContain(why);
      expect(r.headers['www-authenticate']).toBe('Basic realm="tollgate", charset="UTF-8"');
    }
    const twice = await rawRequest(gw.port, '/private', [['Authorization', basic(ALICE.user, ALICE.password)], ['Authorization', basic(BOB.user, BOB.password)]]);
    expect(twice.status).toBe(401);
    expect(twice.body).toContain('the Authorization header is sent 2 times');
    const huge = await rawRequest(gw.port, '/private', [['Authorization', `Basic ${'QUFB'.repeat(5000)}`]]);
    expect(huge.status).toBe(431);
    expect(up.requests).toHaveLength(0);
    expect((await get(gw, basic(ALICE.user, ALICE.password))).status).toBe(200);
  });
});

describe('basicAuth: verified credentials are cached', () => {
  it('verifies a credential once; a wrong password is never remembered; a changed password or a removed user takes effect at the reload', async () => {
    const { gw, file } = await setup(HTPASSWD);
    expect((await get(gw, basic(ALICE.user, ALICE.password))).status).toBe(200);
    expect((await get(gw, basic(ALICE.user, ALICE.password))).status).toBe(200);
    expect(await metricValue(gw, 'tollgate_auth_password_checks_total{result="match"}')).toBe(1);
    expect(await metricValue(gw, 'tollgate_auth_password_checks_total{result="cached"}')).toBe(1);
    expect((await get(gw, basic(BOB.user, 'guess'))).status).toBe(401);
    expect((await get(gw, basic(BOB.user, 'guess'))).status).toBe(401);
    expect(await metricValue(gw, 'tollgate_auth_password_checks_total{result="mismatch"}')).toBe(2);
    // alice's password changes (htpasswd -nbm alice 'new pass'), bob is removed.
    const changed = [ALICE.line.replace(/:.*/, ':$apr1$OnRjpqWC$HLCcAV/HZpUFCSdKlKOJ..'), UNICODE.line].join('\n');
    expect(await replaceNamedFile(gw, file, changed)).toBe('reloaded');
    expect((await get(gw, basic(ALICE.user, ALICE.password))).status).toBe(401);
    expect((await get(gw, basic(ALICE.user, 'new pass'))).status).toBe(200);
    expect((await get(gw, basic(BOB.user, BOB.password))).status).toBe(401);
    expect((await get(gw, basic(UNICODE.user, UNICODE.password))).status).toBe(200);
  });
});

describe('basicAuth: a stream of wrong guesses', () => {
  it('fills the queue and gets 503 busy, while other routes and cached credentials are served', async () => {
    const { gw, up } = await setup(HTPASSWD, { settings: { basicAuth: { workers: 1, maxQueue: 4 } } });
    expect((await get(gw, basic(ALICE.user, ALICE.password))).status).toBe(200);
    const pool = gw.gateway.runtime.passwords.pool;
    const release = pool.hold();
    const settled: number[] = [];
    const guesses = [1, 2, 3, 4].map((i) => get(gw, basic(BOB.user, `guess-${i}`)).then((r) => (settled.push(i), r)));
    await until(() => pool.queued === 4, { what: 'four guesses queued' });
    const refused = await get(gw, basic(BOB.user, 'guess-5'));
    expect(refused.status).toBe(503);
    expect(refused.headers['x-tollgate-error']).toBe('TG_AUTH_BUSY');
    expect(refused.headers['retry-after']).toBe('1');
    const before = up.requests.length;
    expect((await get(gw, undefined, '/open')).status).toBe(200);
    expect((await get(gw, basic(ALICE.user, ALICE.password))).status).toBe(200);
    expect(up.requests.length).toBe(before + 2);
    expect(settled).toEqual([]);
    release();
    expect((await Promise.all(guesses)).map((r) => r.status)).toEqual([401, 401, 401, 401]);
    expect(await metricValue(gw, 'tollgate_auth_password_checks_total{result="busy"}')).toBe(1);
    expect(await metricValue(gw, 'tollgate_auth_decisions_total{kind="basicAuth",result="deny",reason="busy"}')).toBe(1);
    // The settings in force are shown.
    const dump = (await (await fetch(`${gw.adminUrl}/config_dump`)).json()) as { settings: { basicAuth: unknown } };
    expect(dump.settings.basicAuth).toEqual({ workers: 1, maxQueue: 4, cacheEntries: 10_000 });
  });
});

describe('basicAuth: refused htpasswd content', () => {
  it('names the line of each refused hash and never prints a hash', async () => {
    const lines = [ALICE.line, 'old:{SHA}EfatjsUqKYSrqv18O1FlA3hcIHI=', 'des:uerFDTjwZy.c6', 'plain:Pl4inTextPw', 'md5:$1$abc$OGyl6dDvZCDiGmIVbeuCq/', 'alice:$apr1$vuDxNBQl$YvE3CPwVkyrC.Ea.jLi871'].join('\n');
    const err = await setup(lines).then(
      () => null,
      (e: Error) => e,
    );
    expect(err).not.toBeNull();
    const text = err!.message;
    expect(text).toMatch(/line 2: user "old": \{SHA\} is unsalted SHA-1/);
    expect(text).toMatch(/line 3: user "des": crypt\(3\) DES/);
    expect(text).toMatch(/line 4: user "plain": is not a password hash \(plain text is not accepted\)/);
    expect(text).toMatch(/line 5: user "md5": MD5-crypt \(\$1\$\) is not accepted/);
    expect(text).toMatch(/line 6: user "alice" is also on line 1/);
    for (const secret of ['EfatjsUqKYSrqv18O1FlA3hcIHI', 'uerFDTjwZy', 'Pl4inTextPw', 'OGyl6dDvZCDiGmIVbeuCq', 'YvE3CPwVkyrC']) expect(text).not.toContain(secret);
  });

  it('keeps hashes out of config_dump and logs', async () => {
    const { gw } = await setup(HTPASSWD, { settings: { logLevel: 'trace' } });
    expect((await get(gw, basic(ALICE.user, 'nope'))).status).toBe(401);
    const dump = await (await fetch(`${gw.adminUrl}/config_dump`)).text();
    // Summarized: where the users come from and how many, never their hashes.
    expect(dump).toMatch(/"basicAuth": \{[^}]*"users": 4/);
    for (const u of [ALICE, BOB, UNICODE, CAROL]) {
      const hash = u.line.slice(u.line.indexOf(':') + 1);
      expect(dump).not.toContain(hash);
      expect(JSON.stringify(gw.logs.lines)).not.toContain(hash);
    }
    expect(JSON.stringify(gw.logs.lines)).not.toContain('nope');
  });
});

describe('examples/auth-basic.yaml', () => {
  it('loads with its htpasswd file and the password settings', async () => {
    const loaded = await loadConfigFile(fileURLToPath(new URL('../../../examples/auth-basic.yaml', import.meta.url)));
    const basicAuth = loaded.snapshot.binds[0]!.listeners[0]!.routes[0]!.policy!.basicAuth!;
    expect(basicAuth.realm).toBe('Tollgate example');
    expect(basicAuth.users.map((u) => [u.user, u.scheme])).toEqual([
      ['alice', 'bcrypt'],
      ['bob', 'apr1'],
    ]);
    expect(loaded.config.config?.basicAuth).toEqual({ workers: 1, maxQueue: 256, cacheEntries: 10_000 });
  });
});
