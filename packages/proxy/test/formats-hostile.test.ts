// Anthropic backends that misbehave in ways mock-llm does not: every byte in its own write, an
// error event mid-stream, an event past config.maxSseLineBytes, events before message_start,
// a compressed body, an error status with a body that is not JSON, and a Messages client's
// stream cut short. Each is a clear answer to the client, tokens are charged, the gateway
// keeps serving.
import { gzipSync } from 'node:zlib';
import type { ServerResponse } from 'node:http';
import { describe, expect, it } from 'vitest';
import { closedAfterEach, send, simpleConfig, startGateway, startUpstream, type TestGateway } from './helpers.js';

const cleanups = closedAfterEach();

const ev = (type: string, data: Record<string, unknown>) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
const START = ev('message_start', { message: { id: 'msg_1', type: 'message', role: 'assistant', model: 'm', content: [], usage: { input_tokens: 7, output_tokens: 1 } } });
const TEXT = (text: string) => ev('content_block_delta', { index: 0, delta: { type: 'text_delta', text } });
const BLOCK = ev('content_block_start', { index: 0, content_block: { type: 'text', text: '' } });
const END = [ev('content_block_stop', { index: 0 }), ev('message_delta', { delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 3 } }), ev('message_stop', {})].join('');

async function gateway(respond: (res: ServerResponse) => Promise<void> | void, config: Record<string, unknown> = {}): Promise<TestGateway> {
  const up = await startUpstream((_req, res) => void respond(res));
  cleanups.push(() => up.close());
  const route = { name: 'chat', policies: { traffic: { rateLimit: { local: [{ tokens: 1_000_000, unit: 'Hours' }] } } }, backends: [{ host: up.host, provider: { type: 'Anthropic' } }] };
  const gw = await startGateway((port) => ({ config, ...simpleConfig(port, [route]) }));
  cleanups.push(() => gw.close());
  return gw;
}

