// apiKey end to end over real sockets: keys of a standalone key file, read from the places a
// policy names (and only those), refused when missing, unknown, malformed or sent twice, taken
// out of the request before the backend sees it; a key revoked by editing the file is refused
// once the proxy has reloaded (its reload event, no timer); no key in config_dump, logs or
// traces.
import { createHash } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { beforeAll, describe, expect, it } from 'vitest';
import { fileURLToPath } from 'node:url';
import { compileApiKey } from '../src/auth/api-key.js';
import type { AuthRequest } from '../src/auth/types.js';
import { loadConfigFile } from '../src/config/load-file.js';
import { deferred, until } from '@tollgate/testkit';
import { closedAfterEach, openTrace, send, simpleConfig, startGateway, startUpstream, type Handler, type TestGateway, type Upstream } from './helpers.js';
import { metricValue, replaceNamedFile } from './support/gateway-files.js';
import { rawRequest } from './support/raw-http.js';

const KEY_A = 'sk-team-a-0123456789abcdef';
const KEY_A2 = 'sk-team-a-rotated-fedcba987654';
const KEY_B = 'sk-team-b-ZYXWVUTSRQPONMLK';
const ID_A = createHash('sha256').update(KEY_A).digest('hex').slice(0, 8);

const cleanups = closedAfterEach();
let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tollgate-keys-'));
  return () => rm(dir, { recursive: true, force: true });
});

interface Setup {
  readonly gw: TestGateway;
  readonly up: Upstream;
  readonly keys: string;
}

let n = 0;
async function setup(entries: unknown, apiKey: Record<string, unknown> = {}, extra: Record<string, unknown> = {}, handler?: Handler): Promise<Setup> {
  const keys = join(dir, `keys-${n++}.yaml`);
  await writeFile(keys, typeof entries === 'string' ? entries : stringify(entries));
  const up = await startUpstream(handler);
  cleanups.push(() => up.close());
  const routes = [
    { name: 'api', matches: [{ path: { value: '/v1' } }], policies: { traffic: { apiKey: { file: keys, ...apiKey } } }, backends: [{ host: up.host }] },
    { name: 'open', matches: [{ path: { value: '/open' } }], backends: [{ host: up.host }] },
  ];
  const gw = await startGateway((port) => ({ ...extra, ...simpleConfig(port, routes) }));
  cleanups.push(() => gw.close());
  return { gw, up, keys };
}

const TEAMS = [
  { key: KEY_A, consumer: 'team-a', group: 'a', labels: { tier: 'gold' } },
  { key: KEY_A2, consumer: 'team-a', group: 'a' },
  { key: KEY_B, consumer: 'team-b' },
];

/** The raw headers the backend got with its last request, names in lower case. */
function lastUpstreamHeaders(up: Upstream): [string, string][] {
  const raw = up.requests.at(-1)!.rawHeaders;
  const out: [string, string][] = [];
  for (let i = 0; i < raw.length; i += 2) out.push([raw[i]!.toLowerCase(), raw[i + 1]!]);
  return out;
}



describe('apiKey: known keys', () => {
  it('admits a key from Authorization: Bearer or x-api-key, and the backend never sees it', async () => {
    const { gw, up } = await setup(TEAMS);
    const viaBearer = await send(`${gw.url}/v1/models`, { headers: { authorization: `Bearer ${KEY_A}`, 'x-other': 'kept' } });
    expect(viaBearer.status).toBe(200);
    let seen = lastUpstreamHeaders(up);
    expect(seen.some(([n]) => n === 'authorization')).toBe(false);
    expect(seen).toContainEqual(['x-other', 'kept']);
    const viaHeader = await send(`${gw.url}/v1/models`, { headers: { 'x-api-key': KEY_B } });
    expect(viaHeader.status).toBe(200);
    seen = lastUpstreamHeaders(up);
    expect(seen.some(([n]) => n === 'x-api-key')).toBe(false);
    // A consumer with two keys (a rotation): both work.
    expect((await send(`${gw.url}/v1/models`, { headers: { authorization: `Bearer ${KEY_A2}` } })).status).toBe(200);
    expect(await metricValue(gw, 'tollgate_auth_decisions_total{kind="apiKey",result="allow",reason="allowed"}')).toBe(3);
    // A route without the policy is not affected.
    expect((await send(`${gw.url}/open`)).status).toBe(200);
  });

  it('refuses a missing or unknown key with 401, a Bearer challenge and the reason, without calling the backend', async () => {
    const { gw, up } = await setup(TEAMS);
    const none = await send(`${gw.url}/v1/models`);
    expect(none.status).toBe(401);
    expect(none.headers['x-tollgate-error']).toBe('TG_UNAUTHENTICATED');
    expect(none.headers['www-authenticate']).toBe('Bearer realm="tollgate"');
    expect(none.body).toContain('no API key; send it in one of: Authorization: Bearer, header x-api-key');
    const wrong = await send(`${gw.url}/v1/models`, { headers: { authorization: 'Bearer sk-not-a-key-of-anyone' } });
    expect(wrong.status).toBe(401);
    expect(wrong.headers['www-authenticate']).toBe('Bearer realm="tollgate", error="invalid_token"');
    expect(wrong.body).toContain('the API key is not valid');
    expect(wrong.body).not.toContain('sk-not-a-key-of-anyone');
    // Too short or too long to be a key: refused the same way.
    expect((await send(`${gw.url}/v1/models`, { headers: { 'x-api-key': 'short' } })).status).toBe(401);
    expect((await send(`${gw.url}/v1/models`, { headers: { 'x-api-key': 'k'.repeat(600) } })).status).toBe(401);
    expect(up.requests).toHaveLength(0);
    expect(await metricValue(gw, 'tollgate_auth_decisions_total{kind="apiKey",result="deny",reason="missing"}')).toBe(1);
    expect(await metricValue(gw, 'tollgate_auth_decisions_total{kind="apiKey",result="deny",reason="unknown_key"}')).toBe(3);
  });
});

