// The transformation policy end to end over real sockets: request headers set, added and
// removed with values from the consumer and the request; fields of a JSON body set and removed
// (a forced model, a capped max_tokens, include_usage on streams only) with the rest of the
// body byte for byte and the content-length fixed; response headers; the route's transformation
// replacing the Gateway's; what authorization sees (the client's model); and the refusals an
// adversarial client meets: a body that is not JSON (400), too large (413), too deep (400), an
// expression that fails (500, counted), a value that would inject a header (500), an input over
// its bound (431). The trace and /config_dump show it, and never a credential it sets.
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import type { TraceEvent } from '@tollgate/api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { echoed, openTrace, send, simpleConfig, startGateway, startUpstream, type RawResponse, type TestGateway, type Upstream } from './helpers.js';

const KEY_ALICE = 'sk-alice-0123456789abcdef';
const KEY_BOB = 'sk-bob-0123456789abcdef0';
const PROVIDER_KEY = 'sk-provider-9f8e7d6c5b4a39281706';
const TEAM_TOKEN = 'tok_4f9a2b7c1d8e3f60a5b9c2d7e1f4a8b3c6d0e9f2';
let dir: string;
let up: Upstream;
let gw: TestGateway;

const CHAT = '/v1/chat/completions';

/** Fields of a JSON body: the model forced, max_tokens capped at 64, usage asked of streams only, user removed. */
const BODY_EDITS = {
  set: [
    { path: 'model', value: '"mock-small"' },
    { path: 'max_tokens', value: 'llm.maxTokens == 0 || llm.maxTokens > 64 ? 64 : llm.maxTokens' },
    { path: 'stream_options.include_usage', value: 'true', when: 'llm.stream' },
    { path: 'metadata.team', value: 'consumer.group' },
  ],
  remove: ['user', 'max_completion_tokens'],
};

function routes(keys: string) {
  const apiKey = { file: keys };
  const route = (name: string, prefix: string, traffic?: Record<string, unknown>) => ({ name, matches: [{ path: { type: 'PathPrefix', value: prefix } }], ...(traffic ? { policies: { traffic } } : {}), backends: [{ host: up.host }] });
  return [
    route('chat', CHAT, {
      apiKey,
      // The client's model is what the allow-list sees: the transformation runs after it.
      authorization: { rules: [{ name: 'client-models', action: 'Allow', expression: 'llm.model in ["mock-large", ""]' }] },
      transformation: {
        request: {
          headers: {
            set: [
              { name: 'x-team', value: 'consumer.group' },
              { name: 'authorization', value: `"Bearer ${PROVIDER_KEY}"` },
              { name: 'x-team-token', value: 'consumer.labels["token"]', when: '"token" in consumer.labels' },
              { name: 'x-client-model', value: 'llm.model' },
            ],
            add: [{ name: 'x-via', value: '"tollgate"' }],
            remove: ['x-debug'],
          },
          body: BODY_EDITS,
        },
        response: { headers: { set: [{ name: 'x-served-for', value: 'consumer.name' }], remove: ['x-backend-secret'] } },
      },
    }),
    route('headers', '/headers', {
      transformation: { request: { headers: { set: [{ name: 'x-path-length', value: 'size(request.path)' }, { name: 'x-agent', value: 'request.headers["user-agent"]' }] } } },
    }),
    route('inject', '/inject', {
      transformation: { request: { headers: { set: [{ name: 'x-model', value: 'llm.model' }, { name: 'x-suffix', value: '"a" + "\\r\\n" + request.method', when: '"x-inject" in request.headers' }] } } },
    }),
    route('force', '/force', { transformation: { request: { body: { set: [{ path: 'model', value: '"mock-small"' }] } } } }),
    route('bytes', '/bytes', { transformation: { request: { body: { set: [{ path: 'data', value: '[bytes(request.method)]' }] } } } }),
    route('inherit', '/inherit'),
  ];
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tollgate-transform-'));
  const keys = join(dir, 'keys.json');
  await writeFile(
    keys,
    JSON.stringify([
      { key: KEY_ALICE, consumer: 'alice', group: 'team-a', labels: { token: TEAM_TOKEN } },
      { key: KEY_BOB, consumer: 'bob', group: 'team-b' },
    ]),
  );
  up = await startUpstream((req, res, body) => {
    const text = JSON.stringify({ method: req.method, url: req.url, headers: req.headers, body: body.toString('utf8') });
    res.writeHead(200, { 'content-type': 'application/json', 'x-backend-secret': 'internal', 'content-length': Buffer.byteLength(text) });
    res.end(text);
  });
  gw = await startGateway((port) => ({
    config: { maxRequestBodyBytes: 4096, cel: { maxHeaderLength: 256 } },
    ...simpleConfig(port, routes(keys), {
      policies: { traffic: { transformation: { request: { headers: { set: [{ name: 'x-gateway', value: '"listener"' }] } } } } },
    }),
  }));
});

