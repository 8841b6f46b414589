// cors end to end over real sockets: preflights answered by the gateway (never forwarded,
// never counted by rate limits, never asked for credentials), the Access-Control-* headers of
// the answers (echoed origins, "*" never with credentials, Vary: Origin, the backend's own
// replaced), origins matched exactly and by wildcard and refused when spoofed, the HTTPRoute
// CORS filter over a cors policy and a route's policy over its Gateway's, the trace, the
// metrics, and malformed settings refused naming the field.
import { readFileSync } from 'node:fs';
import type { TraceEvent } from '@tollgate/api';
import { parse } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closedAfterEach, openTrace, send, simpleConfig, startGateway, startUpstream, type RawResponse, type TestGateway, type Upstream } from './helpers.js';

let up: Upstream;
let gw: TestGateway;

const route = (name: string, prefix: string, extra: Record<string, unknown> = {}) => ({ name, matches: [{ path: { value: prefix } }], backends: [{ host: up.host }], ...extra });
const corsPolicy = (cors: Record<string, unknown>) => ({ policies: { traffic: { cors } } });
const corsFilter = (cors: Record<string, unknown>) => ({ filters: [{ type: 'CORS', cors }] });

const APP = {
  allowOrigins: ['https://www.foo.com', 'https://*.bar.com', 'http://localhost:3000'],
  allowMethods: ['GET', 'PUT', 'OPTIONS'],
  allowHeaders: ['X-Header-1', 'content-type'],
  exposeHeaders: ['x-request-id', 'x-ratelimit-remaining'],
  allowCredentials: true,
  maxAge: 600,
};

const config = (port: number) =>
  simpleConfig(
    port,
    [
      route('app', '/app', corsPolicy(APP)),
      route('filter', '/filter', { ...corsFilter({ allowOrigins: ['https://filter.example'], allowCredentials: false }), ...corsPolicy({ allowOrigins: ['https://policy.example'] }) }),
      route('any', '/any', corsFilter({ allowOrigins: ['*'], allowMethods: ['*'], allowHeaders: ['*'], exposeHeaders: ['*'] })),
      route('any-credentials', '/any-credentials', corsFilter({ allowOrigins: ['*'], allowMethods: ['*'], allowHeaders: ['*'], exposeHeaders: ['*'], allowCredentials: true })),
      route('keyed', '/keyed', { policies: { traffic: { cors: { allowOrigins: ['https://www.foo.com'], allowHeaders: ['authorization'] }, apiKey: { file: keysFile } } } }),
      route('inherit', '/inherit'),
      route('plain', '/plain'),
      { ...route('post-only', '/post-only', corsPolicy({ allowOrigins: ['https://www.foo.com'], allowHeaders: ['content-type'] })), matches: [{ path: { value: '/post-only' }, method: 'POST' }] },
    ],
    { policies: { traffic: { cors: { allowOrigins: ['https://gateway.example'] } } } },
  );

let keysFile: string;

beforeAll(async () => {
  // The backend answers with CORS headers of its own, which the route's cors replaces.
  up = await startUpstream((req, res, body) => {
    res.setHeader('content-type', 'application/json');
    res.setHeader('access-control-allow-origin', '*');
    res.setHeader('vary', 'Accept-Encoding');
    res.setHeader('x-request-id', 'r-1');
    res.end(JSON.stringify({ method: req.method, url: req.url, body: body.toString() }));
  });
  const { writeFile, mkdtemp } = await import('node:fs/promises');
  const { tmpdir } = await import('node:os');
  const { join } = await import('node:path');
  keysFile = join(await mkdtemp(join(tmpdir(), 'tollgate-cors-')), 'keys.yaml');
  await writeFile(keysFile, '- key: sk-cors-test-0123456789\n  consumer: alice\n');
  gw = await startGateway(config);
});

afterAll(async () => {
  await gw?.close();
  await up?.close();
});

const preflight = (path: string, origin: string, method = 'PUT', headers: Record<string, string> = {}) =>
  send(`${gw.url}${path}`, { method: 'OPTIONS', headers: { origin, 'access-control-request-method': method, ...headers } });

/** Requests the backend received on `path`, counted before and after `act`. */
async function forwarded(path: string, act: () => Promise<unknown>): Promise<number> {
  const count = () => up.requests.filter((r) => r.url?.startsWith(path)).length;
  const before = count();
  await act();
  return count() - before;
}