describe('apiKey: keys in odd places and odd spellings', () => {
  it('reads the Bearer scheme case-insensitively and with extra spaces, header names in any case', async () => {
    const { gw } = await setup(TEAMS);
    for (const value of [`bearer ${KEY_A}`, `BEARER ${KEY_A}`, `Bearer    ${KEY_A}`, `Bearer\t${KEY_A}  `]) {
      expect((await rawRequest(gw.port, '/v1/x', [['Authorization', value]])).status, value).toBe(200);
    }
    expect((await rawRequest(gw.port, '/v1/x', [['X-API-KEY', KEY_B]])).status).toBe(200);
  });

  it('refuses an empty Bearer, a Bearer with spaces inside, and another scheme as no key', async () => {
    const { gw, up } = await setup(TEAMS);
    const empty = await rawRequest(gw.port, '/v1/x', [['Authorization', 'Bearer']]);
    expect(empty.status).toBe(401);
    expect(empty.body).toContain('says Bearer but carries no credential');
    expect(empty.headers['www-authenticate']).toBe('Bearer realm="tollgate", error="invalid_request"');
    const spaced = await rawRequest(gw.port, '/v1/x', [['Authorization', `Bearer ${KEY_A} extra`]]);
    expect(spaced.status).toBe(401);
    expect(spaced.body).toContain('whitespace');
    const basic = await rawRequest(gw.port, '/v1/x', [['Authorization', `Basic ${Buffer.from(`a:${KEY_A}`).toString('base64')}`]]);
    expect(basic.status).toBe(401);
    expect(basic.body).toContain('no API key');
    const blankHeader = await rawRequest(gw.port, '/v1/x', [['x-api-key', '']]);
    expect(blankHeader.status).toBe(401);
    expect(blankHeader.body).toContain('the x-api-key header is empty');
    expect(up.requests).toHaveLength(0);
  });

  it('refuses a request carrying a key twice: two places, two Authorization headers, a header repeated', async () => {
    const { gw, up } = await setup(TEAMS);
    const both = await rawRequest(gw.port, '/v1/x', [['Authorization', `Bearer ${KEY_A}`], ['x-api-key', KEY_A]]);
    expect(both.status).toBe(401);
    expect(both.body).toContain('credentials in two places (Authorization: Bearer and header x-api-key); send one');
    const twoAuth = await rawRequest(gw.port, '/v1/x', [['Authorization', `Bearer ${KEY_A}`], ['Authorization', `Bearer ${KEY_B}`]]);
    expect(twoAuth.status).toBe(401);
    expect(twoAuth.body).toContain('the Authorization header is sent 2 times');
    const twoHeaders = await rawRequest(gw.port, '/v1/x', [['x-api-key', KEY_A], ['X-Api-Key', KEY_A]]);
    expect(twoHeaders.status).toBe(401);
    expect(twoHeaders.body).toContain('the x-api-key header is sent 2 times');
    expect(up.requests).toHaveLength(0);
    expect(await metricValue(gw, 'tollgate_auth_decisions_total{kind="apiKey",result="deny",reason="ambiguous"}')).toBe(3);
  });

  it('ignores a key in the query when the policy does not read the query', async () => {
    const { gw, up } = await setup(TEAMS);
    const r = await send(`${gw.url}/v1/x?api_key=${KEY_A}&key=${KEY_A}`);
    expect(r.status).toBe(401);
    expect(r.body).toContain('no API key');
    expect(up.requests).toHaveLength(0);
  });

  it('reads a named query parameter and cookie when asked to, and forwards the rest untouched', async () => {
    const { gw, up } = await setup(TEAMS, { keyFrom: [{ type: 'Query', name: 'team_key' }, { type: 'Cookie', name: 'tg_key' }] });
    const q = await send(`${gw.url}/v1/x?a=1&team_key=${encodeURIComponent(KEY_A)}&b=%20two`);
    expect(q.status).toBe(200);
    expect(up.requests.at(-1)!.url).toBe('/v1/x?a=1&b=%20two');
    const c = await send(`${gw.url}/v1/x`, { headers: { cookie: `session=s1; tg_key=${KEY_B}; theme=dark` } });
    expect(c.status).toBe(200);
    expect(lastUpstreamHeaders(up)).toContainEqual(['cookie', 'session=s1; theme=dark']);
    const only = await send(`${gw.url}/v1/x`, { headers: { cookie: `tg_key="${KEY_B}"` } });
    expect(only.status).toBe(200);
    expect(lastUpstreamHeaders(up).some(([n]) => n === 'cookie')).toBe(false);
    // Bearer is not among the places here: an Authorization header is not a key, and is forwarded.
    expect((await send(`${gw.url}/v1/x`, { headers: { authorization: `Bearer ${KEY_A}` } })).headers['www-authenticate']).toBe('ApiKey realm="tollgate"');
    expect((await send(`${gw.url}/v1/x?team_key=%zz`)).body).toContain('malformed percent escape');
    expect((await send(`${gw.url}/v1/x?team_key=${KEY_A}&team_key=${KEY_A}`)).body).toContain('the query parameter team_key is sent 2 times');
    expect((await send(`${gw.url}/v1/x?team_key=${KEY_A}`, { headers: { cookie: `tg_key=${KEY_A}` } })).body).toContain('credentials in two places (query parameter team_key and cookie tg_key)');
  });

  it('answers an oversized header with 431 and keeps serving', async () => {
    const { gw } = await setup(TEAMS);
    const huge = await rawRequest(gw.port, '/v1/x', [['Authorization', `Bearer ${'k'.repeat(20_000)}`]]);
    expect(huge.status).toBe(431);
    expect((await send(`${gw.url}/v1/x`, { headers: { authorization: `Bearer ${KEY_A}` } })).status).toBe(200);
  });
});

