// directResponse end to end over real sockets: a route answers by itself (status, headers, a
// text or JSON body) without any backend, never calling one it has; after authentication and
// rate limits, with the route's response filters and cors; a Gateway-level one answering every
// route that sets none; counted in the metrics, in the trace without backend events, shown in
// config_dump with its credentials redacted; malformed ones refused naming the field.
import { readFileSync } from 'node:fs';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { openTrace, send, simpleConfig, startGateway, startUpstream, type TestGateway, type Upstream } from './helpers.js';

let up: Upstream;
let gw: TestGateway;

const MAINTENANCE = { status: 503, headers: [{ name: 'Retry-After', value: '120' }], body: { json: { error: { message: 'down for maintenance', code: 'maintenance' } } } };
const direct = (d: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({ policies: { traffic: { directResponse: d, ...extra } } });

beforeAll(async () => {
  up = await startUpstream();
  const dir = await mkdtemp(join(tmpdir(), 'tollgate-direct-'));
  const keys = join(dir, 'keys.yaml');
  await writeFile(keys, '- key: sk-direct-test-0123456789\n  consumer: alice\n');
  const route = (name: string, prefix: string, extra: Record<string, unknown> = {}) => ({ name, matches: [{ path: { value: prefix } }], ...extra });
  gw = await startGateway((port) =>
    simpleConfig(port, [
      route('retired', '/v0', direct({ status: 410, headers: [{ name: 'Link', value: '</v1>; rel="successor-version"' }, { name: 'Set-Cookie', value: 'session=gone; Max-Age=0' }], body: { text: 'this API was retired; use /v1\n' } })),
      // Backends it has are never called.
      route('maintenance', '/maintenance', { backends: [{ host: up.host }], ...direct(MAINTENANCE) }),
      route('keyed', '/keyed', direct({ status: 200, body: { json: { ok: true } } }, { apiKey: { file: keys } })),
      route('limited', '/limited', direct({ status: 204 }, { rateLimit: { local: [{ requests: 1, unit: 'Hours' }] } })),
      route('decorated', '/decorated', {
        ...direct({ status: 200, headers: [{ name: 'Content-Type', value: 'text/html; charset=utf-8' }], body: { text: '<p>héllo</p>' } }, { cors: { allowOrigins: ['https://app.example'] } }),
        filters: [{ type: 'ResponseHeaderModifier', responseHeaderModifier: { set: [{ name: 'X-Served-By', value: 'tollgate' }] } }],
      }),
      route('backend', '/backend', { backends: [{ host: up.host }] }),
    ]),
  );
});

afterAll(async () => {
  await gw?.close();
  await up?.close();
});

describe('a route with directResponse', () => {
  it('answers with its status, headers and text body, without a backend', async () => {
    const r = await send(`${gw.url}/v0/models`);
    expect(r.status).toBe(410);
    expect(r.body).toBe('this API was retired; use /v1\n');
    expect(r.headers).toMatchObject({ 'content-type': 'text/plain; charset=utf-8', 'content-length': '30', link: '</v1>; rel="successor-version"', 'set-cookie': ['session=gone; Max-Age=0'] });
  });

  it('answers with a JSON body and never calls the backends it has', async () => {
    const before = up.requests.length;
    const r = await send(`${gw.url}/maintenance/x`, { method: 'POST', headers: { 'content-type': 'application/json', 'content-length': '2' }, body: '{}' });
    expect(up.requests.length).toBe(before);
    expect(r.status).toBe(503);
    expect(r.headers).toMatchObject({ 'content-type': 'application/json', 'retry-after': '120' });
    expect(JSON.parse(r.body)).toEqual({ error: { message: 'down for maintenance', code: 'maintenance' } });
    // The connection serves the next request: the unread body did not break it.
    expect((await send(`${gw.url}/backend/x`)).status).toBe(200);
  });

  it('answers HEAD with the headers only', async () => {
    const r = await send(`${gw.url}/v0/x`, { method: 'HEAD' });
    expect(r.status).toBe(410);
    expect(r.headers['content-length']).toBe('30');
    expect(r.body).toBe('');
  });

  it('answers after authentication and the rate limits', async () => {
    const refused = await send(`${gw.url}/keyed/x`);
    expect(refused.status).toBe(401);
    const ok = await send(`${gw.url}/keyed/x`, { headers: { authorization: 'Bearer sk-direct-test-0123456789' } });
    expect(ok.status).toBe(200);
    expect(JSON.parse(ok.body)).toEqual({ ok: true });
    const first = await send(`${gw.url}/limited/x`);
    expect(first.status).toBe(204);
    expect(first.headers['content-length']).toBeUndefined();
    expect(first.headers['x-ratelimit-remaining']).toBe('0');
    expect((await send(`${gw.url}/limited/x`)).status).toBe(429);
  });

  it('gets the route\'s ResponseHeaderModifier filters and cors, and keeps a content-type it sets', async () => {
    const r = await send(`${gw.url}/decorated/x`, { headers: { origin: 'https://app.example' } });
    expect(r.status).toBe(200);
    expect(r.body).toBe('<p>héllo</p>');
    expect(r.headers).toMatchObject({ 'content-type': 'text/html; charset=utf-8', 'content-length': String(Buffer.byteLength('<p>héllo</p>')), 'x-served-by': 'tollgate', 'access-control-allow-origin': 'https://app.example', vary: 'Origin' });
  });

  it('is counted by route and status, and traced without backend events', async () => {
    const s = await openTrace(gw.adminUrl);
    await s.armed;
    await send(`${gw.url}/maintenance/x`);
    const messages = (await s.events).map((e) => e.message);
    expect(messages.map((m) => m.type)).toEqual(['requestStarted', 'requestSnapshot', 'requestSnapshot', 'routeSelection', 'policySelection', 'requestSnapshot', 'responseSnapshot', 'requestFinished']);
    const policy = messages.find((m) => m.type === 'policySelection') as { effectivePolicy: Record<string, unknown> };
    expect(policy.effectivePolicy.directResponse).toEqual([
      { source: 'route', config: { status: 503, headers: [{ name: 'retry-after', value: '120' }], body: { contentType: 'application/json', bytes: 65 } } },
    ]);
    expect(messages.find((m) => m.type === 'responseSnapshot')).toMatchObject({ stage: 'final response', requestState: { response: { code: 503 } } });
    const text = await (await fetch(`http://${gw.gateway.ops.metrics.address}/metrics`)).text();
    expect(text).toMatch(/tollgate_direct_responses_total\{route="main\/maintenance",status="503"\} [1-9]/);
    expect(text).toMatch(/tollgate_requests_total\{route="main\/maintenance",status="503"\} [1-9]/);
  });

  it('shows in config_dump, a credential header redacted', async () => {
    const dump = JSON.stringify(await (await fetch(`${gw.adminUrl}/config_dump`)).json());
    expect(dump).toContain('"directResponse":{"status":410');
    expect(dump).toContain('this API was retired');
    expect(dump).not.toContain('session=gone');
  });
});

describe('a Gateway-level directResponse', () => {
  it('answers for every route that sets none; a route\'s own replaces it', async () => {
    const g = await startGateway((port) =>
      simpleConfig(
        port,
        [
          { name: 'a', matches: [{ path: { value: '/a' } }], backends: [{ host: up.host }] },
          { name: 'b', matches: [{ path: { value: '/b' } }], ...direct({ status: 200, body: { text: 'b is up' } }) },
        ],
        direct(MAINTENANCE),
      ),
    );
    try {
      const before = up.requests.length;
      expect((await send(`${g.url}/a/x`)).status).toBe(503);
      expect(up.requests.length).toBe(before);
      expect((await send(`${g.url}/b/x`)).body).toBe('b is up');
      // No route: still 404.
      expect((await send(`${g.url}/c`)).status).toBe(404);
    } finally {
      await g.close();
    }
  });
});

describe('configuration', () => {
  const at = 'binds\\[0\\]\\.listeners\\[0\\]\\.routes\\[0\\]';
  const withDirect = (d: Record<string, unknown>) => (port: number) => simpleConfig(port, [{ name: 'r', ...direct(d) }]);

  it('a route without backends is refused unless it answers by itself', async () => {
    await expect(startGateway((port) => simpleConfig(port, [{ name: 'r' }]))).rejects.toThrow(new RegExp(`${at}\\.backends: is empty; add a backend .* or a directResponse policy`));
  });

  it.each([
    [{ status: 204, body: { text: 'x' } }, `${at}\\.policies\\.traffic\\.directResponse\\.body: a 204 answer has no body`],
    [{ status: 200, headers: [{ name: 'Content-Length', value: '3' }] }, `${at}\\.policies\\.traffic\\.directResponse\\.headers\\[0\\]\\.name: content-length is set by the proxy`],
    [{ status: 200, headers: [{ name: 'Transfer-Encoding', value: 'chunked' }] }, `directResponse\\.headers\\[0\\]\\.name: transfer-encoding is set by the proxy`],
    [{ status: 200, headers: [{ name: 'x-a', value: '1' }, { name: 'X-A', value: '2' }] }, `directResponse\\.headers\\[1\\]\\.name: duplicate header`],
    [{ status: 200, headers: [{ name: 'x-a', value: 'a\nb' }] }, `directResponse\\.headers\\[0\\]\\.value`],
    [{ status: 200, body: { text: 'é'.repeat(40_000) } }, `directResponse\\.body\\.text: is 80000 bytes as UTF-8, more than 65536`],
    [{ status: 200, body: { json: { a: 'x'.repeat(70_000) } } }, `directResponse\\.body\\.json: is 70008 bytes serialized, more than 65536`],
    [{ status: 200, body: { json: JSON.parse(`${'{"a":'.repeat(40)}1${'}'.repeat(40)}`) as unknown } }, `directResponse\\.body\\.json: nests more than 32 levels deep`],
    [{ status: 200, body: { json: [1, 2] } }, `directResponse\\.body\\.json`],
    [{ status: 200, body: { text: 'a', json: {} } }, `directResponse\\.body: set exactly one of text or json`],
    [{ status: 200, body: {} }, `directResponse\\.body: set exactly one of text or json`],
    [{ status: 199 }, `directResponse\\.status`],
    [{ status: 600 }, `directResponse\\.status`],
    [{ headers: [] }, `directResponse`],
  ])('a malformed directResponse is refused naming the field: %#', async (d, message) => {
    await expect(startGateway(withDirect(d))).rejects.toThrow(new RegExp(message));
  });

  it('a JSON body of 100,000 levels is refused, not a crash', async () => {
    const deep = `${'{"a":'.repeat(100_000)}1${'}'.repeat(100_000)}`;
    const g = await startGateway(withDirect({ status: 200, body: { text: 'ok' } }));
    try {
      // The config file is JSON-compatible YAML: a nesting this deep must be refused with a clear error.
      const file = `binds:\n- port: ${g.port}\n  listeners:\n  - name: main\n    protocol: HTTP\n    routes:\n    - name: r\n      policies:\n        traffic:\n          directResponse:\n            status: 200\n            body:\n              json: ${deep}\n`;
      expect(await g.rewrite(file)).toBe('refused');
      expect((await send(`${g.url}/x`)).body).toBe('ok');
    } finally {
      await g.close();
    }
  });
});

describe('examples/direct-response.yaml', () => {
  it('answers as its comments say', async () => {
    const example = parse(readFileSync(new URL('../../../examples/direct-response.yaml', import.meta.url), 'utf8')) as { config: Record<string, unknown>; binds: { port: number }[] };
    delete example.config.adminAddr;
    const g = await startGateway((port) => ({ ...example, binds: [{ ...example.binds[0]!, port }] }));
    try {
      const gone = await send(`${g.url}/v0/models`);
      expect([gone.status, gone.body, gone.headers.link]).toEqual([410, 'this API version was retired; use /v1\n', '</v1>; rel="successor-version"']);
      const status = await send(`${g.url}/status`);
      expect([status.status, status.body, status.headers['content-type'], status.headers['cache-control']]).toEqual([200, '{"status":"ok"}', 'application/json', 'no-store']);
    } finally {
      await g.close();
    }
  });
});