const varies = (r: RawResponse) => String(r.headers.vary).split(',').map((s) => s.trim().toLowerCase());

describe('preflights', () => {
  it('are answered by the gateway with the allowances, never forwarded', async () => {
    let r!: RawResponse;
    expect(await forwarded('/app', async () => (r = await preflight('/app/x', 'https://www.foo.com', 'PUT', { 'access-control-request-headers': 'x-header-1, content-type' })))).toBe(0);
    expect(r.status).toBe(204);
    expect(r.headers).toMatchObject({
      'access-control-allow-origin': 'https://www.foo.com',
      'access-control-allow-credentials': 'true',
      'access-control-allow-methods': 'GET, PUT, OPTIONS',
      'access-control-allow-headers': 'x-header-1, content-type',
      'access-control-expose-headers': 'x-request-id, x-ratelimit-remaining',
      'access-control-max-age': '600',
    });
    expect(varies(r)).toEqual(['origin', 'access-control-request-method', 'access-control-request-headers']);
    expect(r.body).toBe('');
  });

  it('match wildcard origins over any number of labels, and the port', async () => {
    for (const origin of ['https://www.bar.com', 'https://a.b.c.bar.com', 'http://localhost:3000', 'HTTPS://WWW.FOO.COM', 'https://www.foo.com:443']) {
      const r = await preflight('/app/x', origin);
      expect(r.status, origin).toBe(204);
      expect(r.headers['access-control-allow-origin'], origin).toBe(origin);
    }
  });

  it('from an origin not allowed are refused (403, no allowance) and not forwarded, spoofed variants included', async () => {
    const spoofed = [
      'https://foobar.com',
      'https://bar.com', // "*.bar.com" needs a label before .bar.com
      'https://evilbar.com',
      'https://www.bar.com.evil.test',
      'https://www.foo.com.', // a trailing dot is another origin
      'http://www.foo.com', // another scheme
      'https://www.foo.com:8443', // another port
      'http://localhost:3001',
      'http://localhost', // port 80, not 3000
      'null',
      'https://www.foo.com/', // not an origin: a path
      'https://user@www.foo.com', // userinfo
      'https://www.foo.com@evil.test',
      'https://www.foo.com, https://evil.test',
      'chrome-extension://abcdef',
      '',
    ];
    for (const origin of spoofed) {
      let r!: RawResponse;
      expect(await forwarded('/app', async () => (r = await preflight('/app/x', origin))), origin).toBe(0);
      expect(r.status, origin).toBe(403);
      expect(r.headers['x-tollgate-error'], origin).toBe('TG_CORS_ORIGIN_REFUSED');
      expect(r.headers['access-control-allow-origin'], origin).toBeUndefined();
      expect(r.headers['access-control-allow-methods'], origin).toBeUndefined();
    }
  });

  it('"*" without credentials answers "*"; with credentials echoes the origin, the method and the headers asked for', async () => {
    const open = await preflight('/any', 'https://anyone.example', 'PATCH', { 'access-control-request-headers': 'x-a' });
    expect(open.status).toBe(204);
    expect(open.headers).toMatchObject({ 'access-control-allow-origin': '*', 'access-control-allow-methods': '*', 'access-control-allow-headers': '*', 'access-control-expose-headers': '*', 'access-control-max-age': '5' });
    expect(open.headers['access-control-allow-credentials']).toBeUndefined();
    const creds = await preflight('/any-credentials', 'https://anyone.example:8443', 'PATCH', { 'access-control-request-headers': 'X-A, x-b' });
    expect(creds.headers).toMatchObject({
      'access-control-allow-origin': 'https://anyone.example:8443',
      'access-control-allow-credentials': 'true',
      'access-control-allow-methods': 'PATCH',
      'access-control-allow-headers': 'x-a, x-b',
    });
    // "*" is never sent with credentials, and nothing echoed is anything but a token.
    expect(Object.entries(creds.headers).filter(([k, v]) => k.startsWith('access-control-') && v === '*')).toEqual([]);
    const hostile = await preflight('/any-credentials', 'https://anyone.example', 'PATCH;x', { 'access-control-request-headers': 'x-ok, bad header, <script>, ,x-ok2' });
    expect(hostile.headers['access-control-allow-methods']).toBeUndefined();
    expect(hostile.headers['access-control-allow-headers']).toBe('x-ok, x-ok2');
  });

  it('are answered before authentication (a preflight carries no credentials); the real request still needs them, and its 401 carries the allowances', async () => {
    const r = await preflight('/keyed/x', 'https://www.foo.com', 'POST', { 'access-control-request-headers': 'authorization' });
    expect(r.status).toBe(204);
    const refused = await send(`${gw.url}/keyed/x`, { method: 'POST', headers: { origin: 'https://www.foo.com' } });
    expect(refused.status).toBe(401);
    expect(refused.headers['access-control-allow-origin']).toBe('https://www.foo.com');
    expect(varies(refused)).toContain('origin');
    const ok = await send(`${gw.url}/keyed/x`, { method: 'POST', headers: { origin: 'https://www.foo.com', authorization: 'Bearer sk-cors-test-0123456789' } });
    expect(ok.status).toBe(200);
  });

  it('are not counted by the Gateway\'s or the route\'s rate limits', async () => {
    const limit = { rateLimit: { local: [{ requests: 1, unit: 'Hours' }] } };
    const cors = { cors: { allowOrigins: ['https://gateway.example'] } };
    const g = await startGateway((port) => simpleConfig(port, [route('limited', '/limited', { policies: { traffic: { ...limit, ...cors } } })], { policies: { traffic: limit } }));
    try {
      const pre = () => send(`${g.url}/limited/x`, { method: 'OPTIONS', headers: { origin: 'https://gateway.example', 'access-control-request-method': 'PUT' } });
      // Each level allows one request an hour: preflights beyond it still pass, and then the
      // one real request both allow does.
      for (let i = 0; i < 4; i++) expect((await pre()).status).toBe(204);
      const real = await send(`${g.url}/limited/x`, { headers: { origin: 'https://gateway.example' } });
      expect(real.status).toBe(200);
      expect(real.headers['access-control-allow-origin']).toBe('https://gateway.example');
      const next = await send(`${g.url}/limited/x`, { headers: { origin: 'https://gateway.example' } });
      expect(next.status).toBe(429);
      // The Gateway's limit refused it before routing; the page can read the refusal all the same.
      expect(next.headers['access-control-allow-origin']).toBe('https://gateway.example');
      expect(varies(next)).toContain('origin');
      expect((await pre()).status).toBe(204);
    } finally {
      await g.close();
    }
  });

  it('a refusal of the route\'s own rate limit carries the allowance', async () => {
    const g = await startGateway((port) => simpleConfig(port, [route('limited', '/limited', { policies: { traffic: { rateLimit: { local: [{ requests: 1, unit: 'Hours' }] }, cors: { allowOrigins: ['https://gateway.example'] } } } })]));
    try {
      const get = () => send(`${g.url}/limited/x`, { headers: { origin: 'https://gateway.example' } });
      expect((await get()).status).toBe(200);
      const refused = await get();
      expect(refused.status).toBe(429);
      expect(refused.headers['access-control-allow-origin']).toBe('https://gateway.example');
      expect(refused.headers['x-ratelimit-limit']).toBe('1');
    } finally {
      await g.close();
    }
  });

  it('are answered by the route of the request they ask about: a route that matches POST only answers its POSTs\' preflights', async () => {
    const r = await preflight('/post-only/x', 'https://www.foo.com', 'POST', { 'access-control-request-headers': 'content-type' });
    expect(r.status).toBe(204);
    expect(r.headers['access-control-allow-origin']).toBe('https://www.foo.com');
    // The method asked about is the route's to match: a PUT has no route here, and OPTIONS itself neither.
    expect((await preflight('/post-only/x', 'https://www.foo.com', 'PUT')).status).toBe(404);
    expect((await send(`${gw.url}/post-only/x`, { method: 'OPTIONS' })).status).toBe(404);
    const post = await send(`${gw.url}/post-only/x`, { method: 'POST', headers: { origin: 'https://www.foo.com', 'content-type': 'application/json', 'content-length': '2' }, body: '{}' });
    expect(post.status).toBe(200);
    expect(post.headers['access-control-allow-origin']).toBe('https://www.foo.com');
  });

  it('of a route without cors go to the backend (OPTIONS is the backend\'s to answer)', async () => {
    const g = await startGateway((port) => simpleConfig(port, [route('plain', '/plain')]));
    try {
      let r!: RawResponse;
      expect(await forwarded('/plain', async () => (r = await send(`${g.url}/plain/x`, { method: 'OPTIONS', headers: { origin: 'https://www.foo.com', 'access-control-request-method': 'PUT' } })))).toBe(1);
      expect(r.status).toBe(200);
    } finally {
      await g.close();
    }
  });
});

