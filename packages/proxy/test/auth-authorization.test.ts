// Authorization rules end to end over real sockets: Deny before Allow, not_allowed when no
// Allow rule is true, a rule that fails refusing (fail closed) unless another rule decides, a
// model allow-list over the request body (forwarded intact), the consumer's fields empty
// without authentication, route-level rules replacing the Gateway's, an input over its bound
// refused with 431, the snapshot's bounds followed across a reload, bad rules refused naming
// the field, the decisions counted by reason, and the example config.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { DEFAULT_LIMITS, resolveLimits, type AuthorizationIR } from '@tollgate/api';
import { pino } from 'pino';
import { parse } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AuthCompilers } from '../src/auth/compilers.js';
import { ExtAuthzServices } from '../src/auth/ext-authz-services.js';
import { JwksStore } from '../src/auth/jwks-store.js';
import { systemClock } from '../src/ratelimit/clock.js';
import { defaultPasswordSettings, PasswordVerifier } from '../src/auth/password-verifier.js';
import type { AuthRequest } from '../src/auth/types.js';
import { closedAfterEach, echoed, send, simpleConfig, startGateway, startUpstream, type RawResponse, type TestGateway, type Upstream } from './helpers.js';

let up: Upstream;
let gw: TestGateway;

type Rule = { name?: string; action: 'Allow' | 'Deny'; expression: string };
const rules = (...list: Rule[]) => ({ traffic: { authorization: { rules: list } } });
const route = (name: string, prefix: string, policies?: unknown) => ({ name, matches: [{ path: { value: prefix } }], ...(policies ? { policies } : {}), backends: [{ host: up.host }] });


/** The routes of the shared gateway, one per behaviour: [name and path prefix, its rules]. */
const ROUTES: [string, Rule[]][] = [
  ['deny-only', [{ name: 'blocked', action: 'Deny', expression: '"x-block" in request.headers' }]],
  [
    'allow',
    [
      // Fails (no such key) when the request has no x-team header.
      { name: 'team-a', action: 'Allow', expression: 'request.headers["x-team"] == "a"' },
      { name: 'public', action: 'Allow', expression: 'request.path.startsWith("/allow/public")' },
    ],
  ],
  ['deny-fails', [{ name: 'bad-team', action: 'Deny', expression: 'request.headers["x-team"] == "evil"' }, { name: 'anyone', action: 'Allow', expression: 'true' }]],
  ['who', [
    { name: 'authenticated', action: 'Allow', expression: 'consumer.name != ""' },
    { name: 'empty-consumer', action: 'Allow', expression: 'request.path == "/who/empty" && consumer.name == "" && consumer.group == "" && size(consumer.labels) == 0 && size(consumer.claims) == 0' },
  ]],
  ['headers', [{ name: 'ok-header', action: 'Allow', expression: 'request.headers.exists(k, k.startsWith("x-ok"))' }]],
];
const MODEL_RULES: Rule[] = [
  { name: 'no-large', action: 'Deny', expression: 'llm.model.startsWith("gpt-4.5")' },
  { name: 'small-models', action: 'Allow', expression: 'llm.model in ["mock-small", "mock-tiny"]' },
];

const config = (port: number, maxHeaderLength = 256) => ({
  config: { cel: { maxHeaderLength } },
  ...simpleConfig(
    port,
    [
      ...ROUTES.map(([name, list]) => route(name, `/${name}`, rules(...list))),
      route('models', '/v1/chat/completions', rules(...MODEL_RULES)),
      route('inherit', '/inherit'),
    ],
    { policies: rules({ name: 'no-bots', action: 'Deny', expression: '"x-bot" in request.headers' }) },
  ),
});

beforeAll(async () => {
  up = await startUpstream();
  gw = await startGateway((port) => config(port));
});

afterAll(async () => {
  await gw?.close();
  await up?.close();
});

const get = (path: string, headers: Record<string, string> = {}) => send(`${gw.url}${path}`, { headers });
const chat = (model: string, extra: Record<string, unknown> = {}) =>
  send(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }], ...extra }) });

