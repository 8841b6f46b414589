// What a client sees of a refusal by authentication or authorization, through the official
// OpenAI clients (Node and Python `openai`) against mock-llm behind a real gateway: a 403 is a
// PermissionDeniedError and a 401 an AuthenticationError, carrying the gateway's message and
// catalog code in OpenAI's error shape; a client that is not an API client (no JSON body, no
// Accept: application/json) gets the catalog's plain text; a 429 is unchanged.
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { MockLlm } from '@tollgate/mock-llm';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pythonOpenaiAvailability, pythonOpenaiPath } from './support/python-openai.js';
import { send, simpleConfig, startGateway, type TestGateway, useMockLlm } from './helpers.js';

let llm: MockLlm;
useMockLlm((started) => (llm = started));
const python = pythonOpenaiAvailability();

// One call of the Python client; prints what it raised (or what it got) as JSON.
const PYTHON_CALL = `
import json, sys, openai
base_url, api_key, what, model = sys.argv[1:5]
client = openai.OpenAI(base_url=base_url, api_key=api_key, max_retries=0)
try:
    if what == "models":
        out = {"ok": [m.id for m in client.models.list()]}
    else:
        r = client.chat.completions.create(model=model, messages=[{"role": "user", "content": "hi"}])
        out = {"ok": r.choices[0].message.content}
except openai.APIStatusError as e:
    body = e.body if isinstance(e.body, dict) else {}
    out = {"error": type(e).__name__, "status": e.status_code, "message": body.get("message"), "code": e.code, "type": e.type, "param": e.param,
           "code_header": e.response.headers.get("x-tollgate-error"), "challenge": e.response.headers.get("www-authenticate")}
print(json.dumps(out))
`;

interface PythonResult {
  ok?: unknown;
  error?: string;
  status?: number;
  message?: string;
  code?: string;
  type?: string;
  param?: unknown;
  code_header?: string;
  challenge?: string | null;
}

async function pythonCall(gw: TestGateway, apiKey: string, what: 'chat' | 'models', model = 'mock-gpt'): Promise<PythonResult> {
  const { stdout } = await promisify(execFile)(pythonOpenaiPath(), ['-c', PYTHON_CALL, `${gw.url}/v1`, apiKey, what, model], { timeout: 60_000 });
  return JSON.parse(stdout) as PythonResult;
}

const client = (gw: TestGateway, apiKey = 'sk-test') => new OpenAI({ apiKey, baseURL: `${gw.url}/v1`, maxRetries: 0 });
const ask = (c: OpenAI, model = 'mock-gpt') => c.chat.completions.create({ model, messages: [{ role: 'user', content: 'hi' }] });

describe('403 from authorization rules', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    const backend = [{ host: `127.0.0.1:${llm.port}` }];
    gw = await startGateway((port) =>
      simpleConfig(port, [
        {
          name: 'chat',
          matches: [{ path: { type: 'Exact', value: '/v1/chat/completions' } }],
          policies: {
            traffic: {
              authorization: { rules: [{ name: 'no-large-models', action: 'Deny', expression: 'llm.model.startsWith("gpt-4.5")' }] },
              rateLimit: { local: [{ requests: 3, unit: 'Hours' }] },
            },
          },
          backends: backend,
        },
        {
          name: 'models',
          matches: [{ path: { type: 'Exact', value: '/v1/models' } }],
          policies: { traffic: { authorization: { rules: [{ name: 'listing-closed', action: 'Deny', expression: 'request.method == "GET"' }] } } },
          backends: backend,
        },
      ]),
    );
  });
  afterAll(async () => {
    await gw?.close();
  });

  it('Node openai: a PermissionDeniedError with the message, the code and the type', async () => {
    const err = await ask(client(gw), 'gpt-4.5-preview').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.PermissionDeniedError);
    const e = err as InstanceType<typeof OpenAI.PermissionDeniedError>;
    expect(e.status).toBe(403);
    expect(e.message).toBe('403 access denied: denied by rule no-large-models');
    expect(e.code).toBe('TG_FORBIDDEN');
    expect(e.type).toBe('permission_error');
    expect(e.param).toBeNull();
    expect(e.headers?.get('x-tollgate-error')).toBe('TG_FORBIDDEN');
    // A GET without a body is an API call by its Accept header.
    const listed = await client(gw).models.list().catch((x: unknown) => x);
    expect(listed).toBeInstanceOf(OpenAI.PermissionDeniedError);
    expect((listed as Error).message).toBe('403 access denied: denied by rule listing-closed');
  });

  it.skipIf(!python.run)('Python openai: a PermissionDeniedError with the message, the code and the type', async () => {
    expect(await pythonCall(gw, 'sk-test', 'chat', 'gpt-4.5-preview')).toEqual({
      error: 'PermissionDeniedError',
      status: 403,
      message: 'access denied: denied by rule no-large-models',
      code: 'TG_FORBIDDEN',
      type: 'permission_error',
      param: null,
      code_header: 'TG_FORBIDDEN',
      challenge: null,
    });
    expect(await pythonCall(gw, 'sk-test', 'models')).toMatchObject({ error: 'PermissionDeniedError', status: 403, message: 'access denied: denied by rule listing-closed' });
  });

  it('a client that is not an API client gets the plain text; Accept decides for a request without a JSON body', async () => {
    const post = (type: string) => send(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': type }, body: '{"model":"gpt-4.5"}' });
    const plain = await post('text/plain');
    expect([plain.status, plain.headers['content-type'], plain.body]).toEqual([403, 'text/plain; charset=utf-8', 'access denied: denied by rule no-large-models']);
    // A JSON body without an Accept header: an API call.
    const json = await post('application/json');
    expect([json.status, json.headers['content-type']]).toEqual([403, 'application/json']);
    expect(JSON.parse(json.body)).toEqual({ error: { message: 'access denied: denied by rule no-large-models', type: 'permission_error', param: null, code: 'TG_FORBIDDEN' } });
    const get = (accept?: string) => send(`${gw.url}/v1/models`, accept ? { headers: { accept } } : {});
    for (const accept of [undefined, '*/*', 'text/html', 'application/json;q=0']) {
      const r = await get(accept);
      expect([r.status, r.headers['content-type'], r.body], String(accept)).toEqual([403, 'text/plain; charset=utf-8', 'access denied: denied by rule listing-closed']);
    }
    for (const accept of ['application/json', 'text/html, Application/JSON; q=0.5', 'application/json; charset=utf-8']) {
      const r = await get(accept);
      expect([r.status, r.headers['content-type']], accept).toEqual([403, 'application/json']);
      expect(JSON.parse(r.body)).toEqual({ error: { message: 'access denied: denied by rule listing-closed', type: 'permission_error', param: null, code: 'TG_FORBIDDEN' } });
    }
  });

  it('a 429 keeps the body of the interface, for API clients too', async () => {
    const c = client(gw);
    let err: unknown;
    for (let i = 0; i < 4 && !err; i++) err = await ask(c).then(() => undefined, (e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.RateLimitError);
    expect((err as Error).message).toBe('429 rate limit exceeded');
  });
});

