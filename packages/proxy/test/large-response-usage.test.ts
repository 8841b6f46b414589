// What a response costs when it is too large to hold, reports no usage, or is cut short, over
// real sockets with real backends and the official openai client: the usage of a JSON body far
// over the held limit (a logprobs payload) is found wherever the backend put it; a response
// whose usage is unknown is charged at least its request's reservation; a stream cut off is
// charged for everything it generated (reasoning, tool-call arguments, refusal), not only its
// content.
import { once } from 'node:events';
import { request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import OpenAI from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import { MAX_HELD_BYTES } from '../src/llm/usage-meter.js';
import { send, simpleConfig, startGateway, startUpstream, type TestGateway, type Upstream } from './helpers.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

async function gateway(backend: Upstream, tokens: number): Promise<TestGateway> {
  const route = { name: 'chat', matches: [{ path: { type: 'PathPrefix', value: '/v1' } }], policies: { traffic: { rateLimit: { local: [{ tokens, unit: 'Hours' }] } } }, backends: [{ host: backend.host }] };
  const gw = await startGateway((port) => simpleConfig(port, [route]));
  cleanups.push(() => gw.close());
  return gw;
}

async function backend(handler: Parameters<typeof startUpstream>[0]): Promise<Upstream> {
  const up = await startUpstream(handler);
  cleanups.push(() => up.close());
  return up;
}

/** `top_logprobs: 20` for `n` tokens: about 1.1 KB of JSON per token. */
function logprobs(n: number) {
  const top = Array.from({ length: 20 }, (_, i) => ({ token: `alt${i}`, logprob: -1.25 - i, bytes: [97, 108, 116] }));
  return { content: Array.from({ length: n }, () => ({ token: 'tok', logprob: -0.5, bytes: [116, 111, 107], top_logprobs: top })) };
}

const USAGE = { prompt_tokens: 10, completion_tokens: 99_990, total_tokens: 100_000 };
/** Big enough that no variant fits in what the meter holds. */
const BIG = logprobs(6000);

type Placement = 'last' | 'first' | 'between' | 'escaped key';

/** A chat completion with a logprobs payload, its usage where `placement` says. */
function bigCompletion(placement: Placement): string {
  const choice = { index: 0, message: { role: 'assistant', content: 'ok' }, logprobs: BIG, finish_reason: 'stop' };
  const head = { id: 'chatcmpl-1', object: 'chat.completion', created: 1, model: 'm' };
  switch (placement) {
    case 'last':
      return JSON.stringify({ ...head, choices: [choice], usage: USAGE });
    case 'first':
      return JSON.stringify({ usage: USAGE, ...head, choices: [choice] });
    case 'between':
      return JSON.stringify({ ...head, choices: [choice, choice], usage: USAGE, system_fingerprint: 'fp' });
    case 'escaped key':
      return JSON.stringify({ ...head, choices: [choice] }).replace(/}$/, `,"us\\u0061ge":${JSON.stringify(USAGE)}}`);
  }
}

/** Writes the body in 64 KiB pieces, as a backend streaming its JSON does: the usage key can fall across two. */
function writeInPieces(res: ServerResponse, body: string, contentType = 'application/json'): void {
  const buf = Buffer.from(body);
  res.writeHead(200, { 'content-type': contentType });
  for (let i = 0; i < buf.length; i += 65_521) res.write(buf.subarray(i, i + 65_521));
  res.end();
}

const metricsText = async (gw: TestGateway) => (await fetch(`http://${gw.gateway.ops.metrics.address}/metrics`)).text();

function tokensCounted(text: string, source: 'reported' | 'estimated'): number | null {
  const m = new RegExp(`tollgate_llm_tokens_total\\{route="main/chat",model="m",source="${source}"\\} (\\d+)`).exec(text);
  return m ? Number(m[1]) : null;
}