describe('answers to cross-origin requests', () => {
  it('carry the allowance for an allowed origin, the route\'s exposed headers, and Vary: Origin beside the backend\'s own', async () => {
    const r = await send(`${gw.url}/app/x`, { method: 'PUT', headers: { origin: 'https://a.bar.com', 'content-type': 'text/plain' }, body: 'hi' });
    expect(r.status).toBe(200);
    expect(JSON.parse(r.body)).toMatchObject({ method: 'PUT', body: 'hi' });
    expect(r.headers).toMatchObject({
      'access-control-allow-origin': 'https://a.bar.com',
      'access-control-allow-credentials': 'true',
      'access-control-expose-headers': 'x-request-id, x-ratelimit-remaining',
    });
    expect(varies(r)).toEqual(['accept-encoding', 'origin']);
  });

  it('from an origin not allowed, or without Origin, go through without any allowance (the backend\'s "*" removed), still varying by Origin', async () => {
    for (const headers of [{ origin: 'https://evil.test' }, { origin: 'null' }, {}] as Record<string, string>[]) {
      const r = await send(`${gw.url}/app/x`, { headers });
      expect(r.status).toBe(200);
      expect(r.headers['access-control-allow-origin'], JSON.stringify(headers)).toBeUndefined();
      expect(r.headers['access-control-allow-credentials']).toBeUndefined();
      expect(varies(r)).toContain('origin');
    }
  });

  it('on a route without cors keep the backend\'s own headers untouched', async () => {
    const g = await startGateway((port) => simpleConfig(port, [route('plain', '/plain')]));
    try {
      const r = await send(`${g.url}/plain/x`, { headers: { origin: 'https://evil.test' } });
      expect(r.headers['access-control-allow-origin']).toBe('*');
      expect(r.headers.vary).toBe('Accept-Encoding');
    } finally {
      await g.close();
    }
  });

  it('"*" with credentials exposes the names of the answer\'s own headers, never "*"', async () => {
    const r = await send(`${gw.url}/any-credentials/x`, { headers: { origin: 'https://site.example' } });
    expect(r.headers['access-control-allow-origin']).toBe('https://site.example');
    const exposed = String(r.headers['access-control-expose-headers']).split(', ');
    expect(exposed).toContain('x-request-id');
    // Not the safelisted ones (always readable), nor Vary or the Access-Control-* headers.
    expect(exposed.filter((n) => ['content-type', 'content-length', 'vary'].includes(n) || n.startsWith('access-control-'))).toEqual([]);
    const open = await send(`${gw.url}/any/x`, { headers: { origin: 'https://site.example' } });
    expect(open.headers['access-control-allow-origin']).toBe('*');
    expect(open.headers['access-control-expose-headers']).toBe('*');
  });
});