describe('apiKey: the key file', () => {
  it('applies an edit of the key file without a restart: a revoked key is refused, a new one admitted', async () => {
    const { gw, keys } = await setup(TEAMS);
    expect((await send(`${gw.url}/v1/x`, { headers: { authorization: `Bearer ${KEY_B}` } })).status).toBe(200);
    const KEY_C = 'sk-team-c-added-after-start';
    expect(await replaceNamedFile(gw, keys, stringify([TEAMS[0], { key: KEY_C, consumer: 'team-c' }]))).toBe('reloaded');
    expect((await send(`${gw.url}/v1/x`, { headers: { authorization: `Bearer ${KEY_B}` } })).status).toBe(401);
    expect((await send(`${gw.url}/v1/x`, { headers: { authorization: `Bearer ${KEY_C}` } })).status).toBe(200);
    expect((await send(`${gw.url}/v1/x`, { headers: { authorization: `Bearer ${KEY_A}` } })).status).toBe(200);
  });

  it('refuses a bad edit naming the entry, never the key, and keeps the keys it had', async () => {
    const { gw, keys } = await setup(TEAMS);
    const dup = stringify([TEAMS[0], { key: 'sk-fresh-key-12345', consumer: 'x' }, { key: KEY_A, consumer: 'copy' }]);
    expect(await replaceNamedFile(gw, keys, dup)).toBe('refused');
    const line = gw.logs.messages().find((m) => m.startsWith('config reload refused'))!;
    expect(line).toContain(`file ${keys} entry 2: key is the same as the key of file ${keys} entry 0`);
    expect(line).not.toContain(KEY_A);
    expect((await send(`${gw.url}/v1/x`, { headers: { authorization: `Bearer ${KEY_B}` } })).status).toBe(200);
    expect((await send(`${gw.url}/v1/x`, { headers: { authorization: 'Bearer sk-fresh-key-12345' } })).status).toBe(401);
  });

  it('refuses to start on a key file that does not hold a list of keys', async () => {
    await expect(setup({ key: KEY_A, consumer: 'a' })).rejects.toThrow(/holds object; expected a list of \{key, consumer, group, labels\}/);
    await expect(setup([{ key: 12345678, consumer: 'a' }])).rejects.toThrow(/entry 0: key is a number; write it as a string/);
  });
});

