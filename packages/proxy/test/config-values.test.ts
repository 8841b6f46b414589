// Config values over real sockets: route timeouts of 0s (none) and at the 596h maximum,
// values refused at reload while the last good config keeps serving, regular expressions that
// would backtrack, routes that only redirect, listeners without a name. The bounds on
// regular expressions and CEL expressions: a config over them is refused at load and at reload
// naming the field and the bound; a path or header value longer than regex.maxInputLength
// never reaches the regex engine; a request whose headers are over what a descriptor's
// estimate assumed is refused (431) before the descriptor is evaluated, on that route only.
import { createRequire } from 'node:module';
import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { ValidationError } from '@tollgate/api';
import { echoed, send, simpleConfig, startGateway, startUpstream, type GatewayConfig, type TestGateway, type Upstream } from './helpers.js';
import { rlsAvailability, rlsBinaries, startRls, type RlsService } from './support/rls.js';

// re2js as @tollgate/api loads it (one CommonJS instance): spied on, never replaced.
// (The proxy does not depend on re2js itself, hence the type written here.)
interface Re2js {
  compile(pattern: string): unknown;
  prototype: { testExact(input: string): boolean };
}
const { RE2JS } = createRequire(createRequire(import.meta.url).resolve('@tollgate/api'))('re2js') as { RE2JS: Re2js };

const open: { close(): Promise<void> }[] = [];
afterEach(async () => {
  vi.restoreAllMocks();
  await Promise.all(open.splice(0).map((o) => o.close()));
});

async function upstream(...args: Parameters<typeof startUpstream>): Promise<Upstream> {
  const up = await startUpstream(...args);
  open.push(up);
  return up;
}

async function gateway(config: GatewayConfig): Promise<TestGateway> {
  const gw = await startGateway(config);
  open.push(gw);
  return gw;
}

/** A backend that answers `delayMs` after the request arrived (a slow backend, not a test sleep). */
function slow(delayMs: number) {
  return upstream((_req, res) => {
    setTimeout(() => res.end('late answer'), delayMs);
  });
}

describe('route timeouts', () => {
  it('timeouts.request: 0s is no timeout (Gateway API), not an immediate one', async () => {
    const up = await slow(150);
    const gw = await gateway((port) => simpleConfig(port, [{ name: 'r', timeouts: { request: '0s', backendRequest: '0s' }, backends: [{ host: up.host }] }]));
    const r = await send(`${gw.url}/`);
    expect(r.status).toBe(200);
    expect(r.body).toBe('late answer');
  });

  it('timeouts.backendRequest: 0s waits past a shorter config.backendRequestTimeout', async () => {
    // Longer than the default timeout even at the coarsest timer resolution (about 1 s).
    const up = await slow(1100);
    const gw = await gateway((port) => ({
      config: { backendRequestTimeout: '100ms' },
      ...simpleConfig(port, [
        { name: 'none', matches: [{ path: { type: 'PathPrefix', value: '/none' } }], timeouts: { backendRequest: '0s' }, backends: [{ host: up.host }] },
        { name: 'default', backends: [{ host: up.host }] },
      ]),
    }));
    expect((await send(`${gw.url}/none`)).status).toBe(200);
    expect((await send(`${gw.url}/default`)).status).toBe(504);
  });

  it('596h, the maximum, serves normally; 597h is refused at reload and the last good config keeps serving', async () => {
    const up = await upstream();
    const config = (request: string, port: number) => simpleConfig(port, [{ name: 'r', timeouts: { request }, backends: [{ host: up.host }] }]);
    const gw = await gateway((port) => config('596h', port));
    expect((await send(`${gw.url}/`)).status).toBe(200);
    expect(await gw.rewrite(config('597h', gw.port))).toBe('refused');
    const refusal = gw.logs.messages().find((m) => m.startsWith('config reload refused'));
    expect(refusal).toContain('binds[0].listeners[0].routes[0].timeouts.request: got "597h"; expected at most 596h (the longest timer the proxy can set); 0s means no timeout');
    expect((await send(`${gw.url}/`)).status).toBe(200);
  });
});

