// csrf end to end over real sockets: state-changing requests from pages of another origin
// refused (403) before authentication and never forwarded, whatever way the Origin (or the
// Referer) is spoofed; safe methods, the request's own origin, additionalOrigins and API
// clients (neither header) let through; the answer in OpenAI's error shape for API calls; a
// route's csrf over its Gateway's; the trace, the metrics, malformed settings refused.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTrace, send, simpleConfig, startGateway, startUpstream, type RawResponse, type TestGateway, type Upstream } from './helpers.js';

let up: Upstream;
let gw: TestGateway;

const HOST = 'api.example.com';
const route = (name: string, prefix: string, traffic?: Record<string, unknown>) => ({
  name,
  matches: [{ path: { value: prefix } }],
  backends: [{ host: up.host }],
  ...(traffic ? { policies: { traffic } } : {}),
});

beforeAll(async () => {
  up = await startUpstream();
  gw = await startGateway((port) =>
    simpleConfig(
      port,
      [
        route('own', '/own', { csrf: {} }),
        route('partners', '/partners', { csrf: { additionalOrigins: ['https://app.example.com', 'https://*.partner.test', 'http://localhost:3000'] } }),
        route('inherit', '/inherit'),
      ],
      { policies: { traffic: { csrf: { additionalOrigins: ['https://gateway.example'] } } } },
    ),
  );
});

afterAll(async () => {
  await gw?.close();
  await up?.close();
});

/** A request with a small body (framed: node:http sends a DELETE body unframed otherwise); without one for the safe methods. */
const post = (path: string, headers: Record<string, string>, method = 'POST') => {
  const body = ['GET', 'HEAD', 'OPTIONS', 'TRACE'].includes(method) ? undefined : '{}';
  return send(`${gw.url}${path}`, { method, headers: { host: HOST, ...(body ? { 'content-length': '2' } : {}), ...headers }, body });
};

async function forwarded(act: () => Promise<unknown>): Promise<number> {
  const before = up.requests.length;
  await act();
  return up.requests.length - before;
}

function expectRefused(r: RawResponse, what: string): void {
  expect(r.status, what).toBe(403);
  expect(r.headers['x-tollgate-error'], what).toBe('TG_CSRF_REFUSED');
}

describe('a state-changing request', () => {
  it('from a page of the origin it was sent to passes (case of scheme and host aside)', async () => {
    for (const origin of ['http://api.example.com', 'HTTP://API.EXAMPLE.COM', 'http://api.example.com:80']) {
      expect((await post('/own/x', { origin })).status, origin).toBe(200);
    }
    expect((await send(`${gw.url}/own/x`, { method: 'POST', headers: { host: 'API.Example.com', origin: 'http://api.example.com' } })).status).toBe(200);
    // The Host with its port: the origin must name the same port.
    expect((await send(`${gw.url}/own/x`, { method: 'POST', headers: { origin: `http://127.0.0.1:${gw.port}` } })).status).toBe(200);
  });

  it('from any other origin is refused and never forwarded, whatever the spoof', async () => {
    const spoofed = [
      'http://evil.test',
      'null',
      'https://api.example.com', // the scheme differs: an https page is another origin
      'https://api.example.com:80', // the scheme alone differs
      'http://api.example.com:8080', // the port differs
      'http://api.example.com.evil.test', // a suffix trick
      'http://evilapi.example.com',
      'http://sub.api.example.com',
      'http://api.example.com.', // a trailing dot is another site
      'http://user@api.example.com', // userinfo is no origin
      'http://api.example.com@evil.test',
      'http://api.example.com/', // a path is no origin
      'http://api.example.com, http://evil.test',
      'http://api.example.com:0',
      'http://api.example.com:99999',
      'file://',
      'chrome-extension://abc',
      '',
    ];
    for (const origin of spoofed) {
      let r!: RawResponse;
      expect(await forwarded(async () => (r = await post('/own/x', { origin }))), origin).toBe(0);
      expectRefused(r, origin);
    }
  });

  it('is refused for every unsafe method; safe methods pass from anywhere', async () => {
    for (const method of ['POST', 'PUT', 'PATCH', 'DELETE']) expectRefused(await post('/own/x', { origin: 'http://evil.test' }, method), method);
    for (const method of ['GET', 'HEAD', 'OPTIONS', 'TRACE']) expect((await post('/own/x', { origin: 'http://evil.test' }, method)).status, method).toBe(200);
  });

  it('without Origin is judged by its Referer', async () => {
    expect((await post('/own/x', { referer: 'http://api.example.com/page?x=1' })).status).toBe(200);
    expect((await post('/own/x', { referer: 'http://api.example.com:80/page' })).status).toBe(200);
    for (const referer of ['http://evil.test/page', 'http://api.example.com.evil.test/', 'http://api.example.com@evil.test/', 'https://api.example.com/', 'not a url', 'about:blank', '']) {
      expectRefused(await post('/own/x', { referer }), referer);
    }
    // The Origin decides when there is one.
    expect((await post('/own/x', { origin: 'http://api.example.com', referer: 'http://evil.test/' })).status).toBe(200);
    expectRefused(await post('/own/x', { origin: 'http://evil.test', referer: 'http://api.example.com/' }), 'origin over referer');
  });

  it('with neither Origin nor Referer passes: API clients send neither', async () => {
    let r!: RawResponse;
    expect(await forwarded(async () => (r = await post('/own/x', {})))).toBe(1);
    expect(r.status).toBe(200);
  });

  it('from an origin of additionalOrigins passes, exactly or by wildcard', async () => {
    for (const origin of ['https://app.example.com', 'https://a.partner.test', 'https://a.b.partner.test', 'http://localhost:3000', 'http://api.example.com']) {
      expect((await post('/partners/x', { origin })).status, origin).toBe(200);
    }
    for (const origin of ['https://partner.test', 'https://evilpartner.test', 'https://a.partner.test.evil.test', 'http://app.example.com', 'http://localhost:3001', 'https://gateway.example']) {
      expectRefused(await post('/partners/x', { origin }), origin);
    }
  });

  it('follows the route\'s csrf over the Gateway\'s, the Gateway\'s where the route has none', async () => {
    expect((await post('/inherit/x', { origin: 'https://gateway.example' })).status).toBe(200);
    expectRefused(await post('/inherit/x', { origin: 'https://app.example.com' }), 'inherit');
  });
});