describe('apiKey: the key is never shown', () => {
  it('config_dump shows each key as its digest prefix; logs and traces never hold the key', async () => {
    const { gw } = await setup(TEAMS, { keyFrom: [{ type: 'Header', name: 'x-team-key' }, { type: 'Query', name: 'team_key' }] }, { config: { logLevel: 'trace' } });
    const dump = await (await fetch(`${gw.adminUrl}/config_dump`)).text();
    const digest = createHash('sha256').update(KEY_A).digest('hex');
    expect(dump).toContain(`"id": "${ID_A}"`);
    expect(dump).toContain('"consumer": "team-a"');
    expect(dump).not.toContain(KEY_A);
    expect(dump).not.toContain(digest);
    const trace = await openTrace(gw.adminUrl);
    await trace.armed;
    expect((await send(`${gw.url}/v1/x?team_key=${KEY_B}`, { headers: { 'x-team-key': KEY_A } })).status).toBe(401);
    expect((await send(`${gw.url}/v1/x`, { headers: { 'x-team-key': KEY_A } })).status).toBe(200);
    const events = JSON.stringify(await trace.events);
    expect(events).toContain('x-team-key');
    expect(events).not.toContain(KEY_A);
    expect(events).not.toContain(KEY_B);
    const logs = JSON.stringify(gw.logs.lines);
    expect(logs).not.toContain(KEY_A);
    expect(logs).not.toContain(KEY_B);
  });

  it('/debug/tasks shows a request in flight without the key of its query', async () => {
    const release = deferred<void>();
    const { gw } = await setup(TEAMS, { keyFrom: [{ type: 'Query', name: 'team_key' }] }, {}, (_req, res) => void release.promise.then(() => res.end('ok')));
    const inflight = send(`${gw.url}/v1/x?team_key=${KEY_A}&page=2`);
    const tasks = await until(async () => {
      const t = (await (await fetch(`${gw.adminUrl}/debug/tasks`)).json()) as { requests: { url: string }[] };
      return t.requests.length ? t : null;
    });
    expect(tasks.requests[0]!.url).toBe('/v1/x?team_key=[redacted]&page=2');
    release.resolve();
    expect((await inflight).status).toBe(200);
  });
});

describe('examples/auth-api-key.yaml', () => {
  it('loads with its key file: three keys of two consumers at the Gateway level, a cookie on the dashboard route', async () => {
    const loaded = await loadConfigFile(fileURLToPath(new URL('../../../examples/auth-api-key.yaml', import.meta.url)));
    const listener = loaded.snapshot.binds[0]!.listeners[0]!;
    expect(listener.policy!.apiKey!.consumers.map((c) => c.consumer)).toEqual(['team-a', 'team-a', 'team-b']);
    expect(listener.routes.find((r) => r.name === 'main/dashboard')!.policy!.apiKey!.keyFrom).toEqual([{ type: 'Header', name: 'x-api-key' }, { type: 'Cookie', name: 'tollgate_key' }]);
    expect(loaded.namedFiles.some((f) => f.endsWith('examples/auth-api-keys.yaml'))).toBe(true);
  });
});

describe('apiKey: the consumer', () => {
  it('is the key entry\'s consumer, group and labels, identified by the digest prefix, never the key', async () => {
    const loaded = await loadConfigFile(fileURLToPath(new URL('../../../examples/auth-api-key.yaml', import.meta.url)));
    const check = compileApiKey(loaded.snapshot.binds[0]!.listeners[0]!.policy!.apiKey!);
    const req = (rawHeaders: string[]): AuthRequest => ({ method: 'GET', path: '/', query: '', host: 'h', authority: 'h', scheme: 'http', headers: {}, rawHeaders, sourceAddress: '127.0.0.1', sourcePort: 1, consumer: null, model: null, body: null, bodyTooLarge: false });
    const verdict = await check.run(req(['x-api-key', 'sk-example-team-a-0002']));
    const id = createHash('sha256').update('sk-example-team-a-0002').digest('hex').slice(0, 8);
    expect(verdict).toEqual({ ok: true, consumer: { name: 'team-a', group: 'research', labels: { tier: 'gold' }, claims: null, via: 'apiKey', credentialId: id }, removeHeaders: ['x-api-key'], note: `key ${id} of team-a` });
    expect(JSON.stringify(verdict)).not.toContain('sk-example');
  });
});