describe('which cors applies', () => {
  it('the route\'s CORS filter over its cors policy; the route\'s policy over the Gateway\'s; the Gateway\'s where the route sets none', async () => {
    expect((await preflight('/filter/x', 'https://filter.example')).status).toBe(204);
    expect((await preflight('/filter/x', 'https://policy.example')).status).toBe(403);
    expect((await preflight('/app/x', 'https://gateway.example')).status).toBe(403);
    expect((await preflight('/inherit/x', 'https://gateway.example')).status).toBe(204);
    expect((await preflight('/inherit/x', 'https://www.foo.com')).status).toBe(403);
  });

  it('shows in the trace: the one that applies, where from; a preflight has no backend events', async () => {
    const s = await openTrace(gw.adminUrl);
    await s.armed;
    await preflight('/filter/x', 'https://filter.example');
    const events: TraceEvent[] = await s.events;
    const messages = events.map((e) => e.message);
    const policy = messages.find((m) => m.type === 'policySelection') as { effectivePolicy: Record<string, unknown> };
    expect(policy.effectivePolicy.cors).toEqual([{ source: 'route', config: { via: 'CORS filter', allowOrigins: ['https://filter.example'], allowMethods: [], allowHeaders: [], exposeHeaders: [], allowCredentials: false, maxAge: 5 } }]);
    expect(messages.some((m) => m.type === 'backendCallStart' || m.type === 'backendCallResult')).toBe(false);
    const final = messages.find((m) => m.type === 'responseSnapshot' && m.stage === 'final response') as { requestState: { response: { code: number; headers: Record<string, string> } } };
    expect(final.requestState.response.code).toBe(204);
    expect(final.requestState.response.headers['access-control-allow-origin']).toBe('https://filter.example');
    expect(messages.at(-1)?.type).toBe('requestFinished');

    const s2 = await openTrace(gw.adminUrl);
    await s2.armed;
    await preflight('/inherit/x', 'https://gateway.example');
    const inherited = (await s2.events).map((e) => e.message).find((m) => m.type === 'policySelection') as { effectivePolicy: Record<string, unknown> };
    expect(inherited.effectivePolicy.cors).toMatchObject([{ source: 'gateway', config: { via: 'policy', allowOrigins: ['https://gateway.example'] } }]);
  });

  it('shows in config_dump: each policy\'s cors and the route\'s CORS filter as configured', async () => {
    const dump = (await (await fetch(`${gw.adminUrl}/config_dump`)).json()) as { routes: { name: string; filters: { type: string }[] }[]; policies: { target: { name: string }; policy: Record<string, unknown> }[] };
    const policy = (name: string) => dump.policies.find((p) => p.target.name === name)?.policy;
    expect(policy('main/app')?.cors).toEqual({ allowOrigins: APP.allowOrigins, allowMethods: APP.allowMethods, allowHeaders: ['x-header-1', 'content-type'], exposeHeaders: APP.exposeHeaders, allowCredentials: true, maxAge: 600 });
    expect(policy('main')?.cors).toMatchObject({ allowOrigins: ['https://gateway.example'] });
    expect(dump.routes.find((r) => r.name === 'main/filter')?.filters).toEqual([{ type: 'CORS', allowOrigins: ['https://filter.example'], allowMethods: [], allowHeaders: [], exposeHeaders: [], allowCredentials: false, maxAge: 5 }]);
  });

  it('counts the preflights by route and result', async () => {
    await preflight('/inherit/x', 'https://gateway.example');
    await preflight('/inherit/x', 'https://evil.test');
    const text = await (await fetch(`http://${gw.gateway.ops.metrics.address}/metrics`)).text();
    expect(text).toMatch(/tollgate_cors_preflights_total\{route="main\/inherit",result="allowed"\} [1-9]/);
    expect(text).toMatch(/tollgate_cors_preflights_total\{route="main\/inherit",result="refused"\} [1-9]/);
  });
});