describe('values refused at reload', () => {
  it('a header value with CR/LF, naming the field; requests keep being served', async () => {
    const up = await upstream();
    const config = (value: string, port: number) => simpleConfig(port, [{ name: 'r', filters: [{ type: 'ResponseHeaderModifier', responseHeaderModifier: { set: [{ name: 'x-a', value }] } }], backends: [{ host: up.host }] }]);
    const gw = await gateway((port) => config('ok', port));
    expect(await gw.rewrite(config('v\r\nset-cookie: session=stolen', gw.port))).toBe('refused');
    expect(gw.logs.messages().find((m) => m.startsWith('config reload refused'))).toContain(
      'routes[0].filters[0].responseHeaderModifier.set[0].value: got "v\\r\\nset-cookie: session=stolen"; expected a header value of visible characters, spaces and tabs (no CR, LF or other control characters)',
    );
    const r = await send(`${gw.url}/`);
    expect(r.status).toBe(200);
    expect(r.headers['x-a']).toBe('ok');
    expect(r.headers['set-cookie']).toBeUndefined();
  });

  it('a backend port 99999, naming the field', async () => {
    const up = await upstream();
    const gw = await gateway((port) => simpleConfig(port, [{ name: 'r', backends: [{ host: up.host }] }]));
    expect(await gw.rewrite(simpleConfig(gw.port, [{ name: 'r', backends: [{ host: '127.0.0.1:99999' }] }]))).toBe('refused');
    expect(gw.logs.messages().find((m) => m.startsWith('config reload refused'))).toContain(
      'routes[0].backends[0].host: got "127.0.0.1:99999"; port 99999 is out of range; expected a port from 1 to 65535',
    );
    expect((await send(`${gw.url}/`)).status).toBe(200);
  });
});

describe('regular expressions run in linear time', () => {
  it('(a+)+$ against a long "aaaa...!" path, header and query answers, and so does the next request', async () => {
    const up = await upstream();
    const gw = await gateway(
      (port) => simpleConfig(port, [
        { name: 'path', matches: [{ path: { type: 'RegularExpression', value: '/(a+)+$' } }], backends: [{ host: up.host }] },
        { name: 'header', matches: [{ path: { type: 'PathPrefix', value: '/h' }, headers: [{ type: 'RegularExpression', name: 'x-a', value: '(a+)+$' }] }], backends: [{ host: up.host }] },
        { name: 'query', matches: [{ path: { type: 'PathPrefix', value: '/q' }, queryParams: [{ type: 'RegularExpression', name: 'q', value: '(a+)+$' }] }], backends: [{ host: up.host }] },
      ]),
    );
    // On a backtracking engine each of these takes 2^40 steps: the request would never answer.
    const evil = `${'a'.repeat(40)}!`;
    expect((await send(`${gw.url}/${evil}`)).status).toBe(404);
    expect((await send(`${gw.url}/h`, { headers: { 'x-a': evil } })).status).toBe(404);
    expect((await send(`${gw.url}/q?q=${evil}`)).status).toBe(404);
    expect((await send(`${gw.url}/${'a'.repeat(40)}`)).status).toBe(200);
    expect((await send(`${gw.url}/h`, { headers: { 'x-a': 'aaa' } })).status).toBe(200);
    expect((await send(`${gw.url}/q?q=aaa`)).status).toBe(200);
  });

  it('a pattern RE2 cannot run (a backreference) is refused at reload, naming the field', async () => {
    const up = await upstream();
    const config = (value: string, port: number) => simpleConfig(port, [{ name: 'r', matches: [{ path: { type: 'RegularExpression', value } }], backends: [{ host: up.host }] }]);
    const gw = await gateway((port) => config('/(a)+', port));
    expect(await gw.rewrite(config('/(a)\\1', gw.port))).toBe('refused');
    expect(gw.logs.messages().find((m) => m.startsWith('config reload refused'))).toContain('routes[0].matches[0].path.value: got "/(a)\\\\1": not a valid regular expression in RE2 syntax');
    expect((await send(`${gw.url}/aa`)).status).toBe(200);
  });
});

