// The per-request trace over the admin server's SSE stream: event order and content for a
// proxied request, a 404, a redirect and an upstream failure; schema validity; redaction;
// several sessions; the CEL match filter; disarm on disconnect.
import { once } from 'node:events';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { connect } from 'node:net';
import { compile, TraceEvent, type TraceEvent as TraceEventT } from '@tollgate/api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, openTrace as openTraceOn, send, simpleConfig, startGateway, startUpstream, type TestGateway, type TraceStream, type Upstream } from './helpers.js';

const validateEvent = compile(TraceEvent);
let up: Upstream;
let gw: TestGateway;
let deadPort: number;

function openTrace(query = ''): Promise<TraceStream> {
  return openTraceOn(gw.adminUrl, query);
}

async function traced(path: string, headers: Record<string, string> = {}, query = ''): Promise<TraceEventT[]> {
  const s = await openTrace(query);
  await s.armed;
  await send(`${gw.url}${path}`, { headers });
  return s.events;
}

/** The events of a proxied request, in the order of the spec (§6). */
const PROXIED = [
  'requestStarted',
  'requestSnapshot:initial request',
  'requestSnapshot:gateway policies',
  'routeSelection',
  'policySelection',
  'requestSnapshot:route policies',
  'requestSnapshot:final request',
  'backendCallStart',
  'backendCallResult',
  'responseSnapshot:backend response ready',
  'responseSnapshot:final response',
  'requestFinished',
];

const kinds = (events: TraceEventT[]) => events.map((e) => (e.message.type === 'requestSnapshot' || e.message.type === 'responseSnapshot' ? `${e.message.type}:${e.message.stage}` : e.message.type));

beforeAll(async () => {
  process.env.POD_NAME = 'tollgate-abc';
  process.env.POD_NAMESPACE = 'edge';
  process.env.GATEWAY_NAME = 'public';
  up = await startUpstream((_req, res) => {
    res.setHeader('set-cookie', 'session=secret-cookie');
    res.setHeader('x-upstream', '1');
    res.statusCode = _req.url?.startsWith('/teapot') ? 418 : 200;
    res.end('ok');
  });
  deadPort = await freePort();
  gw = await startGateway((port) =>
    simpleConfig(port, [
      { name: 'api', matches: [{ path: { value: '/api' } }], filters: [{ type: 'ResponseHeaderModifier', responseHeaderModifier: { add: [{ name: 'x-gw', value: 'yes' }] } }], policies: { traffic: { rateLimit: { local: [{ tokens: 100, unit: 'Hours' }] } } }, backends: [{ host: up.host }] },
      { name: 'teapot', matches: [{ path: { value: '/teapot' } }], backends: [{ host: up.host }] },
      { name: 'other', matches: [{ path: { type: 'Exact', value: '/api/exact-only' }, method: 'POST' }], backends: [{ host: up.host }] },
      { name: 'moved', matches: [{ path: { value: '/moved' } }], filters: [{ type: 'RequestRedirect', requestRedirect: { hostname: 'new.example.com' } }], backends: [] },
      { name: 'dead', matches: [{ path: { value: '/dead' } }], backends: [{ host: `127.0.0.1:${deadPort}` }] },
    ], { policies: { traffic: { rateLimit: { local: [{ requests: 1000, unit: 'Minutes' }] } } } }),
  );
});

afterAll(async () => {
  await gw?.close();
  await up?.close();
});