/** The message of a refusal: the text body, or an API client's error.message (auth-errors.test.ts has the shapes). */
const message = (r: RawResponse): string => (r.headers['content-type'] === 'application/json' ? (JSON.parse(r.body) as { error: { message: string } }).error.message : r.body);

/** What the client of a 403 sees: the catalog code, and the message naming what decided. */
function expectForbidden(r: RawResponse, text: string): void {
  expect(r.status, r.body).toBe(403);
  expect(r.headers['x-tollgate-error']).toBe('TG_FORBIDDEN');
  expect(message(r)).toBe(`access denied: ${text}`);
}

/** Requests the backend received while `f` ran. */
async function reached(f: () => Promise<unknown>): Promise<number> {
  const before = up.requests.length;
  await f();
  return up.requests.length - before;
}

describe('Deny and Allow rules', () => {
  it('a true Deny rule refuses with 403 naming the rule, before the backend', async () => {
    let r!: RawResponse;
    expect(await reached(async () => (r = await get('/deny-only/x', { 'x-block': '1' })))).toBe(0);
    expectForbidden(r, 'denied by rule blocked');
    // Only Deny rules, none true: the request passes.
    expect((await get('/deny-only/x')).status).toBe(200);
  });

  it('with Allow rules, one must be true: otherwise 403 not_allowed', async () => {
    expect((await get('/allow/x', { 'x-team': 'a' })).status).toBe(200);
    expectForbidden(await get('/allow/x', { 'x-team': 'b' }), 'no rule allows this request');
  });

  it('a rule that fails refuses (fail closed) unless a true rule decides: the order of the rules does not matter', async () => {
    // team-a fails (no x-team header) and public is false: refused, reason error.
    let r!: RawResponse;
    expect(await reached(async () => (r = await get('/allow/x')))).toBe(0);
    expectForbidden(r, 'rule team-a could not be evaluated and no rule allows this request; refused');
    // team-a fails, but public (after it) is true: allowed.
    expect((await get('/allow/public/page')).status).toBe(200);
    // A Deny rule that fails refuses even though an Allow rule is true: it might have been true.
    expectForbidden(await get('/deny-fails/x'), 'rule bad-team could not be evaluated; refused');
    expect((await get('/deny-fails/x', { 'x-team': 'good' })).status).toBe(200);
  });
});

describe('the requested model (llm.model)', () => {
  it('is read from the body: an allow-list and a deny list of models; the body reaches the backend intact', async () => {
    const body = JSON.stringify({ model: 'mock-small', messages: [{ role: 'user', content: 'héllo' }], temperature: 0.5 });
    const ok = await send(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    expect(ok.status).toBe(200);
    expect(echoed(ok).body).toBe(body);
    // A streaming request goes as written too: the route counts no tokens, so nothing asks the
    // backend for a usage chunk the client did not ask for.
    const streaming = JSON.stringify({ model: 'mock-small', stream: true, messages: [] });
    expect(echoed(await send(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: streaming })).body).toBe(streaming);
    expectForbidden(await chat('gpt-4.5-preview'), 'denied by rule no-large');
    expectForbidden(await chat('gpt-4o'), 'no rule allows this request');
    // No body: the model is "", which no Allow rule lists.
    expectForbidden(await get('/v1/chat/completions'), 'no rule allows this request');
  });
});