describe('config defaults', () => {
  it('a route with a RequestRedirect filter and no backends answers the redirect', async () => {
    const gw = await gateway((port) => simpleConfig(port, [{ name: 'moved', filters: [{ type: 'RequestRedirect', requestRedirect: { hostname: 'new.example.com', statusCode: 301 } }] }]));
    const r = await send(`${gw.url}/a/b?x=1`, { headers: { host: 'old.example.com' } });
    expect(r.status).toBe(301);
    expect(r.headers.location).toBe(`http://new.example.com:${gw.port}/a/b?x=1`);
  });

  it('a listener without a name is served and named listener-<port>-<index>', async () => {
    const up = await upstream();
    const gw = await gateway((port) => ({
      binds: [{ port, listeners: [{ protocol: 'HTTP', hostname: 'a.example.com', routes: [{ name: 'r', backends: [{ host: up.host }] }] }, { protocol: 'HTTP', routes: [{ name: 'r', backends: [{ host: up.host }] }] }] }],
    }));
    expect((await send(`${gw.url}/`, { headers: { host: 'a.example.com' } })).status).toBe(200);
    expect((await send(`${gw.url}/`, { headers: { host: 'b.example.com' } })).status).toBe(200);
    const dump = JSON.parse((await send(`${gw.adminUrl}/config_dump`)).body) as { listeners: { name: string; routes: string[] }[] };
    expect(dump.listeners.map((l) => [l.name, l.routes])).toEqual([
      [`listener-${gw.port}-0`, [`listener-${gw.port}-0/r`]],
      [`listener-${gw.port}-1`, [`listener-${gw.port}-1/r`]],
    ]);
  });
});

/** A route that tags what it sends upstream, so the echo says which route took the request. */
const tagged = (name: string, host: string, matches: unknown[]) => ({
  name,
  matches,
  filters: [{ type: 'RequestHeaderModifier', requestHeaderModifier: { set: [{ name: 'x-route', value: name }] } }],
  backends: [{ host }],
});

const routeOf = async (url: string, headers: Record<string, string> = {}) => {
  const r = await send(url, { headers });
  return r.status === 200 ? echoed(r).headers['x-route'] : `status ${r.status}`;
};

const HUGE = `/v1/${'(?:.?){1000}'.repeat(80)}`;
const NESTED =
  'request.headers.all(a, request.headers.all(b, request.headers.all(c, request.headers.exists(d, a + b + c + d == request.path + request.host + llm.model && a.contains(b) && c.startsWith(d)))))';