describe('the refusal', () => {
  it('names what was received and what was expected: plain text, or OpenAI\'s error shape for an API call', async () => {
    const text = await post('/own/x', { origin: 'http://evil.test' });
    expect(text.headers['content-type']).toBe('text/plain; charset=utf-8');
    expect(text.body).toBe('cross-site request refused: Origin "http://evil.test" is not http://api.example.com or one of csrf.additionalOrigins');
    const json = await post('/own/x', { origin: 'http://evil.test', 'content-type': 'application/json' });
    expect(JSON.parse(json.body)).toEqual({
      error: { message: text.body, type: 'permission_error', param: null, code: 'TG_CSRF_REFUSED' },
    });
    // A long spoofed value is clipped in the answer.
    const long = await post('/own/x', { referer: `http://evil.test/${'a'.repeat(5000)}` });
    expect(long.body.length).toBeLessThan(400);
  });

  it('comes before authentication: a forged request is refused as such, not asked for credentials', async () => {
    const { mkdtemp, writeFile } = await import('node:fs/promises');
    const { tmpdir } = await import('node:os');
    const { join } = await import('node:path');
    const file = join(await mkdtemp(join(tmpdir(), 'tollgate-csrf-')), 'keys.yaml');
    await writeFile(file, '- key: sk-csrf-test-0123456789\n  consumer: alice\n');
    const g = await startGateway((port) => simpleConfig(port, [route('keyed', '/keyed', { csrf: {}, apiKey: { file } })]));
    try {
      const forged = await send(`${g.url}/keyed/x`, { method: 'POST', headers: { origin: 'http://evil.test', authorization: 'Bearer sk-csrf-test-0123456789' } });
      expectRefused(forged, 'forged with a key');
      expectRefused(await send(`${g.url}/keyed/x`, { method: 'POST', headers: { origin: 'http://evil.test' } }), 'forged without a key');
      expect((await send(`${g.url}/keyed/x`, { method: 'POST', headers: { authorization: 'Bearer sk-csrf-test-0123456789' } })).status).toBe(200);
    } finally {
      await g.close();
    }
  });

  it('shows in the trace and in the metrics by reason', async () => {
    const s = await openTrace(gw.adminUrl);
    await s.armed;
    await post('/inherit/x', { origin: 'null' });
    const messages = (await s.events).map((e) => e.message);
    const policy = messages.find((m) => m.type === 'policySelection') as { effectivePolicy: Record<string, unknown> };
    expect(policy.effectivePolicy.csrf).toEqual([{ source: 'gateway', config: { additionalOrigins: ['https://gateway.example'] } }]);
    expect(messages.some((m) => m.type === 'backendCallStart')).toBe(false);
    expect(messages.find((m) => m.type === 'responseSnapshot' && m.stage === 'final response')).toMatchObject({ requestState: { response: { code: 403 } } });
    const text = await (await fetch(`http://${gw.gateway.ops.metrics.address}/metrics`)).text();
    expect(text).toMatch(/tollgate_csrf_refusals_total\{route="main\/inherit",reason="null_origin"\} [1-9]/);
    expect(text).toMatch(/tollgate_csrf_refusals_total\{route="main\/own",reason="cross_origin"\} [1-9]/);
    expect(text).toMatch(/tollgate_csrf_refusals_total\{route="main\/own",reason="malformed_referer"\} [1-9]/);
  });
});

describe('configuration', () => {
  const at = 'binds\\[0\\]\\.listeners\\[0\\]\\.routes\\[0\\]\\.policies\\.traffic\\.csrf\\.additionalOrigins';
  const withCsrf = (csrf: Record<string, unknown>) => (port: number) => simpleConfig(port, [{ name: 'r', backends: [{ host: '127.0.0.1:1' }], policies: { traffic: { csrf } } }]);

  it.each([
    [{ additionalOrigins: ['*'] }, `${at}\\[0\\]: cannot be "\\*": that would allow every site`],
    [{ additionalOrigins: ['https://a.example:0'] }, `${at}\\[0\\]: got "https://a.example:0"; the port must be 1 to 65535`],
    [{ additionalOrigins: ['https://a.example', 'https://A.Example'] }, `${at}\\[1\\]: duplicate origin`],
    [{ additionalOrigins: ['a.example'] }, `${at}\\[0\\]: .*an origin: http\\(s\\)://<host>`],
    [{ allowOrigins: ['https://a.example'] }, 'csrf'],
  ])('a malformed csrf policy is refused naming the field: %j', async (csrf, message) => {
    await expect(startGateway(withCsrf(csrf))).rejects.toThrow(new RegExp(message));
  });
});