describe('trace of a proxied request', () => {
  let events: TraceEventT[];
  beforeAll(async () => {
    events = await traced('/api/x?q=1', { authorization: 'Bearer sk-secret', 'x-api-key': 'key-secret', cookie: 'a=b' });
  });

  it('has every stage in the order of the spec', () => {
    expect(kinds(events)).toEqual(PROXIED);
  });

  it('every event matches the trace event schema; times are non-decreasing microseconds', () => {
    for (const e of events) expect(validateEvent(e)).toEqual({ ok: true, value: e });
    const ends = events.map((e) => e.eventEnd);
    expect(ends).toEqual([...ends].sort((a, b) => a - b));
    const result = events.find((e) => e.message.type === 'backendCallResult')!;
    const start = events.find((e) => e.message.type === 'backendCallStart')!;
    expect(result.eventStart).toBe(start.eventEnd);
    expect(events.filter((e) => e !== result).every((e) => e.eventStart === null)).toBe(true);
  });

  it('carries request state, route, policies, backend and response', () => {
    const initial = events[1]!.message;
    if (initial.type !== 'requestSnapshot') throw new Error('expected a snapshot');
    const r = initial.requestState.request;
    expect(r).toMatchObject({ method: 'GET', path: '/api/x', pathAndQuery: '/api/x?q=1', scheme: 'http', version: 'HTTP/1.1', host: `127.0.0.1:${gw.port}`, uri: `http://127.0.0.1:${gw.port}/api/x?q=1` });
    expect(r.startTime).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(initial.requestState.source.address).toBe('127.0.0.1');
    expect(initial.requestState.env).toEqual({ podName: 'tollgate-abc', namespace: 'edge', gateway: 'public' });
    expect(events[3]!.message).toEqual({ type: 'routeSelection', selectedRoute: 'main/api', evaluatedRoutes: ['main/api'] });
    const policy = events[4]!.message;
    if (policy.type !== 'policySelection') throw new Error('expected policySelection');
    expect(Object.keys(policy.effectivePolicy)).toHaveLength(17);
    expect(policy.effectivePolicy.localRateLimit).toEqual([
      { source: 'gateway', config: [{ kind: 'requests', requests: 1000, burst: 0, unit: 'Minutes' }] },
      { source: 'route', config: [{ kind: 'tokens', tokens: 100, unit: 'Hours' }] },
    ]);
    expect(policy.effectivePolicy.responseHeaderModifier).toEqual([{ source: 'route', config: { set: [], add: [{ name: 'x-gw', value: 'yes' }], remove: [] } }]);
    expect(policy.effectivePolicy.jwt).toBeNull();
    const final = events[6]!.message;
    if (final.type !== 'requestSnapshot') throw new Error('expected a snapshot');
    expect(final.requestState.backend).toEqual({ name: up.host, type: 'service', protocol: 'http' });
    expect(final.requestState.request.headers['x-forwarded-for']).toBe('127.0.0.1');
    expect(events[7]!.message).toEqual({ type: 'backendCallStart', target: up.host });
    expect(events[8]!.message).toEqual({ type: 'backendCallResult', status: 200, error: null });
    const ready = events[9]!.message;
    const done = events[10]!.message;
    if (ready.type !== 'responseSnapshot' || done.type !== 'responseSnapshot') throw new Error('expected response snapshots');
    expect(ready.requestState.response.headers['x-gw']).toBeUndefined();
    expect(done.requestState.response).toMatchObject({ code: 200, headers: { 'x-gw': 'yes', 'x-upstream': '1' } });
  });

  it('never shows credentials', () => {
    const text = JSON.stringify(events);
    for (const secret of ['sk-secret', 'key-secret', 'a=b', 'secret-cookie']) expect(text).not.toContain(secret);
    expect(text).toContain('"authorization":"[redacted]"');
  });
});

describe('trace of requests that stop early', () => {
  it('a 404 has route selection (none selected) and no backend events', async () => {
    const events = await traced('/nowhere');
    expect(kinds(events)).toEqual(['requestStarted', 'requestSnapshot:initial request', 'requestSnapshot:gateway policies', 'routeSelection', 'responseSnapshot:final response', 'requestFinished']);
    expect(events[3]!.message).toMatchObject({ selectedRoute: null });
    expect(events[4]).toMatchObject({ severity: 'warn', message: { requestState: { response: { code: 404 } } } });
  });

  it('a redirect answers without backend events', async () => {
    const events = await traced('/moved');
    expect(kinds(events)).toContain('policySelection');
    expect(kinds(events)).not.toContain('backendCallStart');
    expect(events.at(-2)!.message).toMatchObject({ type: 'responseSnapshot', stage: 'final response', requestState: { response: { code: 302, headers: { location: `http://new.example.com:${gw.port}/moved` } } } });
  });

  it('a transport error is recorded with kind and message, severity error', async () => {
    const events = await traced('/dead');
    const result = events.find((e) => e.message.type === 'backendCallResult')!;
    expect(result.severity).toBe('error');
    expect(result.message).toMatchObject({ status: 503, error: { kind: 'TG_UPSTREAM_REFUSED' } });
    expect(kinds(events).slice(-3)).toEqual(['backendCallResult', 'responseSnapshot:final response', 'requestFinished']);
  });

  it('a 4xx from the backend is a warning', async () => {
    const events = await traced('/teapot');
    expect(events.find((e) => e.message.type === 'backendCallResult')).toMatchObject({ severity: 'warn', message: { status: 418 } });
  });
});