afterAll(async () => {
  await gw?.close();
  await up?.close();
  await rm(dir, { recursive: true, force: true });
});

const chat = (body: string, headers: Record<string, string> = {}) =>
  send(`${gw.url}${CHAT}`, { method: 'POST', headers: { authorization: `Bearer ${KEY_ALICE}`, 'content-type': 'application/json', ...headers }, body });

const metricsText = async () => (await fetch(`http://${gw.gateway.ops.metrics.address}/metrics`)).text();
/** tollgate_transformations_total of a route of the listener `main`. */
const counted = (text: string, route: string, result: string) => Number(new RegExp(`^tollgate_transformations_total\\{route="main/${route}",result="${result}"\\} (\\d+)$`, 'm').exec(text)?.[1] ?? 0);

/** Requests the backend received while `f` ran. */
async function reached(f: () => Promise<unknown>): Promise<number> {
  const before = up.requests.length;
  await f();
  return up.requests.length - before;
}

function expectRefused(r: RawResponse, status: number, code: string, text: RegExp): void {
  expect(r.status, r.body).toBe(status);
  expect(r.headers['x-tollgate-error']).toBe(code);
  const message = r.headers['content-type'] === 'application/json' ? (JSON.parse(r.body) as { error: { message: string; code: string } }).error.message : r.body;
  expect(message).toMatch(text);
}

describe('request headers', () => {
  it('sets, adds and removes headers with values from the consumer and the request; the Gateway-level one is replaced', async () => {
    const r = await chat(JSON.stringify({ model: 'mock-large', messages: [] }), { 'x-debug': 'on', 'x-via': 'client', 'x-team': 'forged' });
    expect(r.status, r.body).toBe(200);
    const h = echoed(r).headers;
    expect(h['x-team']).toBe('team-a');
    expect(h.authorization).toBe(`Bearer ${PROVIDER_KEY}`);
    expect(h['x-team-token']).toBe(TEAM_TOKEN);
    expect(h['x-client-model']).toBe('mock-large');
    expect(h['x-via']).toBe('client,tollgate');
    expect(h['x-debug']).toBeUndefined();
    // The route sets its own transformation: the listener's is not applied.
    expect(h['x-gateway']).toBeUndefined();
    // A condition that is false skips its edit: bob has no token label.
    const bob = await chat(JSON.stringify({ model: 'mock-large', messages: [] }), { authorization: `Bearer ${KEY_BOB}` });
    expect(echoed(bob).headers['x-team']).toBe('team-b');
    expect(echoed(bob).headers['x-team-token']).toBeUndefined();
  });

  it('numbers are written as text; a route without its own transformation gets the Gateway\'s', async () => {
    const r = await send(`${gw.url}/headers/abc`, { headers: { 'user-agent': 'curl/8' } });
    expect(echoed(r).headers['x-path-length']).toBe('12');
    expect(echoed(r).headers['x-agent']).toBe('curl/8');
    expect(echoed(await send(`${gw.url}/inherit`)).headers['x-gateway']).toBe('listener');
  });
});