describe('a body too large to read (config.maxRequestBodyBytes)', () => {
  const cleanups = closedAfterEach();

  it('is refused with 413 where the rules read the model: a padded body cannot pass a Deny rule unseen', async () => {
    const g = await startGateway((port) => {
      const c = config(port);
      return { ...c, config: { ...c.config, maxRequestBodyBytes: 1024 } };
    });
    cleanups.push(() => g.close());
    const body = (pad: number) => JSON.stringify({ model: 'gpt-4.5-preview', messages: [{ role: 'user', content: 'x'.repeat(pad) }] });
    let r!: RawResponse;
    expect(await reached(async () => (r = await send(`${g.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: body(2000) })))).toBe(0);
    expect([r.status, r.headers['x-tollgate-error'], r.body]).toEqual([413, 'TG_AUTH_BODY_TOO_LARGE', 'request body too large for the authorization rules of this route: the rules read its model, and it was not read whole']);
    expect((await send(`${g.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: body(10) })).status).toBe(403);
    // A route whose rules do not read the model streams a large body as it is.
    expect((await send(`${g.url}/deny-only/x`, { method: 'POST', body: body(2000) })).status).toBe(200);
  });
});

describe('the consumer', () => {
  it('without authentication has name "", group "" and empty labels and claims', async () => {
    expectForbidden(await get('/who/x'), 'no rule allows this request');
    expect((await get('/who/empty')).status).toBe(200);
  });
});

describe('Gateway and route level', () => {
  it("a route's rules replace the Gateway's; a route without rules has the Gateway's", async () => {
    expectForbidden(await get('/inherit/x', { 'x-bot': '1' }), 'denied by rule no-bots');
    expect((await get('/inherit/x')).status).toBe(200);
    // deny-only has rules of its own: no-bots does not apply there.
    expect((await get('/deny-only/x', { 'x-bot': '1' })).status).toBe(200);
  });
});

describe('inputs over their bounds', () => {
  it('a header longer than cel.maxHeaderLength is refused with 431 where a rule reads the headers, not elsewhere', async () => {
    const long = 'v'.repeat(300);
    let r!: RawResponse;
    expect(await reached(async () => (r = await get('/headers/x', { 'x-ok': '1', 'x-long': long })))).toBe(0);
    expect(r.status).toBe(431);
    expect(r.headers['x-tollgate-error']).toBe('TG_EXPRESSION_INPUT_TOO_LARGE');
    expect(r.body).toMatch(/^request too large for the expressions of this route: request\.headers: header "x-long" is 300 characters long, more than the 256/);
    expect((await get('/headers/x', { 'x-ok': '1' })).status).toBe(200);
    // The models route reads llm.model only: a long header is no concern of its rules.
    expect((await send(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-long': long }, body: JSON.stringify({ model: 'mock-tiny' }) })).status).toBe(200);
  });
});

const metricsText = async () => (await fetch(`http://${gw.gateway.ops.metrics.address}/metrics`)).text();
const count = (text: string, result: string, reason: string) =>
  Number(new RegExp(`tollgate_auth_decisions_total\\{kind="authorization",result="${result}",reason="${reason}"\\} (\\d+)`).exec(text)?.[1] ?? 0);

describe('metrics', () => {
  it('count each decision by result and reason, a fixed set', async () => {
    const before = await metricsText();
    await get('/deny-only/x', { 'x-block': '1' });
    await get('/allow/x', { 'x-team': 'b' });
    await get('/allow/x');
    await get('/allow/x', { 'x-team': 'a' });
    await get('/headers/x', { 'x-long': 'v'.repeat(300) });
    const after = await metricsText();
    const delta = (result: string, reason: string) => count(after, result, reason) - count(before, result, reason);
    expect([delta('deny', 'denied'), delta('deny', 'not_allowed'), delta('deny', 'error'), delta('deny', 'too_large'), delta('allow', 'allowed')]).toEqual([1, 1, 1, 1, 1]);
    // No label value comes from the request or the config (rule names, headers).
    const labels = [...after.matchAll(/tollgate_auth_decisions_total\{kind="([^"]*)",result="([^"]*)",reason="([^"]*)"\}/g)];
    expect(labels.length).toBeGreaterThan(0);
    for (const [, kind, result, reason] of labels) {
      expect(kind).toBe('authorization');
      expect(['allow', 'deny']).toContain(result);
      expect(['allowed', 'denied', 'not_allowed', 'error', 'too_large']).toContain(reason);
    }
  });
});

describe('configuration', () => {
  const cleanups = closedAfterEach();

  it('a rule that does not type-check is refused at load, naming the field; a reload with one keeps the last good rules', async () => {
    const bad = (port: number) => simpleConfig(port, [route('r', '/', rules({ action: 'Allow', expression: 'request.headers.size() > "3"' }))]);
    await expect(startGateway(bad)).rejects.toThrow(/binds\[0\]\.listeners\[0\]\.routes\[0\]\.policies\.traffic\.authorization\.rules\[0\]\.expression: got "request\.headers\.size\(\) > \\"3\\"": does not type-check/);
    const g = await startGateway((port) => simpleConfig(port, [route('r', '/', rules({ action: 'Deny', expression: '"x-block" in request.headers' }))]));
    cleanups.push(() => g.close());
    expect(await g.rewrite(bad(g.port))).toBe('refused');
    expect((await send(`${g.url}/x`, { headers: { 'x-block': '1' } })).status).toBe(403);
    expect((await send(`${g.url}/x`)).status).toBe(200);
  });

  it('the rules follow the bounds of the snapshot: a reload that raises cel.maxHeaderLength admits the longer header', async () => {
    const g = await startGateway((port) => config(port, 256));
    cleanups.push(() => g.close());
    const long = { 'x-ok': '1', 'x-long': 'v'.repeat(300) };
    expect((await send(`${g.url}/headers/x`, { headers: long })).status).toBe(431);
    expect(await g.rewrite(config(g.port, 1024))).toBe('reloaded');
    expect((await send(`${g.url}/headers/x`, { headers: long })).status).toBe(200);
    expect(await g.rewrite(config(g.port, 256))).toBe('reloaded');
    expect((await send(`${g.url}/headers/x`, { headers: long })).status).toBe(431);
  });

  it('a policy object kept across a change of bounds is compiled again under the new ones', async () => {
    const log = pino({ level: 'silent' });
    const deps = { log, passwords: new PasswordVerifier(defaultPasswordSettings(), log), extAuthz: new ExtAuthzServices(), jwks: new JwksStore({ log, clock: systemClock, count: () => {} }), clock: systemClock };
    cleanups.push(async () => {
      await deps.passwords.close();
      await deps.extAuthz.close();
      await deps.jwks.close();
    });
    const compilers = new AuthCompilers(deps);
    const ir: AuthorizationIR = { rules: [{ name: 'any-header', action: 'Allow', expression: 'size(request.headers) > 0' }] };
    const small = resolveLimits({ cel: { maxHeaderLength: 8 } });
    const req: AuthRequest = { method: 'GET', path: '/', query: '', host: 'h', authority: 'h', scheme: 'http', headers: { 'x-a': 'a long value' }, rawHeaders: ['x-a', 'a long value'], sourceAddress: '127.0.0.1', sourcePort: 1, consumer: null, model: null, body: null, bodyTooLarge: false };
    const strict = compilers.compile('authorization', ir, small);
    expect(compilers.compile('authorization', ir, resolveLimits({ cel: { maxHeaderLength: 8 } }))).toBe(strict);
    expect(strict.run(req)).toMatchObject({ ok: false, reason: 'too_large' });
    expect(compilers.compile('authorization', ir, DEFAULT_LIMITS).run(req)).toEqual({ ok: true, note: 'allowed by rule any-header' });
  });

  it('examples/auth-authorization.yaml loads and decides as its comments say', async () => {
    const example = parse(readFileSync(fileURLToPath(new URL('../../../examples/auth-authorization.yaml', import.meta.url)), 'utf8')) as {
      config: Record<string, unknown>;
      binds: { port: number; listeners: { routes: { backends: { host: string }[] }[] }[] }[];
    };
    const g = await startGateway((port) => {
      const c = structuredClone(example);
      c.config = {};
      c.binds[0]!.port = port;
      for (const r of c.binds[0]!.listeners[0]!.routes) r.backends = [{ host: up.host }];
      return c;
    });
    cleanups.push(() => g.close());
    const post = (model: string, headers: Record<string, string>) =>
      send(`${g.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify({ model, messages: [] }) });
    expect((await post('mock-gpt', { 'x-team': 'search' })).status).toBe(200);
    expectForbidden(await post('mock-gpt', { 'x-team': 'finance' }), 'no rule allows this request');
    expectForbidden(await post('gpt-4.5-preview', { 'x-team': 'search' }), 'denied by rule no-large-models');
    expectForbidden(await post('mock-gpt', { 'x-team': 'search', 'x-bot': '1' }), 'denied by rule no-bots');
    expect((await send(`${g.url}/v1/models`, { headers: { 'x-bot': '1' } })).status).toBe(403);
    expect((await send(`${g.url}/v1/models`)).status).toBe(200);
  });
});