describe('sessions', () => {
  it('the stream opens with a comment naming the session', async () => {
    const s = await openTrace();
    expect(await s.armed).toMatch(/^: trace session \d+ armed; waiting for the next request$/);
    s.res.destroy();
  });

  it('sends a keepalive comment while the session waits', async () => {
    const g = await startGateway((port) => ({ binds: [{ port, listeners: [{ name: 'l', protocol: 'HTTP', routes: [{ name: 'r', backends: [{ host: up.host }] }] }] }] }), { traceKeepaliveMs: 20 });
    try {
      const res = await new Promise<IncomingMessage>((resolve, reject) => httpRequest(`${g.adminUrl}/debug/trace`, resolve).on('error', reject).end());
      let text = '';
      await new Promise<void>((resolve) =>
        res.on('data', (c: Buffer) => {
          text += c.toString();
          if (text.includes(': keepalive\n\n')) resolve();
        }),
      );
      expect(text).toMatch(/^: trace session \d+ armed; waiting for the next request\n\n(: keepalive\n\n)+$/);
      res.destroy();
    } finally {
      await g.close();
    }
  });

  it('several sessions each capture a different request, first armed first served', async () => {
    const a = await openTrace();
    await a.armed;
    const b = await openTrace();
    await b.armed;
    await send(`${gw.url}/api/first`);
    await send(`${gw.url}/api/second`);
    const pathOf = (ev: TraceEventT[]) => {
      const m = ev[1]!.message;
      return m.type === 'requestSnapshot' ? m.requestState.request.path : null;
    };
    expect(pathOf(await a.events)).toBe('/api/first');
    expect(pathOf(await b.events)).toBe('/api/second');
  });

  it('match= captures only the request it selects', async () => {
    const s = await openTrace(`?match=${encodeURIComponent('request.headers["x-trace-id"] == "mine"')}`);
    await s.armed;
    await send(`${gw.url}/api/not-mine`, { headers: { 'x-trace-id': 'other' } });
    await send(`${gw.url}/api/no-header`);
    await send(`${gw.url}/api/mine`, { headers: { 'x-trace-id': 'mine' } });
    const events = await s.events;
    const m = events[1]!.message;
    expect(m.type === 'requestSnapshot' && m.requestState.request.path).toBe('/api/mine');
  });

  it('an invalid match is a 400 with the parser message', async () => {
    const r = await send(`${gw.adminUrl}/debug/trace?match=${encodeURIComponent('request.headers[')}`);
    expect(r.status).toBe(400);
    expect(r.body).toMatch(/^invalid match expression: .+/);
    expect((await send(`${gw.adminUrl}/debug/trace?nope=1`)).status).toBe(400);
  });

  it('a match goes through the same checks as every CEL expression: typed, and within the cost budget', async () => {
    const ask = (match: string) => send(`${gw.adminUrl}/debug/trace?match=${encodeURIComponent(match)}`);
    const untyped = await ask('request.path');
    expect(untyped.status).toBe(400);
    expect(untyped.body).toBe('invalid match expression: evaluates to string; a trace match must be bool\n');
    const costly = await ask('request.headers.all(a, request.headers.all(b, a.contains(b)))');
    expect(costly.status).toBe(400);
    expect(costly.body).toMatch(/^invalid match expression: its estimated cost is \d+, more than the budget of 10000 \(cel\.maxCost\)/);
  });

  it('a client that disconnects disarms its session', async () => {
    const tasks = async () => ((await (await fetch(`${gw.adminUrl}/debug/tasks`)).json()) as { traceSessions: unknown[] }).traceSessions.length;
    const s = await openTrace();
    await s.armed;
    expect(await tasks()).toBe(1);
    s.res.destroy();
    await expect.poll(tasks).toBe(0);
    // The next request is not captured by anyone and is served normally.
    expect((await send(`${gw.url}/api/x`)).status).toBe(200);
  });
});