describe('regular expressions past their bounds', () => {
  it('a config with a 960-character repetition is refused at load, naming the match and the bound', async () => {
    const up = await upstream();
    const compile = vi.spyOn(RE2JS, 'compile');
    const start = gateway((port) => simpleConfig(port, [tagged('huge', up.host, [{ path: { type: 'RegularExpression', value: HUGE } }])]));
    await expect(start).rejects.toThrow(ValidationError);
    await expect(start).rejects.toThrow(
      /binds\[0\]\.listeners\[0\]\.routes\[0\]\.matches\[0\]\.path\.value: got "\/v1\/\(\?:\.\?\)\{1000\}.*: with its repetitions written out the pattern is up to \d+ instructions, more than the 2000 allowed before compiling \(10 × regex\.maxProgramSize 200\)/,
    );
    expect(compile.mock.calls.map((args) => args[0])).not.toContain(HUGE);
  });

  it('at reload, a route over the bounds is refused and the last good config keeps serving', async () => {
    const up = await upstream();
    const good = (port: number) => simpleConfig(port, [tagged('models', up.host, [{ path: { type: 'RegularExpression', value: '/v1/models/[^/]+' } }]), tagged('rest', up.host, [])]);
    const gw = await gateway(good);
    expect(await routeOf(`${gw.url}/v1/models/gpt-4o`)).toBe('models');
    const headers = Array.from({ length: 17 }, (_, i) => ({ name: `x-h${i}`, type: 'RegularExpression', value: 'v[0-9]+' }));
    const bad = simpleConfig(gw.port, [
      tagged('models', up.host, [{ path: { type: 'RegularExpression', value: '/v1/models/[^/]+' } }]),
      tagged('program', up.host, [{ path: { type: 'PathPrefix', value: '/p' }, headers: [{ name: 'x-id', type: 'RegularExpression', value: '[a-z]{150}[0-9]{100}' }] }]),
      tagged('many', up.host, [{ headers: headers.slice(0, 9) }, { headers: headers.slice(9) }]),
      tagged('rest', up.host, []),
    ]);
    expect(await gw.rewrite(bad)).toBe('refused');
    const refusal = gw.logs.messages().find((m) => m.startsWith('config reload refused'));
    expect(refusal).toContain(
      'binds[0].listeners[0].routes[1].matches[0].headers[0].value: got "[a-z]{150}[0-9]{100}": compiles to a program of 252 instructions, more than the 200 allowed (regex.maxProgramSize)',
    );
    expect(refusal).toContain('binds[0].listeners[0].routes[2].matches: 17 RegularExpression matches (paths, headers and query parameters together), more than the 16 allowed per route (regex.maxPerRoute)');
    expect(await routeOf(`${gw.url}/v1/models/gpt-4o`)).toBe('models');
    expect(await routeOf(`${gw.url}/other`)).toBe('rest');
  });

  it('config.regex raises the bounds: the same route is then accepted', async () => {
    const up = await upstream();
    const gw = await gateway((port) => ({
      config: { regex: { maxProgramSize: 300 } },
      ...simpleConfig(port, [tagged('program', up.host, [{ path: { type: 'PathPrefix', value: '/p' }, headers: [{ name: 'x-id', type: 'RegularExpression', value: '[a-z]{150}[0-9]{100}' }] }])]),
    }));
    expect(await routeOf(`${gw.url}/p`, { 'x-id': `${'a'.repeat(150)}${'1'.repeat(100)}` })).toBe('program');
    // config_dump shows the bounds in force, the defaults for what the config leaves out.
    const dump = JSON.parse((await send(`${gw.adminUrl}/config_dump`)).body) as { limits: unknown };
    expect(dump.limits).toEqual({
      regex: { maxPatternLength: 1024, maxProgramSize: 300, maxPerRoute: 16, maxInputLength: 2048 },
      cel: { maxCost: 10000, maxHeaders: 100, maxHeaderLength: 16384, maxPathLength: 4096 },
    });
  });

  it('a path or header value longer than regex.maxInputLength does not match, and is not run', async () => {
    const up = await upstream();
    const gw = await gateway((port) => ({
      config: { regex: { maxInputLength: 64 } },
      ...simpleConfig(port, [
        tagged('path-regex', up.host, [{ path: { type: 'RegularExpression', value: '/a.*' } }]),
        tagged('header-regex', up.host, [{ path: { type: 'PathPrefix', value: '/h' }, headers: [{ name: 'x-v', type: 'RegularExpression', value: 'v.*' }] }]),
        tagged('rest', up.host, []),
      ]),
    }));
    const run = vi.spyOn(RE2JS.prototype, 'testExact');
    expect(await routeOf(`${gw.url}/${'a'.repeat(63)}`)).toBe('path-regex');
    expect(await routeOf(`${gw.url}/h`, { 'x-v': `v${'0'.repeat(63)}` })).toBe('header-regex');
    const matched = run.mock.calls.length;
    expect(matched).toBeGreaterThan(0);
    // One character more: the pattern would match, but it is not run at all.
    const lengths = () => run.mock.calls.slice(matched).map((args) => args[0].length);
    expect(await routeOf(`${gw.url}/${'a'.repeat(64)}`)).toBe('rest');
    expect(await routeOf(`${gw.url}/h`, { 'x-v': `v${'0'.repeat(64)}` })).toBe('rest');
    expect(await routeOf(`${gw.url}/${'a'.repeat(5000)}`)).toBe('rest');
    expect(lengths().every((n) => n <= 64)).toBe(true);
  });
});