describe('the JSON body', () => {
  it('forces the model, caps max_tokens, removes fields; the other members go byte for byte and content-length is the new length', async () => {
    // Spacing, a big integer and a duplicate key the backend must see as the client wrote them.
    const sent = '{ "model" : "mock-large", "messages":[{"role":"user","content":"héllo"}],  "seed": 12345678901234567890, "max_tokens": 5000, "user":"u1", "metadata": {"trace": 9007199254740993}, "temperature": 0.5 }';
    const r = await chat(sent);
    expect(r.status, r.body).toBe(200);
    const e = echoed(r);
    expect(Number(e.headers['content-length'])).toBe(Buffer.byteLength(e.body));
    expect(e.body).toBe(
      '{"model":"mock-small","messages":[{"role":"user","content":"héllo"}],"seed": 12345678901234567890,"max_tokens":64,"metadata":{"trace":9007199254740993,"team":"team-a"},"temperature": 0.5}',
    );
  });

  it('a chunked body goes upstream with the length of the edited one', async () => {
    const r = await chat('{"model":"mock-large","messages":[]}', { 'transfer-encoding': 'chunked' });
    const e = echoed(r);
    expect(e.headers['transfer-encoding']).toBeUndefined();
    expect(Number(e.headers['content-length'])).toBe(Buffer.byteLength(e.body));
    expect((JSON.parse(e.body) as { model: string }).model).toBe('mock-small');
  });

  it('a duplicated key the edit reaches is written once: a backend keeping the first sees the forced value', async () => {
    const r = await chat('{"model":"evil-first","model":"mock-large","max_tokens":10,"messages":[]}');
    expect(JSON.parse(echoed(r).body)).toEqual({ model: 'mock-small', max_tokens: 10, messages: [], metadata: { team: 'team-a' } });
    expect(echoed(r).body.match(/"model"/g)).toHaveLength(1);
  });

  it('a condition on the stream: include_usage is added to streams only, next to the client\'s stream_options', async () => {
    const streamed = JSON.parse(echoed(await chat('{"model":"mock-large","stream":true,"stream_options":{"x":1},"messages":[]}')).body) as Record<string, unknown>;
    expect(streamed.stream_options).toEqual({ x: 1, include_usage: true });
    const plain = JSON.parse(echoed(await chat('{"model":"mock-large","messages":[]}')).body) as Record<string, unknown>;
    expect(plain).not.toHaveProperty('stream_options');
    expect(plain.max_tokens).toBe(64);
  });

  it("authorization decides on the client's model; the expressions see it too; the backend gets the forced one", async () => {
    // mock-small is what the transformation forces, but no rule allows a client to ask for it.
    const refused = await chat(JSON.stringify({ model: 'mock-small', messages: [] }));
    expect(refused.status).toBe(403);
    expect(refused.headers['x-tollgate-error']).toBe('TG_FORBIDDEN');
    const r = await chat(JSON.stringify({ model: 'mock-large', messages: [] }));
    expect(r.status).toBe(200);
    expect(echoed(r).headers['x-client-model']).toBe('mock-large');
    expect((JSON.parse(echoed(r).body) as { model: string }).model).toBe('mock-small');
  });

  it('a request without a body is forwarded without one', async () => {
    const r = await send(`${gw.url}${CHAT}`, { headers: { authorization: `Bearer ${KEY_ALICE}` } });
    expect(r.status, r.body).toBe(200);
    expect(echoed(r).body).toBe('');
  });
});