describe('request state details', () => {
  /** Sends raw bytes (node's client would add a Host header and normalise the target). */
  async function rawTraced(bytes: string): Promise<TraceEventT[]> {
    const s = await openTrace();
    await s.armed;
    const socket = connect(gw.port, '127.0.0.1');
    await once(socket, 'connect');
    socket.end(bytes);
    socket.resume();
    await once(socket, 'close');
    return s.events;
  }
  const initial = (events: TraceEventT[]) => {
    const m = events.find((e) => e.message.type === 'requestSnapshot')!.message as Extract<TraceEventT['message'], { type: 'requestSnapshot' }>;
    return m.requestState.request;
  };

  it('request.host leaves out the default port', async () => {
    const events = await traced('/api/x', { host: 'api.example.com:80' });
    expect(initial(events)).toMatchObject({ host: 'api.example.com', uri: 'http://api.example.com/api/x' });
  });

  it('HTTP/1.0 without Host gives an absolute uri with the address the client connected to', async () => {
    const request = initial(await rawTraced('GET /api/x?y=1 HTTP/1.0\r\n\r\n'));
    expect(request.uri).toBe(`http://127.0.0.1:${gw.port}/api/x?y=1`);
    expect(() => new URL(request.uri)).not.toThrow();
    expect(request.version).toBe('HTTP/1.0');
  });

  it('the path is shown normalised; an absolute-form target shows its authority', async () => {
    const request = initial(await rawTraced('GET http://h.example/api/a/../%62 HTTP/1.1\r\nHost: other\r\nConnection: close\r\n\r\n'));
    expect(request).toMatchObject({ host: 'h.example', path: '/api/b', uri: 'http://h.example/api/b' });
  });

  it('a 404 lists every route serving the host as evaluated', async () => {
    const events = await traced('/nowhere');
    expect(events.find((e) => e.message.type === 'routeSelection')!.message).toEqual({
      type: 'routeSelection',
      selectedRoute: null,
      evaluatedRoutes: ['main/other', 'main/api', 'main/teapot', 'main/moved', 'main/dead'],
    });
  });
});

describe('secrets in the request', () => {
  it('query parameter credentials and session-token headers are redacted in every snapshot', async () => {
    const events = await traced('/api/x?model=m&api_key=sk-123&TOKEN=tok-xyz&sig=zz&keep=1', { 'x-amz-security-token': 'aws-secret', authorization: 'Bearer sk-999' });
    const text = JSON.stringify(events);
    for (const secret of ['sk-123', 'tok-xyz', '=zz', 'aws-secret', 'sk-999']) expect(text).not.toContain(secret);
    const request = events.filter((e) => e.message.type === 'requestSnapshot').map((e) => (e.message as Extract<TraceEventT['message'], { type: 'requestSnapshot' }>).requestState.request);
    // Every request snapshot of a proxied request is checked: initial, gateway policies, route policies, final.
    expect(request).toHaveLength(4);
    for (const r of request) {
      expect(r.pathAndQuery).toBe('/api/x?model=m&api_key=[redacted]&TOKEN=[redacted]&sig=[redacted]&keep=1');
      expect(r.uri).toMatch(/\/api\/x\?model=m&api_key=\[redacted\]&TOKEN=\[redacted\]&sig=\[redacted\]&keep=1$/);
    }
  });
});