describe('CEL descriptors past their budget', () => {
  const global = (expression: string) => ({
    rateLimit: { global: { service: { host: '127.0.0.1:1' }, domain: 'd', failureMode: 'FailOpen', timeout: '1s', descriptors: [{ unit: 'Requests', entries: [{ name: 'e', expression }] }] } },
  });

  it('a nested comprehension is refused at load and at reload, naming the field and the estimate', async () => {
    const up = await upstream();
    const start = gateway((port) => simpleConfig(port, [{ name: 'r', policies: { traffic: global(NESTED) }, backends: [{ host: up.host }] }]));
    await expect(start).rejects.toThrow(
      /binds\[0\]\.listeners\[0\]\.routes\[0\]\.policies\.traffic\.rateLimit\.global\.descriptors\[0\]\.entries\[0\]\.expression: got ".*: its estimated cost is \d+, more than the budget of 10000 \(cel\.maxCost\)/,
    );
    const gw = await gateway((port) => simpleConfig(port, [{ name: 'r', policies: { traffic: global('request.headers["x-user-id"]') }, backends: [{ host: up.host }] }]));
    expect((await send(`${gw.url}/`, { headers: { 'x-user-id': 'u1' } })).status).toBe(200);
    const cross = 'request.headers.all(a, request.headers.all(b, a == b || a.contains(b)))';
    expect(await gw.rewrite(simpleConfig(gw.port, [{ name: 'r', policies: { traffic: global(cross) }, backends: [{ host: up.host }] }]))).toBe('refused');
    expect(gw.logs.messages().find((m) => m.startsWith('config reload refused'))).toMatch(
      /routes\[0\]\.policies\.traffic\.rateLimit\.global\.descriptors\[0\]\.entries\[0\]\.expression: got "request\.headers\.all\(a, .*": its estimated cost is \d+, more than the budget of 10000/,
    );
    expect((await send(`${gw.url}/`, { headers: { 'x-user-id': 'u1' } })).status).toBe(200);
  });
});

const availability = rlsAvailability();

describe.skipIf(!availability.run)('CEL inputs within the declared bounds, with envoyproxy/ratelimit', () => {
  let rls: RlsService;
  beforeAll(async () => {
    rls = await startRls(rlsBinaries().found!, {
      configs: { bounds: 'domain: bounds\ndescriptors:\n  - key: user\n    rate_limit: { unit: day, requests_per_unit: 2 }\n  - key: model\n    rate_limit: { unit: day, requests_per_unit: 100 }\n' },
    });
  });
  afterAll(async () => {
    await rls?.stop();
  });

  it('200 client headers on a route whose descriptor reads headers: 431, unevaluated and uncharged; other routes serve them', async () => {
    const up = await upstream();
    const descriptor = (name: string, expression: string) => ({
      rateLimit: { global: { service: { host: rls.address }, domain: 'bounds', failureMode: 'FailClosed', timeout: '2s', descriptors: [{ unit: 'Requests', entries: [{ name, expression }] }] } },
    });
    const gw = await gateway((port) =>
      simpleConfig(port, [
        { ...tagged('headers', up.host, [{ path: { type: 'PathPrefix', value: '/h' } }]), policies: { traffic: descriptor('user', 'request.headers["x-user-id"]') } },
        { ...tagged('model', up.host, [{ path: { type: 'PathPrefix', value: '/m' } }]), policies: { traffic: descriptor('model', 'request.method + request.path') } },
        tagged('rest', up.host, []),
      ]),
    );
    const user = `u-${randomUUID()}`;
    const many = Object.fromEntries(Array.from({ length: 200 }, (_, i) => [`x-pad-${i}`, 'p']));
    const before = up.requests.length;
    const refused = await send(`${gw.url}/h`, { headers: { ...many, 'x-user-id': user } });
    expect(refused.status).toBe(431);
    expect(refused.headers['x-tollgate-error']).toBe('TG_EXPRESSION_INPUT_TOO_LARGE');
    expect(up.requests.length).toBe(before);
    // Not charged either: the user still has both requests of the day.
    expect(await routeOf(`${gw.url}/h`, { 'x-user-id': user })).toBe('headers');
    expect(await routeOf(`${gw.url}/h`, { 'x-user-id': user })).toBe('headers');
    expect((await send(`${gw.url}/h`, { headers: { 'x-user-id': user } })).status).toBe(429);
    // Where no expression reads headers, as many headers are fine.
    expect(await routeOf(`${gw.url}/m`, many)).toBe('model');
    expect(await routeOf(`${gw.url}/other`, many)).toBe('rest');
    const metrics = await (await fetch(`http://${gw.gateway.ops.metrics.address}/metrics`)).text();
    expect(metrics).toMatch(/tollgate_ratelimit_decisions_total\{kind="global",level="global",result="refused"\} 1/);
  });
});