describe('401 from apiKey', () => {
  let gw: TestGateway;
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'tollgate-keys-'));
    const keys = join(dir, 'keys.yaml');
    await writeFile(keys, JSON.stringify([{ key: 'sk-team-a-0123456789', consumer: 'alice', group: 'team-a' }]));
    gw = await startGateway((port) =>
      simpleConfig(port, [
        {
          name: 'chat',
          matches: [{ path: { value: '/v1' } }],
          policies: {
            traffic: {
              apiKey: { file: keys },
              authorization: { rules: [{ name: 'team-a-small-models', action: 'Allow', expression: 'consumer.group == "team-a" && !llm.model.startsWith("gpt-4.5")' }] },
            },
          },
          backends: [{ host: `127.0.0.1:${llm.port}` }],
        },
      ]),
    );
  });
  afterAll(async () => {
    await gw?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('Node openai: a wrong key is an AuthenticationError with the message and code; the right key passes, or is refused by the rules', async () => {
    const err = await ask(client(gw, 'sk-wrong')).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.AuthenticationError);
    const e = err as InstanceType<typeof OpenAI.AuthenticationError>;
    expect(e.status).toBe(401);
    expect(e.message).toMatch(/^401 authentication required: /);
    expect(e.code).toBe('TG_UNAUTHENTICATED');
    expect(e.type).toBe('authentication_error');
    expect(e.message).not.toContain('sk-wrong');
    const ok = await ask(client(gw, 'sk-team-a-0123456789'));
    expect(ok.choices[0]!.message.content).toBeTruthy();
    const denied = await ask(client(gw, 'sk-team-a-0123456789'), 'gpt-4.5-preview').catch((x: unknown) => x);
    expect(denied).toBeInstanceOf(OpenAI.PermissionDeniedError);
    expect((denied as Error).message).toBe('403 access denied: no rule allows this request');
  });

  it.skipIf(!python.run)('Python openai: a wrong key is an AuthenticationError with the message and code', async () => {
    const r = await pythonCall(gw, 'sk-wrong', 'chat');
    expect(r).toMatchObject({ error: 'AuthenticationError', status: 401, code: 'TG_UNAUTHENTICATED', type: 'authentication_error', code_header: 'TG_UNAUTHENTICATED' });
    expect(r.message).toMatch(/^authentication required: /);
    expect(JSON.stringify(r)).not.toContain('sk-wrong');
    expect(await pythonCall(gw, 'sk-team-a-0123456789', 'chat')).toMatchObject({ ok: expect.any(String) as unknown });
  });

  it('the plain-text and the JSON answer carry the same challenge and code', async () => {
    const text = await send(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: 'Bearer sk-wrong' }, body: 'x' });
    const json = await send(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: 'Bearer sk-wrong', 'content-type': 'application/json' }, body: '{}' });
    expect([text.status, json.status]).toEqual([401, 401]);
    expect(text.headers['content-type']).toBe('text/plain; charset=utf-8');
    expect(json.headers['content-type']).toBe('application/json');
    expect(json.headers['www-authenticate']).toMatch(/^Bearer realm="tollgate"/);
    expect(json.headers['www-authenticate']).toBe(text.headers['www-authenticate']);
    expect(json.headers['x-tollgate-error']).toBe(text.headers['x-tollgate-error']);
    expect((JSON.parse(json.body) as { error: { message: string } }).error.message).toBe(text.body);
  });
});