describe('configuration', () => {
  const cleanups = closedAfterEach();
  const at = 'binds\\[0\\]\\.listeners\\[0\\]\\.routes\\[0\\]';
  const withCors = (cors: Record<string, unknown>) => (port: number) => simpleConfig(port, [{ name: 'r', backends: [{ host: '127.0.0.1:1' }], ...corsPolicy(cors) }]);
  const withFilter = (cors: Record<string, unknown>) => (port: number) => simpleConfig(port, [{ name: 'r', backends: [{ host: '127.0.0.1:1' }], ...corsFilter(cors) }]);

  it.each([
    [{ allowOrigins: ['*'], allowCredentials: true }, `${at}\\.policies\\.traffic\\.cors\\.allowCredentials: allowOrigins "\\*" with allowCredentials true lets every site`],
    [{ allowOrigins: ['*', 'https://a.example'] }, `${at}\\.policies\\.traffic\\.cors\\.allowOrigins: allowOrigins cannot contain '\\*' alongside other entries`],
    [{ allowOrigins: ['https://a.example:70000'] }, `${at}\\.policies\\.traffic\\.cors\\.allowOrigins\\[0\\]: got "https://a.example:70000"; the port must be 1 to 65535`],
    [{ allowOrigins: ['https://a.example/path'] }, `${at}\\.policies\\.traffic\\.cors\\.allowOrigins\\[0\\]: .*an origin: http\\(s\\)://<host>`],
    [{ allowOrigins: ['https://A.example', 'https://a.example'] }, `${at}\\.policies\\.traffic\\.cors\\.allowOrigins\\[1\\]: duplicate origin`],
    [{ allowOrigins: [] }, `${at}\\.policies\\.traffic\\.cors\\.allowOrigins`],
    [{ allowOrigins: ['https://a.example'], maxAge: 86401 }, `${at}\\.policies\\.traffic\\.cors\\.maxAge`],
    [{ allowOrigins: ['https://a.example'], allowMethods: ['FETCH'] }, `${at}\\.policies\\.traffic\\.cors\\.allowMethods\\[0\\]`],
    [{ allowOrigins: ['https://a.example'], allowHeaders: ['bad header'] }, `${at}\\.policies\\.traffic\\.cors\\.allowHeaders\\[0\\]`],
    [{ allowOrigins: Array.from({ length: 65 }, (_, i) => `https://a${i}.example`) }, `${at}\\.policies\\.traffic\\.cors\\.allowOrigins`],
  ])('a malformed cors policy is refused naming the field: %j', async (cors, message) => {
    await expect(startGateway(withCors(cors))).rejects.toThrow(new RegExp(message));
  });

  it('the CORS filter takes the Gateway API\'s values ("*" with credentials echoes) and refuses what its CRD refuses', async () => {
    const g = await startGateway(withFilter({ allowOrigins: ['*'], allowCredentials: true }));
    cleanups.push(() => g.close());
    await expect(startGateway(withFilter({ allowOrigins: ['*', 'https://a.example'] }))).rejects.toThrow(new RegExp(`${at}\\.filters\\[0\\]\\.cors\\.allowOrigins: allowOrigins cannot contain`));
    await expect(startGateway((port) => simpleConfig(port, [{ name: 'r', backends: [{ host: '127.0.0.1:1' }], filters: [{ type: 'CORS' }] }]))).rejects.toThrow(new RegExp(`${at}\\.filters\\[0\\]\\.cors: required when type is CORS`));
  });

  it('a reload with a malformed cors keeps the last good one serving', async () => {
    const g = await startGateway(withCors({ allowOrigins: ['https://a.example'] }));
    cleanups.push(() => g.close());
    expect(await g.rewrite(withCors({ allowOrigins: ['*'], allowCredentials: true })(g.port))).toBe('refused');
    const r = await send(`${g.url}/x`, { method: 'OPTIONS', headers: { origin: 'https://a.example', 'access-control-request-method': 'PUT' } });
    expect(r.status).toBe(204);
    expect(r.headers['access-control-allow-origin']).toBe('https://a.example');
  });
});