describe('a JSON response larger than the meter holds', () => {
  for (const placement of ['last', 'first', 'between', 'escaped key'] as const) {
    it(`is charged the usage it reports (usage ${placement}): four responses of 100,000 tokens against a 1,000-token budget pass one`, async () => {
      const body = bigCompletion(placement);
      expect(Buffer.byteLength(body)).toBeGreaterThan(MAX_HELD_BYTES);
      let served = 0;
      const up = await backend((_req, res) => {
        served++;
        writeInPieces(res, body);
      });
      const gw = await gateway(up, 1000);
      const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'sk-test', maxRetries: 0 });
      const outcomes: (number | string)[] = [];
      for (let i = 0; i < 4; i++) {
        try {
          const c = await client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'hi' }], logprobs: true, top_logprobs: 20 });
          outcomes.push(c.usage?.total_tokens ?? 'no usage');
        } catch (err) {
          outcomes.push(err instanceof OpenAI.RateLimitError ? 'rate limited' : String(err));
        }
      }
      expect(outcomes).toEqual([100_000, 'rate limited', 'rate limited', 'rate limited']);
      expect(served).toBe(1);
      expect(tokensCounted(await metricsText(gw), 'reported')).toBe(100_000);
    });
  }

  it('without usage is charged at least its reservation (max_tokens), large or small', async () => {
    const big = JSON.stringify({ id: 'c', object: 'chat.completion', model: 'm', choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, logprobs: BIG, finish_reason: 'stop' }] });
    const small = JSON.stringify({ id: 'c', object: 'chat.completion', model: 'm', choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }] });
    for (const body of [big, small]) {
      const up = await backend((_req, res) => writeInPieces(res, body));
      const gw = await gateway(up, 1000);
      const ask = (maxTokens: number) =>
        send(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }], max_completion_tokens: maxTokens }) });
      expect((await ask(1000)).status).toBe(200);
      // The first was admitted for 1,001 tokens (1 of prompt, 1,000 it may generate) and is
      // charged that: the budget is spent.
      expect(tokensCounted(await metricsText(gw), 'estimated')).toBe(1001);
      expect((await ask(1)).status).toBe(429);
    }
  });
});

/** An SSE chunk of a chat completion stream with this delta. */
const sse = (delta: Record<string, unknown>) => `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', model: 'm', choices: [{ index: 0, delta, finish_reason: null }] })}\n\n`;

/** About 1,600 tokens of text (o200k: a common word and its space are about one token). */
const THOUGHTS = 'the model thinks about it '.repeat(300);

const GENERATED: Record<string, Record<string, unknown>[]> = {
  reasoning_content: [{ role: 'assistant', reasoning_content: THOUGHTS }],
  reasoning: [{ role: 'assistant', reasoning: THOUGHTS }],
  'tool-call arguments': [
    { role: 'assistant', tool_calls: [{ index: 0, id: 't1', type: 'function', function: { name: 'search', arguments: '' } }] },
    { tool_calls: [{ index: 0, function: { arguments: JSON.stringify({ query: THOUGHTS }) } }] },
  ],
  refusal: [{ role: 'assistant', refusal: THOUGHTS }],
};

describe('a stream cut short', () => {
  for (const [what, deltas] of Object.entries(GENERATED)) {
    for (const cutBy of ['client', 'backend'] as const) {
      it(`is charged for its ${what} when the ${cutBy} cuts it`, async () => {
        const up = await backend((_req, res) => {
          res.writeHead(200, { 'content-type': 'text/event-stream' });
          for (const d of deltas) res.write(sse(d));
          // Nothing more, and no usage: the client gives up, or the backend's connection breaks
          // (once what it wrote is sent).
          res.write(sse({ content: 'end of what was sent' }), () => {
            if (cutBy === 'backend') res.socket?.destroy();
          });
        });
        const gw = await gateway(up, 1000);
        const body = JSON.stringify({ model: 'm', stream: true, messages: [{ role: 'user', content: 'hi' }] });
        const req = httpRequest(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } });
        req.on('error', () => undefined);
        req.end(body);
        const [res] = (await once(req, 'response')) as [IncomingMessage];
        expect(res.statusCode).toBe(200);
        res.on('error', () => undefined);
        // Everything the backend sent reached the client before the cut.
        let received = '';
        try {
          for await (const c of res) {
            received += (c as Buffer).toString();
            if (received.includes('end of what was sent')) break;
          }
        } catch {
          // the backend's cut reaches the client as a broken response
        }
        // The client cuts only once it has everything the backend sent.
        expect(cutBy === 'backend' || received.includes('end of what was sent')).toBe(true);
        if (cutBy === 'client') req.destroy();
        await expect.poll(async () => tokensCounted(await metricsText(gw), 'estimated')).not.toBeNull();
        expect(tokensCounted(await metricsText(gw), 'estimated')).toBeGreaterThan(1000);
        const next = await send(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
        expect(next.status).toBe(429);
      });
    }
  }

  it('is charged at least its reservation (max_tokens) when it generated little', async () => {
    const up = await backend((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(sse({ role: 'assistant', content: 'a few words' }), () => res.socket?.destroy());
    });
    const gw = await gateway(up, 1000);
    const body = JSON.stringify({ model: 'm', stream: true, max_tokens: 1000, messages: [{ role: 'user', content: 'hi' }] });
    await send(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body }).catch(() => undefined);
    await expect.poll(async () => tokensCounted(await metricsText(gw), 'estimated')).toBe(1001);
    expect((await send(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body })).status).toBe(429);
  });
});
