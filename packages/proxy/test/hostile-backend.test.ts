// Backends are outside input too: a response split inside a multi-byte character, an endless
// SSE line, a compressed body. Each is passed to the client without corruption and its
// tokens counted (reported where the usage can be read, estimated where it cannot).
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { gzipSync, gunzipSync } from 'node:zlib';
import { request as httpRequest, type ServerResponse } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { send, simpleConfig, startGateway, startUpstream, type TestGateway } from './helpers.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

/** Resolves when the proxy's upstream client (undici, in this process) has read a chunk of a response body. */
function upstreamReadsAChunk(): Promise<void> {
  const channel = 'undici:request:bodyChunkReceived';
  return new Promise((resolve) => {
    const onChunk = () => {
      unsubscribe(channel, onChunk);
      resolve();
    };
    subscribe(channel, onChunk);
  });
}
const usageEvent = (total: number) => `data: ${JSON.stringify({ choices: [], usage: { prompt_tokens: 1, completion_tokens: total - 1, total_tokens: total } })}\n\n`;

/** A metered gateway in front of a backend that answers with `respond`. */
async function meteredGateway(respond: (res: ServerResponse, headers: Record<string, string | string[] | undefined>) => Promise<void> | void, config: Record<string, unknown> = {}): Promise<{ gw: TestGateway; seen: Record<string, string | string[] | undefined>[] }> {
  const seen: Record<string, string | string[] | undefined>[] = [];
  const up = await startUpstream((req, res) => {
    seen.push(req.headers);
    void respond(res, req.headers);
  });
  cleanups.push(() => up.close());
  const route = { name: 'chat', policies: { traffic: { rateLimit: { local: [{ tokens: 1_000_000, unit: 'Hours' }] } } }, backends: [{ host: up.host }] };
  const gw = await startGateway((port) => ({ config, ...simpleConfig(port, [route]) }));
  cleanups.push(() => gw.close());
  return { gw, seen };
}

