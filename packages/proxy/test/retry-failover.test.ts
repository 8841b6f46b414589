// Retries (Gateway API HTTPRouteRetry) and failover across backends by priority, over real
// sockets: real backends that answer errors, reset connections, accept and never answer, or
// hold their answers until the test releases them; a standalone proxy in between; what the
// client gets, what each backend received, /backends, /metrics and the trace.
import { once } from 'node:events';
import { request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { deferred, until } from '@tollgate/testkit';
import { fileURLToPath } from 'node:url';
import { startMockLlm, type ReceivedRequest } from '@tollgate/mock-llm';
import { loadConfigFile } from '../src/config/load-file.js';
import { metricValue } from './support/gateway-files.js';
import { openTrace, send, simpleConfig, startGateway, startUpstream, type TestGateway, type Upstream } from './helpers.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

async function upstream(handler: (req: IncomingMessage, res: ServerResponse, body: Buffer) => void): Promise<Upstream> {
  const u = await startUpstream(handler);
  cleanups.push(() => u.close());
  return u;
}

async function gateway(routes: unknown[], config: Record<string, unknown> = {}): Promise<TestGateway> {
  const gw = await startGateway((port) => ({ config, ...simpleConfig(port, routes) }));
  cleanups.push(() => gw.close());
  return gw;
}

const json = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
};

/** A backend answering `status` to its first `failures` requests, then 200 with the body it received. */
async function flaky(status: number, failures: number): Promise<Upstream> {
  let seen = 0;
  return upstream((_req, res, body) => (++seen <= failures ? json(res, status, { error: `attempt ${seen}` }) : json(res, 200, { body: body.toString(), attempt: seen })));
}

/** A backend that answers 200 naming itself, with `usage` tokens. */
async function named(name: string, usage = 10): Promise<Upstream> {
  return upstream((_req, res, body) => json(res, 200, { from: name, body: body.toString(), usage: { total_tokens: usage } }));
}