function chat(gw: TestGateway, stream: boolean, path = '/v1/chat/completions') {
  const body = JSON.stringify(path.endsWith('/messages') ? { model: 'm', max_tokens: 10, stream, messages: [{ role: 'user', content: 'hi' }] } : { model: 'm', stream, messages: [{ role: 'user', content: 'hi' }] });
  return send(`${gw.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
}

async function tokens(gw: TestGateway, source: 'reported' | 'estimated'): Promise<number | null> {
  const text = await gw.gateway.runtime.metrics.registry.metrics();
  const m = new RegExp(`tollgate_llm_tokens_total\\{route="main/chat",model="m",source="${source}"\\} (\\d+)`).exec(text);
  return m ? Number(m[1]) : null;
}

/** The data objects of an OpenAI stream, and whether it ended with [DONE]. */
function chunks(body: string): { data: Record<string, unknown>[]; done: boolean } {
  const events = body.split('\n\n').filter((e) => e.startsWith('data: '));
  const done = events[events.length - 1] === 'data: [DONE]';
  return { data: events.filter((e) => e !== 'data: [DONE]').map((e) => JSON.parse(e.slice(6)) as Record<string, unknown>), done };
}

async function writeEach(res: ServerResponse, bytes: Buffer): Promise<void> {
  for (let i = 0; i < bytes.length; i++) await new Promise<void>((resolve) => res.write(bytes.subarray(i, i + 1), () => resolve()));
}

describe('a stream from an Anthropic backend', () => {
  it('translates the same whatever the chunking: every byte in its own write, multi-byte characters split', async () => {
    const gw = await gateway(async (res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      await writeEach(res, Buffer.from(START + BLOCK + TEXT('héllo ') + TEXT('😀 wörld') + END));
      res.end();
    });
    const r = await chat(gw, true);
    const { data, done } = chunks(r.body);
    expect(done).toBe(true);
    const text = data.map((c) => ((c.choices as { delta: { content?: string } }[])[0]?.delta.content ?? '')).join('');
    expect(text).toBe('héllo 😀 wörld');
    expect(await tokens(gw, 'reported')).toBe(10);
  });

  it('an error event ends the stream with an OpenAI error chunk and [DONE]', async () => {
    const gw = await gateway((res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end(START + BLOCK + TEXT('partial') + ev('error', { error: { type: 'overloaded_error', message: 'Overloaded' } }) + TEXT('after'));
    });
    const { data, done } = chunks((await chat(gw, true)).body);
    expect(done).toBe(true);
    expect(data[data.length - 1]).toEqual({ error: { message: 'Overloaded', type: 'overloaded_error', param: null, code: 'overloaded_error' } });
    expect(JSON.stringify(data)).not.toContain('after');
  });

  it('an event longer than config.maxSseLineBytes ends the stream with TG_FORMAT_BAD_RESPONSE; tokens estimated', async () => {
    const gw = await gateway((res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end(START + BLOCK + TEXT('x'.repeat(4096)) + END);
    }, { maxSseLineBytes: 1024 });
    const { data, done } = chunks((await chat(gw, true)).body);
    expect(done).toBe(true);
    expect(data[data.length - 1]).toMatchObject({ error: { code: 'TG_FORMAT_BAD_RESPONSE', message: expect.stringContaining('maxSseLineBytes') as string } });
    expect(await tokens(gw, 'estimated')).toBeGreaterThan(0);
  });

  it('an event before message_start, or one without a type, is a bad response', async () => {
    for (const first of [TEXT('early'), 'data: {"no":"type"}\n\n', 'data: [1,2]\n\n']) {
      const gw = await gateway((res) => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.end(first + START + END);
      });
      const { data, done } = chunks((await chat(gw, true)).body);
      expect(done).toBe(true);
      expect(data).toHaveLength(1);
      expect(data[0]).toMatchObject({ error: { code: 'TG_FORMAT_BAD_RESPONSE' } });
    }
  });
});

describe('a message from an Anthropic backend', () => {
  it('compressed although asked not to be is a 502', async () => {
    const gw = await gateway((res) => {
      const body = gzipSync(JSON.stringify({ type: 'message', content: [], usage: { input_tokens: 1, output_tokens: 1 } }));
      res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip', 'content-length': body.length });
      res.end(body);
    });
    const r = await chat(gw, false);
    expect(r.status).toBe(502);
    expect(r.headers['content-encoding']).toBeUndefined();
    expect(JSON.parse(r.body)).toMatchObject({ error: { code: 'TG_FORMAT_BAD_RESPONSE', message: expect.stringContaining('compressed') as string } });
  });

  it('an error status with a body that is not JSON keeps its status, in OpenAI shape', async () => {
    const gw = await gateway((res) => {
      res.writeHead(503, { 'content-type': 'text/html' });
      res.end('<h1>down</h1>');
    });
    const r = await chat(gw, false);
    expect(r.status).toBe(503);
    expect(r.headers['content-type']).toBe('application/json');
    expect(JSON.parse(r.body)).toEqual({ error: { message: 'the backend answered 503', type: 'server_error', param: null, code: null } });
  });

  it('a backend that resets mid-body is a 502 catalog answer; what the request was admitted for is charged', async () => {
    const gw = await gateway((res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': 1000 });
      res.write('{"type":"message","content":[', () => res.destroy());
    });
    const r = await chat(gw, false);
    expect(r.status).toBe(502);
    expect(r.headers['x-tollgate-error']).toBe('TG_UPSTREAM_RESET');
    expect(await tokens(gw, 'estimated')).toBeGreaterThan(0);
  });
});

describe('a Messages client (passthrough)', () => {
  it('gets the stream unchanged; one cut short is charged by estimate', async () => {
    const whole = START + BLOCK + TEXT('hello') + END;
    const gw = await gateway((res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end(whole);
    });
    const r = await chat(gw, true, '/v1/messages');
    expect(r.body).toBe(whole);
    expect(await tokens(gw, 'reported')).toBe(10);
    const cut = await gateway((res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end(START + BLOCK + TEXT('hello'));
    });
    const partial = await chat(cut, true, '/v1/messages');
    expect(partial.body).toBe(START + BLOCK + TEXT('hello'));
    expect(await tokens(cut, 'reported')).toBeNull();
    expect(await tokens(cut, 'estimated')).toBeGreaterThan(0);
  });
});

describe('a client whose body cannot be translated', () => {
  async function plainGateway(config: Record<string, unknown> = {}): Promise<{ gw: TestGateway; calls: () => number }> {
    let calls = 0;
    const up = await startUpstream((_req, res) => {
      calls++;
      res.end('{}');
    });
    cleanups.push(() => up.close());
    // No token limit: the body is read only because the backend needs it translated.
    const route = { name: 'chat', backends: [{ host: up.host, provider: { type: 'Anthropic' } }] };
    const gw = await startGateway((port) => ({ config, ...simpleConfig(port, [route]) }));
    cleanups.push(() => gw.close());
    return { gw, calls: () => calls };
  }

  it('a body that is not JSON, or not an object, is a 400 naming messages; the backend is not called', async () => {
    const { gw, calls } = await plainGateway();
    for (const body of ['not json', '[1,2]', '{"model":"m"}']) {
      const r = await send(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
      expect(r.status).toBe(400);
      expect(JSON.parse(r.body)).toMatchObject({ error: { type: 'invalid_request_error', param: 'messages', code: 'TG_FORMAT_UNSUPPORTED' } });
    }
    expect(calls()).toBe(0);
  });

  it('a body larger than config.maxRequestBodyBytes is a 413, on a route that counts no tokens too', async () => {
    const { gw, calls } = await plainGateway({ maxRequestBodyBytes: 1024 });
    const body = JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'x'.repeat(4096) }] });
    const r = await send(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    expect(r.status).toBe(413);
    expect(r.headers['x-tollgate-error']).toBe('TG_REQUEST_BODY_TOO_LARGE');
    expect(calls()).toBe(0);
  });
});
