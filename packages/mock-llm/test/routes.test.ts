// Models list, health, unknown paths, body cap and the request hooks.
import { request as httpRequest } from 'node:http';
import { describe, expect, it } from 'vitest';
import { chatBody, fetchRaw, json, postChat, start } from './helpers.js';
import type { ReceivedRequest } from '../src/index.js';

describe('routes', () => {
  it('lists the default model and accepts any model name when none are configured', async () => {
    const server = await start();
    const res = await fetchRaw(`${server.url}/v1/models`);
    expect(res.status).toBe(200);
    expect(json(res.text)).toEqual({
      object: 'list',
      data: [{ id: 'mock-gpt', object: 'model', created: 1_700_000_000, owned_by: 'tollgate' }],
    });
    expect((await postChat(server, chatBody({ model: 'whatever' }))).status).toBe(200);
  });

  it('lists configured models and refuses others with model_not_found', async () => {
    const server = await start({ models: ['a', 'b', 'a'] });
    expect(json((await fetchRaw(`${server.url}/v1/models?limit=5`)).text)).toMatchObject({ data: [{ id: 'a' }, { id: 'b' }] });
    expect(json((await fetchRaw(`${server.url}/v1/models/b`)).text)).toMatchObject({ id: 'b', object: 'model' });
    const missing = await fetchRaw(`${server.url}/v1/models/c`);
    expect(missing.status).toBe(404);
    expect(json(missing.text)).toMatchObject({ error: { code: 'model_not_found', param: 'model' } });
    const refused = await postChat(server, chatBody({ model: 'c' }));
    expect(refused.status).toBe(404);
    expect(json(refused.text)).toMatchObject({
      error: { message: 'The model `c` does not exist or you do not have access to it. Available models: a, b.', type: 'invalid_request_error' },
    });
  });

  it('answers /healthz with 200', async () => {
    const server = await start();
    const res = await fetchRaw(`${server.url}/healthz`);
    expect(res).toMatchObject({ status: 200, text: 'ok\n' });
  });

  it.each([
    ['GET', '/v1/chat/completions'],
    ['POST', '/v1/models'],
    ['GET', '/v1/completions'],
    ['DELETE', '/healthz'],
    ['GET', '/v1/models/%E0%A4%A'],
  ])('answers %s %s with OpenAI’s 404', async (method, path) => {
    const server = await start();
    const res = await fetchRaw(`${server.url}${path}`, { method });
    expect(res.status).toBe(404);
    expect(json(res.text)).toEqual({
      error: { message: `Invalid URL (${method} ${path})`, type: 'invalid_request_error', param: null, code: null },
    });
  });

  it('answers 413 for a body over the limit, declared or chunked, and keeps the connection usable', async () => {
    const server = await start({ maxBodyBytes: 1024 });
    const big = chatBody({ messages: [{ role: 'user', content: 'x'.repeat(2048) }] });
    const declared = await postChat(server, big);
    expect(declared.status).toBe(413);
    expect(json(declared.text)).toMatchObject({ error: { type: 'invalid_request_error', message: expect.stringContaining('1024 bytes') as unknown } });

    const chunked = await new Promise<number>((resolve, reject) => {
      const req = httpRequest(`${server.url}/v1/chat/completions`, { method: 'POST', agent: false }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on('error', reject);
      for (let i = 0; i < 4; i++) req.write('x'.repeat(512));
      req.end();
    });
    expect(chunked).toBe(413);
    expect((await postChat(server, chatBody())).status).toBe(200);
  });

  it('counts requests and reports each to onRequest before handling it', async () => {
    const seen: ReceivedRequest[] = [];
    const server = await start({ onRequest: (request) => seen.push(request) });
    await postChat(server, chatBody(), { 'x-tenant': 'blue' });
    await fetchRaw(`${server.url}/nope?q=1`);
    expect(server.requestCount).toBe(2);
    expect(seen.map((request) => [request.method, request.url])).toEqual([
      ['POST', '/v1/chat/completions'],
      ['GET', '/nope?q=1'],
    ]);
    expect(seen[0]?.headers['x-tenant']).toBe('blue');
  });

  it('picks a free port for port 0 and rejects a port in use with a clear error', async () => {
    const first = await start();
    expect(first.port).toBeGreaterThan(0);
    expect(first.url).toBe(`http://127.0.0.1:${first.port}`);
    await expect(start({ port: first.port })).rejects.toThrow(`cannot listen on 127.0.0.1:${first.port}: port ${first.port} is already in use`);
  });

  it('rejects invalid options', async () => {
    await expect(start({ port: 70000 })).rejects.toThrow(RangeError);
    await expect(start({ latencyMsPerToken: -1 })).rejects.toThrow(/latencyMsPerToken/);
  });
});