describe('authentication and authorization in the trace', () => {
  let authGw: TestGateway;
  const guarded = [
    { name: 'blocked', action: 'Deny', expression: '"x-block" in request.headers' },
    { name: 'team', action: 'Allow', expression: '"x-team" in request.headers' },
  ];
  beforeAll(async () => {
    authGw = await startGateway((port) =>
      simpleConfig(
        port,
        [
          { name: 'guarded', matches: [{ path: { value: '/guarded' } }], policies: { traffic: { authorization: { rules: guarded } } }, backends: [{ host: up.host }] },
          { name: 'inherits', matches: [{ path: { value: '/inherits' } }], backends: [{ host: up.host }] },
        ],
        { policies: { traffic: { authorization: { rules: [{ name: 'no-bots', action: 'Deny', expression: '"x-bot" in request.headers' }] } } } },
      ),
    );
  });
  afterAll(async () => {
    await authGw?.close();
  });

  async function authTraced(path: string, headers: Record<string, string> = {}): Promise<TraceEventT[]> {
    const s = await openTraceOn(authGw.adminUrl);
    await s.armed;
    await send(`${authGw.url}${path}`, { headers });
    return s.events;
  }
  const snapshot = (events: TraceEventT[], stage: string) =>
    events.map((e) => e.message).find((m): m is Extract<TraceEventT['message'], { type: 'requestSnapshot' }> => m.type === 'requestSnapshot' && m.stage === stage);
  const policy = (events: TraceEventT[]) => events.map((e) => e.message).find((m): m is Extract<TraceEventT['message'], { type: 'policySelection' }> => m.type === 'policySelection')!;

  it('policySelection lists the authorization rules at their level; the other auth kinds are null', async () => {
    const events = await authTraced('/guarded/x', { 'x-team': 'a' });
    const p = policy(events).effectivePolicy;
    expect(p.authorization).toEqual([{ source: 'route', config: { rules: guarded } }]);
    for (const kind of ['apiKey', 'basicAuth', 'jwt', 'extAuthz'] as const) expect(p[kind]).toBeNull();
    const inherited = policy(await authTraced('/inherits/x')).effectivePolicy;
    expect(inherited.authorization).toEqual([{ source: 'gateway', config: { rules: [{ name: 'no-bots', action: 'Deny', expression: '"x-bot" in request.headers' }] } }]);
  });

  it('an allowed request: the route policies and final request snapshots say which checks ran and what they decided', async () => {
    const events = await authTraced('/guarded/x', { 'x-team': 'a' });
    for (const e of events) expect(validateEvent(e)).toEqual({ ok: true, value: e });
    const auth = { consumer: null, checks: [{ kind: 'authorization', result: 'allow', reason: 'allowed', note: 'allowed by rule team' }] };
    expect(snapshot(events, 'route policies')!.requestState.auth).toEqual(auth);
    expect(snapshot(events, 'final request')!.requestState.auth).toEqual(auth);
    // Before the checks run, the snapshots have no auth.
    expect(snapshot(events, 'initial request')!.requestState.auth).toBeUndefined();
  });

  it('a refused request: the route policies snapshot carries the refusal, then the 403; no backend events', async () => {
    const events = await authTraced('/guarded/x', { 'x-team': 'a', 'x-block': '1' });
    for (const e of events) expect(validateEvent(e)).toEqual({ ok: true, value: e });
    // Up to the route policies snapshot, then the answer.
    expect(kinds(events)).toEqual([...PROXIED.slice(0, 6), 'responseSnapshot:final response', 'requestFinished']);
    expect(snapshot(events, 'route policies')!.requestState.auth).toEqual({
      consumer: null,
      checks: [{ kind: 'authorization', result: 'deny', reason: 'denied', note: 'denied by rule blocked' }],
    });
    const final = events.at(-2)!;
    expect(final.severity).toBe('warn');
    expect(final.message).toMatchObject({ type: 'responseSnapshot', requestState: { response: { code: 403, headers: { 'x-tollgate-error': 'TG_FORBIDDEN' } } } });
  });

  it('a route without checks has no auth in its snapshots', async () => {
    const events = await traced('/api/x');
    expect(snapshot(events, 'route policies')!.requestState.auth).toBeUndefined();
    expect(snapshot(events, 'final request')!.requestState.auth).toBeUndefined();
  });
});