describe('examples/cors-csrf.yaml', () => {
  it('serves as its comments say: the front end\'s preflight allowed, another site\'s POST refused, the public route open to all', async () => {
    const example = parse(readFileSync(new URL('../../../examples/cors-csrf.yaml', import.meta.url), 'utf8')) as { config: Record<string, unknown>; binds: { port: number; listeners: { routes: { backends: { host: string }[] }[] }[] }[] };
    delete example.config.adminAddr;
    for (const r of example.binds[0]!.listeners[0]!.routes) r.backends = [{ host: up.host }];
    const g = await startGateway((port) => ({ ...example, binds: [{ ...example.binds[0]!, port }] }));
    try {
      const pre = await send(`${g.url}/v1/chat/completions`, { method: 'OPTIONS', headers: { origin: 'http://localhost:5173', 'access-control-request-method': 'POST' } });
      expect(pre.status).toBe(204);
      expect(pre.headers['access-control-allow-credentials']).toBe('true');
      expect((await send(`${g.url}/v1/chat/completions`, { method: 'POST', headers: { origin: 'http://evil.test', 'content-length': '2' }, body: '{}' })).status).toBe(403);
      expect((await send(`${g.url}/v1/chat/completions`, { method: 'POST', headers: { origin: 'http://localhost:5173', 'content-length': '2' }, body: '{}' })).headers['access-control-allow-origin']).toBe('http://localhost:5173');
      expect((await send(`${g.url}/public/models`, { headers: { origin: 'https://anyone.example' } })).headers['access-control-allow-origin']).toBe('*');
    } finally {
      await g.close();
    }
  });
});