describe('what a client cannot do', () => {
  it('a body that is not a JSON object is refused (400) before the backend', async () => {
    let r!: RawResponse;
    expect(await reached(async () => (r = await chat('model=mock-large')))).toBe(0);
    expectRefused(r, 400, 'TG_TRANSFORM_BODY_NOT_JSON', /request body is not a JSON object, and this route edits it: not JSON/);
    expect((await chat('[1,2]')).status).toBe(400);
    expectRefused(await chat('{"model":"mock-large"', { 'content-type': 'text/plain' }), 400, 'TG_TRANSFORM_BODY_NOT_JSON', /not JSON/);
  });

  it('a body larger than config.maxRequestBodyBytes is refused (413): the forced model cannot be escaped by padding', async () => {
    const padded = JSON.stringify({ model: 'mock-large', messages: [{ role: 'user', content: 'x'.repeat(5000) }] });
    let r!: RawResponse;
    expect(await reached(async () => (r = await send(`${gw.url}/force`, { method: 'POST', body: padded })))).toBe(0);
    expectRefused(r, 413, 'TG_TRANSFORM_BODY_TOO_LARGE', /larger than config\.maxRequestBodyBytes \(4096\)/);
    expect(r.headers.connection).toBe('close');
    // On a route whose authorization rules read the model, they refuse it first (413 of their own).
    expect((await chat(padded)).headers['x-tollgate-error']).toBe('TG_AUTH_BODY_TOO_LARGE');
    // Within the bound, and once edited beyond it: refused too (the edit cannot be made).
    // 4090 bytes: within the bound until "m" becomes "mock-small".
    const near = JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'x'.repeat(4090 - JSON.stringify({ model: 'm', messages: [{ role: 'user', content: '' }] }).length) }] });
    expectRefused(await send(`${gw.url}/force`, { method: 'POST', body: near }), 413, 'TG_TRANSFORM_BODY_TOO_LARGE', /the transformed body is 4\d{3} bytes, more than config\.maxRequestBodyBytes/);
  });

  it('a body nested too deep is refused (400)', async () => {
    const deep = `{"model":"m","x":${'['.repeat(200)}${']'.repeat(200)}}`;
    let r!: RawResponse;
    expect(await reached(async () => (r = await chat(deep)))).toBe(0);
    expectRefused(r, 400, 'TG_REQUEST_BODY_TOO_DEEP', /nested too deeply/);
  });

  it('a value that would inject a header (CR/LF from the body, or computed) refuses the request (500), counted', async () => {
    const before = await metricsText();
    let r!: RawResponse;
    const injected = JSON.stringify({ model: 'gpt\r\nx-evil: 1' });
    expect(await reached(async () => (r = await send(`${gw.url}/inject`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: injected })))).toBe(0);
    expectRefused(r, 500, 'TG_TRANSFORM_FAILED', /request\.headers\.set\[0\]\.value: the value has U\+000D at index 3/);
    expectRefused(await send(`${gw.url}/inject`, { headers: { 'x-inject': '1' } }), 500, 'TG_TRANSFORM_FAILED', /request\.headers\.set\[1\]\.value: the value has U\+000D at index 1/);
    expect(counted(await metricsText(), 'inject', 'invalid_value') - counted(before, 'inject', 'invalid_value')).toBe(2);
    // The same route serves a clean request.
    expect(echoed(await send(`${gw.url}/inject`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"model":"m"}' })).headers['x-model']).toBe('m');
  });

  it('an expression that fails (a header the request lacks) refuses with 500 naming the field, counted by result', async () => {
    const before = await metricsText();
    let r!: RawResponse;
    expect(await reached(async () => (r = await send(`${gw.url}/headers/x`)))).toBe(0);
    expectRefused(r, 500, 'TG_TRANSFORM_FAILED', /^the transformation of this route failed: request\.headers\.set\[1\]\.value could not be evaluated: .*user-agent/);
    const bytes = await send(`${gw.url}/bytes`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expectRefused(bytes, 500, 'TG_TRANSFORM_FAILED', /request\.body\.set\[0\]\.value: bytes have no JSON form/);
    // An API client gets OpenAI's error shape.
    expect(JSON.parse(bytes.body)).toMatchObject({ error: { code: 'TG_TRANSFORM_FAILED', param: null } });
    const after = await metricsText();
    expect(counted(after, 'headers', 'evaluation_error') - counted(before, 'headers', 'evaluation_error')).toBe(1);
    expect(counted(after, 'bytes', 'invalid_value') - counted(before, 'bytes', 'invalid_value')).toBe(1);
  });

  it('an input over its bound is refused (431) before anything is evaluated', async () => {
    let r!: RawResponse;
    expect(await reached(async () => (r = await send(`${gw.url}/headers/x`, { headers: { 'user-agent': 'u', 'x-long': 'v'.repeat(300) } })))).toBe(0);
    expectRefused(r, 431, 'TG_EXPRESSION_INPUT_TOO_LARGE', /request\.headers: header "x-long" is 300 characters long, more than the 256/);
    expect(counted(await metricsText(), 'headers', 'input_too_large')).toBe(1);
  });
});

