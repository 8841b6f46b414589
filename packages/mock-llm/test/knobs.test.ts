// Per-request x-mock-* headers: injected statuses, delays and connection resets.
import type { IncomingMessage } from 'node:http';
import { describe, expect, it } from 'vitest';
import { SseReader, chatBody, chunkOf, json, postChat, send, start } from './helpers.js';
import { MOCK_HEADERS, type MockLlm } from '../src/index.js';

function sendChat(server: MockLlm, body: string, headers: Record<string, string>): Promise<IncomingMessage> {
  return send(`${server.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
}

describe('x-mock-status', () => {
  it.each([
    [429, { type: 'requests', code: 'rate_limit_exceeded' }],
    [500, { type: 'server_error', code: null }],
    [503, { type: 'server_error', code: null }],
    [401, { type: 'invalid_request_error', code: 'invalid_api_key' }],
    [400, { type: 'invalid_request_error', code: null }],
  ])('answers %i with an OpenAI-style error body', async (status, fields) => {
    const server = await start();
    const res = await postChat(server, chatBody(), { 'x-mock-status': String(status) });
    expect(res.status).toBe(status);
    expect(json(res.text)).toEqual({
      error: { message: `mock-llm: injected status ${status} (x-mock-status)`, param: null, ...fields },
    });
  });

  it('answers JSON, not SSE, for a streaming request', async () => {
    const server = await start();
    const res = await postChat(server, chatBody({ stream: true }), { 'x-mock-status': '429' });
    expect(res.status).toBe(429);
    expect(res.headers['content-type']).toBe('application/json');
  });

  it('sends x-mock-retry-after as the Retry-After of the injected status, as a rate-limited provider does', async () => {
    const server = await start();
    const seconds = await postChat(server, chatBody(), { 'x-mock-status': '429', 'x-mock-retry-after': '30' });
    expect(seconds.status).toBe(429);
    expect(seconds.headers['retry-after']).toBe('30');
    const date = await postChat(server, chatBody(), { 'x-mock-status': '503', 'x-mock-retry-after': 'Wed, 21 Oct 2026 07:28:00 GMT' });
    expect(date.headers['retry-after']).toBe('Wed, 21 Oct 2026 07:28:00 GMT');
    const none = await postChat(server, chatBody(), { 'x-mock-status': '429' });
    expect(none.headers['retry-after']).toBeUndefined();
  });

  it('applies to GET /v1/models too', async () => {
    const server = await start();
    const res = await send(`${server.url}/v1/models`, { headers: { 'x-mock-status': '502' } });
    expect(res.statusCode).toBe(502);
    res.resume();
  });
});

describe('header validation', () => {
  it.each([
    [MOCK_HEADERS.status, '200'],
    [MOCK_HEADERS.status, 'abc'],
    [MOCK_HEADERS.promptTokens, '-1'],
    [MOCK_HEADERS.completionTokens, '1.5'],
    [MOCK_HEADERS.completionTokens, '100001'],
    [MOCK_HEADERS.latencyMsPerToken, 'fast'],
    [MOCK_HEADERS.delayMs, '1e3'],
    [MOCK_HEADERS.usage, 'some'],
    [MOCK_HEADERS.error, 'explode'],
    [MOCK_HEADERS.retryAfter, 'x'.repeat(65)],
  ])('answers 400 naming %s for %j', async (header, value) => {
    const server = await start();
    const res = await postChat(server, chatBody(), { [header]: value });
    expect(res.status).toBe(400);
    const body = json(res.text) as { error: { message: string; param: string } };
    expect(body.error).toMatchObject({ type: 'invalid_request_error', param: header, code: null });
    expect(body.error.message).toContain(`'${header}'`);
    expect(body.error.message).toMatch(/Expected/);
  });
});

describe('x-mock-delay-ms', () => {
  it('holds the response headers back while other requests are answered', async () => {
    const received: string[] = [];
    let delayedArrived: () => void = () => undefined;
    const arrived = new Promise<void>((resolve) => (delayedArrived = resolve));
    const server = await start({
      onRequest: (request) => {
        received.push(request.url);
        if (request.headers['x-mock-delay-ms'] !== undefined) delayedArrived();
      },
    });
    let delayedAnswered = false;
    const delayed = sendChat(server, chatBody(), { 'x-mock-delay-ms': '600000' }).then(
      (res) => {
        delayedAnswered = true;
        return res;
      },
      (error: unknown) => error,
    );
    await arrived;
    // A request sent after the delayed one is answered in full while the delayed one has no headers yet.
    const quick = await postChat(server, chatBody());
    expect(quick.status).toBe(200);
    expect(delayedAnswered).toBe(false);
    expect(received).toHaveLength(2);
    // Closing the server ends the wait: the client sees the connection drop, not an answer.
    await server.close();
    const outcome = await delayed;
    expect(delayedAnswered).toBe(false);
    expect(outcome).toBeInstanceOf(Error);
  });

  it('then answers normally, or with the injected status', async () => {
    const server = await start();
    const ok = await postChat(server, chatBody(), { 'x-mock-delay-ms': '5' });
    expect(ok.status).toBe(200);
    const failed = await postChat(server, chatBody(), { 'x-mock-delay-ms': '5', 'x-mock-status': '504' });
    expect(failed.status).toBe(504);
  });
});

describe('x-mock-error', () => {
  it('reset: drops the connection without an answer, and the server keeps serving', async () => {
    const server = await start();
    const outcome = await sendChat(server, chatBody(), { 'x-mock-error': 'reset' }).then(
      (res) => res.statusCode,
      (error: unknown) => error,
    );
    expect(outcome).toBeInstanceOf(Error);
    expect(outcome).toMatchObject({ code: expect.stringMatching(/^(ECONNRESET|EPIPE)$/) as unknown });
    expect((await postChat(server, chatBody())).status).toBe(200);
  });

  it('reset-mid-stream: sends the role chunk and the first word, then drops the connection', async () => {
    const server = await start();
    const res = await sendChat(server, chatBody({ stream: true, stream_options: { include_usage: true } }), {
      'x-mock-error': 'reset-mid-stream',
    });
    expect(res.statusCode).toBe(200);
    const reader = new SseReader(res);
    const events = await reader.all();
    expect(events.map((event) => chunkOf(event).choices[0]?.delta)).toEqual([{ role: 'assistant', content: '' }, { content: 'Hello' }]);
    expect(reader.ended).toBe(false);
    expect(res.complete).toBe(false);
  });

  it('reset-mid-stream on a non-streaming request: headers and half the body, then the drop', async () => {
    const server = await start();
    const res = await sendChat(server, chatBody(), { 'x-mock-error': 'reset-mid-stream' });
    expect(res.statusCode).toBe(200);
    const declared = Number(res.headers['content-length']);
    let received = 0;
    res.on('data', (chunk: Buffer) => (received += chunk.length));
    const error = await new Promise<unknown>((resolve) => {
      res.on('error', resolve);
      res.on('end', () => resolve(undefined));
    });
    expect(error).toBeInstanceOf(Error);
    expect(res.complete).toBe(false);
    expect(received).toBeGreaterThan(0);
    expect(received).toBeLessThan(declared);
  });
});