/** A TCP server that accepts connections, reads requests and never answers (closed after the test); counts the connections a request came on. */
async function silent(): Promise<{ host: string; requests: () => number }> {
  const sockets: Socket[] = [];
  let requests = 0;
  const server: Server = createServer((s) => {
    sockets.push(s);
    s.once('data', () => requests++);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  cleanups.push(async () => {
    for (const s of sockets) s.destroy();
    server.close();
  });
  return { host: `127.0.0.1:${(server.address() as AddressInfo).port}`, requests: () => requests };
}

/** A port nothing listens on. */
async function closedPort(): Promise<string> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  server.close();
  await once(server, 'close');
  return `127.0.0.1:${port}`;
}

const post = (gw: TestGateway, body: string, path = '/') => send(`${gw.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });

describe('retry (HTTPRouteRetry)', () => {
  it('sends again on a listed code, up to attempts retries, the same body each time; then passes the last answer on', async () => {
    const recovers = await flaky(500, 2);
    const never = await flaky(500, 10);
    const gw = await gateway([
      { name: 'recovers', matches: [{ path: { value: '/recovers' } }], retry: { codes: [500], attempts: 3, backoff: '1ms' }, backends: [{ host: recovers.host }] },
      { name: 'never', matches: [{ path: { value: '/never' } }], retry: { codes: [500], attempts: 3, backoff: '1ms' }, backends: [{ host: never.host }] },
    ]);
    const ok = await post(gw, '{"model":"m","n":1}', '/recovers');
    expect(ok.status).toBe(200);
    expect(JSON.parse(ok.body)).toEqual({ body: '{"model":"m","n":1}', attempt: 3 });
    expect(recovers.requests.length).toBe(3);

    const failed = await post(gw, '{"n":2}', '/never');
    // The first attempt and 3 retries; the client gets the last answer as the backend sent it.
    expect(failed.status).toBe(500);
    expect(JSON.parse(failed.body)).toEqual({ error: 'attempt 4' });
    expect(never.requests.length).toBe(4);
    expect(await metricValue(gw, 'tollgate_retries_total{route="main/never",kind="retry"}')).toBe(3);
    expect(await metricValue(gw, `tollgate_upstream_attempts_total{route="main/never",backend="${never.host}",outcome="5xx"}`)).toBe(4);
  });

  it('does not send again on a code it does not list', async () => {
    const b = await flaky(503, 1);
    const gw = await gateway([{ name: 'r', retry: { codes: [500], attempts: 3 }, backends: [{ host: b.host }] }]);
    const r = await post(gw, '{}');
    expect(r.status).toBe(503);
    expect(b.requests.length).toBe(1);
  });

  it('sends again after a connection reset (HTTPRouteRetryConnectionError), whatever the codes', async () => {
    let seen = 0;
    const b = await upstream((req, res) => (++seen === 1 ? req.socket.resetAndDestroy() : json(res, 200, { attempt: seen })));
    const gw = await gateway([{ name: 'r', retry: { attempts: 1, backoff: '0s' }, backends: [{ host: b.host }] }]);
    const r = await post(gw, '{}');
    expect(r.status).toBe(200);
    expect(JSON.parse(r.body)).toEqual({ attempt: 2 });
  });

  it('sends again after the backend timeout (HTTPRouteRetryBackendTimeout)', async () => {
    const held: ServerResponse[] = [];
    cleanups.push(async () => held.forEach((res) => res.destroy()));
    let seen = 0;
    const b = await upstream((_req, res) => (++seen === 1 ? held.push(res) : json(res, 200, { attempt: seen })));
    // The timeout bounds the second attempt too: generous, so that a loaded machine answers it in time.
    const gw = await gateway([{ name: 'r', timeouts: { backendRequest: '2s' }, retry: { attempts: 1, backoff: '0s' }, backends: [{ host: b.host }] }]);
    const r = await post(gw, '{}');
    expect(r.status).toBe(200);
    expect(JSON.parse(r.body)).toEqual({ attempt: 2 });
    expect(held.length).toBe(1);
  });

  it('never sends again a body larger than config.maxRetryBodyBytes; a smaller one is sent again whole', async () => {
    const b = await flaky(500, 1);
    const gw = await gateway([{ name: 'r', retry: { codes: [500], attempts: 1, backoff: '0s' }, backends: [{ host: b.host }] }], { maxRetryBodyBytes: 2048 });
    const large = JSON.stringify({ text: 'x'.repeat(3000) });
    const r1 = await post(gw, large);
    expect(r1.status).toBe(500);
    expect(b.requests.length).toBe(1);
    const small = JSON.stringify({ text: 'y'.repeat(1000) });
    const r2 = await post(gw, small);
    expect(r2.status).toBe(200);
    expect(JSON.parse(r2.body)).toEqual({ body: small, attempt: 2 });
  });
});

describe('failover by priority', () => {
  it('answers from the next priority on a 429 and passes the first over while its Retry-After runs; /backends shows the cool-down', async () => {
    const primary = await upstream((_req, res) => json(res, 429, { error: 'rate limited' }, { 'retry-after': '30' }));
    const fallback = await named('fallback');
    const gw = await gateway([{ name: 'chat', backends: [{ host: primary.host }, { host: fallback.host, priority: 1 }] }]);
    const first = await post(gw, '{"model":"m"}');
    expect(first.status).toBe(200);
    expect(JSON.parse(first.body)).toMatchObject({ from: 'fallback', body: '{"model":"m"}' });
    // Cooling down: the next requests go straight to the fallback.
    for (let i = 0; i < 3; i++) expect(JSON.parse((await post(gw, '{}')).body)).toMatchObject({ from: 'fallback' });
    expect(primary.requests.length).toBe(1);
    expect(fallback.requests.length).toBe(4);
    const backends = JSON.parse((await send(`${gw.adminUrl}/backends`)).body) as { backends: { name: string; coolDown: { remainingSeconds: number; reason: string } | null }[] };
    const cooling = backends.backends.find((b) => b.name === primary.host)!.coolDown!;
    expect(cooling.reason).toBe('429 with Retry-After: 30');
    expect(cooling.remainingSeconds).toBeGreaterThan(0);
    expect(cooling.remainingSeconds).toBeLessThanOrEqual(30);
    expect(backends.backends.find((b) => b.name === fallback.host)!.coolDown).toBeNull();
    expect(await metricValue(gw, 'tollgate_retries_total{route="main/chat",kind="failover"}')).toBe(1);
    expect(await metricValue(gw, `tollgate_upstream_attempts_total{route="main/chat",backend="${primary.host}",outcome="429"}`)).toBe(1);
    expect(await metricValue(gw, `tollgate_upstream_attempts_total{route="main/chat",backend="${fallback.host}",outcome="2xx"}`)).toBe(4);
  });

  it('fails over on a refused connection, a 5xx, and a backend that accepts and never answers (bounded by the backend timeout)', async () => {
    const refused = await closedPort();
    const failing = await upstream((_req, res) => json(res, 502, { error: 'bad gateway' }));
    const hanging = await silent();
    const fallback = await named('fallback');
    const gw = await gateway([
      { name: 'refused', matches: [{ path: { value: '/refused' } }], backends: [{ host: refused }, { host: fallback.host, priority: 1 }] },
      { name: 'failing', matches: [{ path: { value: '/failing' } }], backends: [{ host: failing.host }, { host: fallback.host, priority: 1 }] },
      { name: 'hanging', matches: [{ path: { value: '/hanging' } }], timeouts: { backendRequest: '300ms' }, backends: [{ host: hanging.host }, { host: fallback.host, priority: 1 }] },
    ]);
    for (const path of ['/refused', '/failing', '/hanging']) {
      const r = await post(gw, '{"p":1}', path);
      expect(r.status, path).toBe(200);
      expect(JSON.parse(r.body), path).toMatchObject({ from: 'fallback', body: '{"p":1}' });
    }
    expect(failing.requests.length).toBe(1);
    expect(hanging.requests()).toBe(1);
  });

  it('never retries once bytes of a streamed answer reached the client: a reset mid-stream ends the client\'s response, and the proxy keeps serving', async () => {
    const resets = await upstream((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: {"choices":[{"delta":{"content":"first"}}]}\n\n', () => setImmediate(() => res.socket!.resetAndDestroy()));
    });
    const fallback = await named('fallback');
    const gw = await gateway([
      { name: 'chat', matches: [{ path: { value: '/v1' } }], retry: { codes: [500, 502, 503, 504], attempts: 2, backoff: '0s' }, backends: [{ host: resets.host }, { host: fallback.host, priority: 1 }] },
      { name: 'plain', matches: [{ path: { value: '/plain' } }], backends: [{ host: fallback.host }] },
    ]);
    const outcome = await new Promise<{ status: number; received: string; error: string | null }>((resolve) => {
      const req = httpRequest(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, agent: false }, (res) => {
        let received = '';
        res.on('data', (c: Buffer) => (received += c.toString()));
        res.on('error', (err) => resolve({ status: res.statusCode!, received, error: err.message }));
        res.on('end', () => resolve({ status: res.statusCode!, received, error: null }));
      });
      req.end('{"model":"m","stream":true}');
    });
    expect(outcome.status).toBe(200);
    expect(outcome.received).toContain('"first"');
    // The response was cut: the client learns it (an error, not an end that looks complete).
    expect(outcome.error).not.toBeNull();
    expect(fallback.requests.length).toBe(0);
    expect(resets.requests.length).toBe(1);
    // Nothing was tried again: the proxy decided before the client saw the connection close.
    expect(await metricValue(gw, 'tollgate_retries_total{route="main/chat",kind="failover"}')).toBe(0);
    expect(await metricValue(gw, 'tollgate_retries_total{route="main/chat",kind="retry"}')).toBe(0);
    // The proxy keeps serving.
    expect(JSON.parse((await post(gw, '{}', '/plain')).body)).toMatchObject({ from: 'fallback' });
  });

  it('a 429 storm (every backend 429): one 429 per client request, each backend called once at most, then one call per request while they cool down', async () => {
    const a = await upstream((_req, res) => json(res, 429, { error: 'a' }));
    const b = await upstream((_req, res) => json(res, 429, { error: 'b' }));
    const gw = await gateway([{ name: 'chat', retry: { codes: [429], attempts: 2, backoff: '1ms' }, backends: [{ host: a.host }, { host: b.host, priority: 1 }] }]);
    const first = await post(gw, '{}');
    expect(first.status).toBe(429);
    expect(JSON.parse(first.body)).toEqual({ error: 'b' });
    expect(a.requests.length + b.requests.length).toBe(2);
    // Both cooling down (the default 5s): each further request makes one call, no retry.
    const rest = await Promise.all(Array.from({ length: 20 }, () => post(gw, '{}')));
    expect(rest.map((r) => r.status)).toEqual(Array.from({ length: 20 }, () => 429));
    expect(a.requests.length + b.requests.length).toBe(22);
  });

  it('holds extra attempts to the retry budget: beyond it a request gets the answer it has', async () => {
    const release = deferred();
    const heldA: ServerResponse[] = [];
    const a = await upstream((_req, res) => {
      heldA.push(res);
      void release.promise.then(() => json(res, 429, { error: 'a' }, { 'retry-after': '0' }));
    });
    const heldB: ServerResponse[] = [];
    const b = await upstream((_req, res) => heldB.push(res));
    cleanups.push(async () => heldB.forEach((res) => res.destroy()));
    const gw = await gateway([{ name: 'chat', backends: [{ host: a.host }, { host: b.host, priority: 1 }] }], { retryBudgetPercent: 0, retryBudgetMinConcurrency: 3 });
    const answers = Array.from({ length: 12 }, () => post(gw, '{}'));
    await until(() => heldA.length === 12);
    release.resolve();
    // Three failovers hold the budget's three shares (held at b); the nine others get a's 429.
    const limited = await until(async () => ((await metricValue(gw, 'tollgate_retry_budget_exhausted_total{route="main/chat"}')) === 9 ? true : null));
    expect(limited).toBe(true);
    await until(() => heldB.length === 3);
    for (const res of heldB) json(res, 200, { from: 'b' });
    const statuses = (await Promise.all(answers)).map((r) => r.status).sort();
    expect(statuses).toEqual([...Array.from({ length: 3 }, () => 200), ...Array.from({ length: 9 }, () => 429)]);
    expect(b.requests.length).toBe(3);
  });

  it('charges a client request once against its budgets, with the usage of the attempt that answered', async () => {
    const a = await upstream((_req, res) => json(res, 503, { error: 'down' }, { 'retry-after': '0' }));
    const b = await named('b', 30);
    const gw = await gateway([
      {
        name: 'tokens',
        matches: [{ path: { value: '/v1/chat/completions' } }],
        policies: { traffic: { rateLimit: { local: [{ tokens: 70, unit: 'Hours' }] } } },
        backends: [{ host: a.host }, { host: b.host, priority: 1 }],
      },
      {
        name: 'requests',
        matches: [{ path: { value: '/requests' } }],
        policies: { traffic: { rateLimit: { local: [{ requests: 2, unit: 'Hours' }] } } },
        backends: [{ host: a.host }, { host: b.host, priority: 1 }],
      },
    ]);
    // Retry-After 0: no cool-down, every request fails over (two attempts, one charge of 30 tokens).
    const chat = () => post(gw, '{"model":"m","messages":[{"role":"user","content":"hi"}]}', '/v1/chat/completions');
    expect((await chat()).status).toBe(200);
    expect((await chat()).status).toBe(200);
    // 60 of 70 spent: the third passes and crosses the budget (charged twice, 120 would have refused it).
    expect((await chat()).status).toBe(200);
    expect((await chat()).status).toBe(429);
    expect(await metricValue(gw, 'tollgate_llm_tokens_total{route="main/tokens",model="m",source="reported"}')).toBe(90);
    expect(b.requests.length).toBe(3);
    // Requests: two client requests of two attempts each pass a budget of two.
    expect((await post(gw, '{}', '/requests')).status).toBe(200);
    expect((await post(gw, '{}', '/requests')).status).toBe(200);
    expect((await post(gw, '{}', '/requests')).status).toBe(429);
  });

  it('fails over across API formats: an OpenAI request answered by an Anthropic backend (translated both ways, charged once), and back', async () => {
    const received: { url: string; body: string }[] = [];
    const llm = await startMockLlm({ port: 0, onRequestBody: (r: ReceivedRequest, body: Buffer) => received.push({ url: r.url, body: body.toString() }) });
    cleanups.push(() => llm.close());
    const limited = await upstream((_req, res) => json(res, 429, { error: { message: 'rate limited', type: 'requests' } }, { 'retry-after': '0' }));
    const gw = await gateway([
      {
        name: 'to-anthropic',
        matches: [{ path: { type: 'Exact', value: '/v1/chat/completions' }, headers: [{ name: 'x-to', value: 'anthropic' }] }],
        policies: { traffic: { rateLimit: { local: [{ tokens: 1_000_000, unit: 'Hours' }] } } },
        backends: [{ host: limited.host }, { host: `127.0.0.1:${llm.port}`, priority: 1, provider: { type: 'Anthropic' } }],
      },
      {
        name: 'to-openai',
        matches: [{ path: { type: 'Exact', value: '/v1/chat/completions' }, headers: [{ name: 'x-to', value: 'openai' }] }],
        backends: [{ host: limited.host, provider: { type: 'Anthropic' } }, { host: `127.0.0.1:${llm.port}`, priority: 1 }],
      },
    ]);
    const chat = JSON.stringify({ model: 'mock-gpt', max_tokens: 8, messages: [{ role: 'user', content: 'fail over' }] });
    const send2 = (to: string) => send(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-to': to, 'x-mock-completion-tokens': '5' }, body: chat });
    const a = await send2('anthropic');
    expect(a.status, a.body).toBe(200);
    const answer = JSON.parse(a.body) as { object: string; usage: { total_tokens: number } };
    // Anthropic's answer, made the client's format again.
    expect(answer.object).toBe('chat.completion');
    expect(received.at(-1)!.url).toBe('/v1/messages');
    expect(await metricValue(gw, 'tollgate_llm_tokens_total{route="main/to-anthropic",model="mock-gpt",source="reported"}')).toBe(answer.usage.total_tokens);
    // The first backend was told Anthropic, the second is OpenAI-compatible: the request it gets is the client's, untranslated.
    const o = await send2('openai');
    expect(o.status, o.body).toBe(200);
    expect(received.at(-1)).toEqual({ url: '/v1/chat/completions', body: chat });
    expect(limited.requests.map((r) => r.url)).toEqual(['/v1/chat/completions', '/v1/messages']);
  });

  it('shows each attempt in the trace: backendCallStart and backendCallResult once per attempt', async () => {
    const a = await upstream((_req, res) => json(res, 500, { error: 'a' }));
    const b = await named('b');
    const gw = await gateway([{ name: 'chat', backends: [{ host: a.host }, { host: b.host, priority: 1 }] }]);
    const trace = await openTrace(gw.adminUrl);
    await trace.armed;
    expect((await post(gw, '{}')).status).toBe(200);
    const events = await trace.events;
    const calls = events.filter((e) => e.message.type === 'backendCallStart' || e.message.type === 'backendCallResult').map((e) => e.message);
    expect(calls).toEqual([
      { type: 'backendCallStart', target: a.host },
      { type: 'backendCallResult', status: 500, error: null },
      { type: 'backendCallStart', target: b.host },
      { type: 'backendCallResult', status: 200, error: null },
    ]);
  });
});

describe('examples/failover.yaml', () => {
  it('loads: a route that retries and fails over from priority 0 to 1, with the settings it names', async () => {
    const loaded = await loadConfigFile(fileURLToPath(new URL('../../../examples/failover.yaml', import.meta.url)));
    const route = loaded.snapshot.binds[0]!.listeners[0]!.routes[0]!;
    expect(route.retry).toEqual({ codes: [502, 503, 504], attempts: 1, backoffMs: 200 });
    expect(route.backends.map((b) => [b.name, b.priority ?? 0])).toEqual([
      ['127.0.0.1:9000', 0],
      ['127.0.0.1:9001', 1],
    ]);
    expect(loaded.config.config).toMatchObject({ retryBudgetPercent: 20, retryBudgetMinConcurrency: 10, maxRetryBodyBytes: 1048576, coolDown: '5s', maxCoolDown: '300s' });
  });
});