function chat(gw: TestGateway, stream: boolean) {
  const body = JSON.stringify({ model: 'm', stream, messages: [{ role: 'user', content: 'hi' }] });
  return send(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
}

async function tokens(gw: TestGateway, source: 'reported' | 'estimated'): Promise<number | null> {
  const text = await gw.gateway.runtime.metrics.registry.metrics();
  const m = new RegExp(`tollgate_llm_tokens_total\\{route="main/chat",model="m",source="${source}"\\} (\\d+)`).exec(text);
  return m ? Number(m[1]) : null;
}

describe('multi-byte characters split across chunks', () => {
  for (const clientAsks of [false, true]) {
    it(`reach the client intact (${clientAsks ? 'the client asked for usage: stream unchanged' : 'the gateway asked for usage: its chunk removed'})`, async () => {
      const event = `data: ${JSON.stringify({ choices: [{ delta: { content: 'héllo 😀 wörld' } }] })}\n\n`;
      const bytes = Buffer.from(event);
      const cut = bytes.indexOf(Buffer.from('😀')) + 2; // inside the 4-byte emoji
      const { gw } = await meteredGateway(async (res) => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        // The second half is written once the proxy has read the first: two reads, split
        // inside the emoji, whatever the machine's timing.
        const read = upstreamReadsAChunk();
        res.write(bytes.subarray(0, cut));
        await read;
        res.write(bytes.subarray(cut));
        res.end(`${usageEvent(9)}data: [DONE]\n\n`);
      });
      const body = JSON.stringify({ model: 'm', stream: true, ...(clientAsks ? { stream_options: { include_usage: true } } : {}), messages: [] });
      const r = await send(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
      expect(r.body).toBe(clientAsks ? `${event}${usageEvent(9)}data: [DONE]\n\n` : `${event}data: [DONE]\n\n`);
      expect(await tokens(gw, 'reported')).toBe(9);
    });
  }
});

describe('an SSE line longer than config.maxSseLineBytes', () => {
  it('is passed through unparsed and the tokens are estimated', async () => {
    const long = `data: ${JSON.stringify({ choices: [{ delta: { content: 'x'.repeat(200_000) } }] })}\n\n`;
    const { gw } = await meteredGateway((res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(long.slice(0, 1000));
      res.end(`${long.slice(1000)}${usageEvent(7)}data: [DONE]\n\n`);
    }, { maxSseLineBytes: 4096 });
    const r = await chat(gw, true);
    expect(r.status).toBe(200);
    // Parsing stopped, so nothing was removed: the client gets every byte.
    expect(r.body).toBe(`${long}${usageEvent(7)}data: [DONE]\n\n`);
    expect(await tokens(gw, 'reported')).toBeNull();
    expect(await tokens(gw, 'estimated')).toBeGreaterThan(0);
  });
});

describe('compressed backend responses', () => {
  it('metered routes ask for identity; a backend that compresses anyway is passed through unchanged and counted', async () => {
    const json = JSON.stringify({ choices: [{ message: { content: 'hi' } }], usage: { prompt_tokens: 3, completion_tokens: 8, total_tokens: 11 } });
    const gz = gzipSync(json);
    const { gw, seen } = await meteredGateway((res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' });
      res.end(gz);
    });
    const res = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', 'accept-encoding': 'gzip' }, body: JSON.stringify({ model: 'm', messages: [] }) });
    expect(res.status).toBe(200);
    // fetch decodes gzip itself: the client read exactly the backend's body.
    expect(await res.text()).toBe(json);
    expect(seen[0]!['accept-encoding']).toBe('identity');
    expect(await tokens(gw, 'reported')).toBe(11);
  });

  it('a gzip SSE stream keeps its usage chunk (nothing is removed from a compressed stream) and is counted', async () => {
    const sse = `data: ${JSON.stringify({ choices: [{ delta: { content: 'a' } }] })}\n\n${usageEvent(5)}data: [DONE]\n\n`;
    const { gw } = await meteredGateway((res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream', 'content-encoding': 'gzip' });
      res.end(gzipSync(sse));
    });
    const raw = await new Promise<Buffer>((resolve, reject) => {
      const chunks: Buffer[] = [];
      const req = httpRequest(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' } }, (res) => {
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve(Buffer.concat(chunks)));
      });
      req.on('error', reject);
      req.end(JSON.stringify({ model: 'm', stream: true, messages: [] }));
    });
    expect(gunzipSync(raw).toString()).toBe(sse);
    expect(await tokens(gw, 'reported')).toBe(5);
  });
});

describe('request bodies over config.maxRequestBodyBytes', () => {
  it('are refused with 413 on a metered route (declared or chunked), and forwarded on others', async () => {
    const up = await startUpstream((_req, res, body) => res.end(`got ${body.length}`));
    cleanups.push(() => up.close());
    const gw = await startGateway((port) => ({
      config: { maxRequestBodyBytes: 2048 },
      ...simpleConfig(port, [
        { name: 'chat', matches: [{ path: { value: '/v1' } }], policies: { traffic: { rateLimit: { local: [{ tokens: 1000, unit: 'Hours' }] } } }, backends: [{ host: up.host }] },
        { name: 'files', backends: [{ host: up.host }] },
      ]),
    }));
    cleanups.push(() => gw.close());
    const big = JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'x'.repeat(5000) }] });
    const declared = await send(`${gw.url}/v1/chat`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: big });
    expect(declared.status).toBe(413);
    expect(declared.body).toMatch(/too large/);
    const chunked = await send(`${gw.url}/v1/chat`, { method: 'POST', headers: { 'content-type': 'application/json', 'transfer-encoding': 'chunked' }, body: big });
    expect(chunked.status).toBe(413);
    expect(up.requests).toHaveLength(0);
    expect((await send(`${gw.url}/files`, { method: 'POST', body: big })).body).toBe(`got ${big.length}`);
    expect((await send(`${gw.url}/v1/chat`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'm', messages: [] }) })).status).toBe(200);
  });
});