describe('what an operator sees', () => {
  async function traced(path: string, init: Parameters<typeof send>[1]): Promise<TraceEvent[]> {
    const s = await openTrace(gw.adminUrl);
    await s.armed;
    await send(`${gw.url}${path}`, init);
    return s.events;
  }
  const snapshot = (events: TraceEvent[], stage: string) =>
    events.map((e) => e.message).find((m): m is Extract<TraceEvent['message'], { type: 'requestSnapshot' }> => m.type === 'requestSnapshot' && m.stage === stage)!;

  it('the trace shows the transformation, the transformed request and what it did; never a credential it sets', async () => {
    const events = await traced(CHAT, { method: 'POST', headers: { authorization: `Bearer ${KEY_ALICE}`, 'content-type': 'application/json' }, body: '{"model":"mock-large","messages":[],"user":"u"}' });
    const policy = events.map((e) => e.message).find((m) => m.type === 'policySelection') as { effectivePolicy: Record<string, { source: string; config: { request: { headers: { set: { name: string; value: unknown }[] } } } }[] | null> };
    const t = policy.effectivePolicy.transformation![0]!;
    expect(t.source).toBe('route');
    expect(t.config.request.headers.set.map((h) => [h.name, h.value])).toEqual([
      ['x-team', 'consumer.group'],
      ['authorization', '[redacted]'],
      ['x-team-token', 'consumer.labels["token"]'],
      ['x-client-model', 'llm.model'],
    ]);
    const state = snapshot(events, 'route policies').requestState;
    expect(state.transformation).toEqual({ source: 'route', result: 'applied', headers: ['x-team', 'authorization', 'x-team-token', 'x-client-model', 'x-via', 'x-debug'], body: ['model', 'max_tokens', 'metadata.team', 'user', 'max_completion_tokens'], skipped: ['request.body.set[2]'], note: null });
    expect(state.request.headers['x-team']).toBe('team-a');
    expect(state.request.headers.authorization).toBe('[redacted]');
    // A value that looks like a credential, under a name that is not one, is redacted too.
    expect(state.request.headers['x-team-token']).toBe('[redacted]');
    const text = JSON.stringify(events);
    for (const secret of [PROVIDER_KEY, TEAM_TOKEN, KEY_ALICE]) expect(text).not.toContain(secret);
    const final = events.map((e) => e.message).find((m) => m.type === 'responseSnapshot' && m.stage === 'final response') as { requestState: { response: { headers: Record<string, string> } } };
    expect(final.requestState.response.headers['x-served-for']).toBe('alice');
    expect(final.requestState.response.headers['x-backend-secret']).toBeUndefined();
  });

  it('a refusal shows in the route policies snapshot with its result and the field, and no backend events', async () => {
    const events = await traced('/inject', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'a\nb' }) });
    const state = snapshot(events, 'route policies').requestState.transformation!;
    expect(state.result).toBe('invalid_value');
    expect(state.note).toMatch(/^request\.headers\.set\[0\]\.value: the value has U\+000A/);
    expect(events.some((e) => e.message.type === 'backendCallStart')).toBe(false);
  });

  it('/config_dump shows each policy\'s transformation with credential-like values redacted', async () => {
    const text = await (await fetch(`${gw.adminUrl}/config_dump`)).text();
    expect(text).not.toContain(PROVIDER_KEY);
    const dump = JSON.parse(text) as { policies: { target: { name: string }; policy: { transformation: { request: { headers: { set: { name: string; value: unknown }[] } } } | null } }[] };
    const chatPolicy = dump.policies.find((p) => p.target.name === 'main/chat')!.policy;
    expect(chatPolicy.transformation!.request.headers.set[1]).toEqual({ name: 'authorization', value: '[redacted]', when: null });
    expect(dump.policies.find((p) => p.target.name === 'main')!.policy.transformation).toEqual({ request: { headers: { set: [{ name: 'x-gateway', value: '"listener"', when: null }], add: [], remove: [] }, body: null }, response: { headers: null } });
  });

  it('the response headers are set and removed after the backend answered', async () => {
    const r = await chat('{"model":"mock-large","messages":[]}');
    expect(r.headers['x-served-for']).toBe('alice');
    expect(r.headers['x-backend-secret']).toBeUndefined();
  });
});

describe('examples/transformation.yaml', () => {
  it('loads and transforms as its comments say', async () => {
    const file = (name: string) => fileURLToPath(new URL(`../../../examples/${name}`, import.meta.url));
    type Route = { name: string; backends: { host: string }[]; policies?: { traffic: { apiKey?: { file: string } } } };
    const example = parse(readFileSync(file('transformation.yaml'), 'utf8')) as { config: Record<string, unknown>; binds: { port: number; listeners: { routes: Route[] }[] }[] };
    const g = await startGateway((port) => {
      const c = structuredClone(example);
      c.config = {};
      c.binds[0]!.port = port;
      for (const r of c.binds[0]!.listeners[0]!.routes) {
        r.backends = [{ host: up.host }];
        if (r.policies?.traffic.apiKey) r.policies.traffic.apiKey.file = file('auth-api-keys.yaml');
      }
      return c;
    });
    try {
      const body = '{"model":"gpt-4o","max_tokens":5000,"max_completion_tokens":6000,"messages":[{"role":"user","content":"hi"}]}';
      const r = await send(`${g.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: 'Bearer sk-example-team-a-0001', 'content-type': 'application/json', 'x-debug': '1' }, body });
      expect(r.status, r.body).toBe(200);
      const e = echoed(r);
      expect(JSON.parse(e.body)).toEqual({ model: 'gpt-4o-mini', max_tokens: 1024, messages: [{ role: 'user', content: 'hi' }] });
      expect([e.headers['x-team'], e.headers['x-user'], e.headers['x-debug']]).toEqual(['research', 'team-a', undefined]);
      expect(r.headers['x-served-model']).toBe('gpt-4o-mini');
      // The allow-list sees the client's model.
      const other = await send(`${g.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: 'Bearer sk-example-team-a-0001', 'content-type': 'application/json' }, body: '{"model":"o1","messages":[]}' });
      expect(other.status).toBe(403);
    } finally {
      await g.close();
    }
  });
});
