// SSE framing and chunk-by-chunk delivery, read byte for byte as a proxy sees them.
import { describe, expect, it } from 'vitest';
import { SseReader, chatBody, chunkOf, postChat, send, start } from './helpers.js';
import type { MockLlm } from '../src/index.js';

function openStream(server: MockLlm, body: string, headers: Record<string, string> = {}): Promise<SseReader> {
  return send(`${server.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body,
  }).then((response) => new SseReader(response));
}

describe('streaming (stream: true)', () => {
  it('frames every chunk as `data: <json>\\n\\n` and ends with `data: [DONE]\\n\\n`', async () => {
    const server = await start();
    const res = await postChat(server, chatBody({ stream: true }), { 'x-mock-completion-tokens': '3' });
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('text/event-stream');
    expect(res.headers['transfer-encoding']).toBe('chunked');
    expect(res.text.endsWith('\n\ndata: [DONE]\n\n')).toBe(true);
    const events = res.text.split('\n\n');
    expect(events.pop()).toBe('');
    expect(events).toHaveLength(1 + 3 + 1);
    for (const event of events) expect(event).toMatch(/^data: [^\n]+$/);
  });

  it('sends the role first, then one word per chunk, with finish_reason on the last word', async () => {
    const server = await start();
    const reader = await openStream(server, chatBody({ stream: true, model: 'stream-model' }), { 'x-mock-completion-tokens': '5' });
    const events = await reader.all();
    expect(events.pop()).toBe('data: [DONE]');
    const chunks = events.map(chunkOf);
    expect(chunks.map((chunk) => chunk.choices[0]?.delta)).toEqual([
      { role: 'assistant', content: '' },
      { content: 'Hello' },
      { content: ' there' },
      { content: ' tollgate' },
      { content: ' gateway' },
      { content: ' Hello' },
    ]);
    expect(chunks.map((chunk) => chunk.choices[0]?.finish_reason)).toEqual([null, null, null, null, null, 'stop']);
    const ids = new Set(chunks.map((chunk) => chunk.id));
    expect(ids.size).toBe(1);
    expect(chunks.every((chunk) => chunk.object === 'chat.completion.chunk' && chunk.model === 'stream-model')).toBe(true);
    expect(chunks.every((chunk) => !('usage' in chunk))).toBe(true);
  });

  it('adds a usage-only chunk with choices: [] before [DONE] when include_usage is true', async () => {
    const server = await start();
    const reader = await openStream(server, chatBody({ stream: true, stream_options: { include_usage: true } }), {
      'x-mock-completion-tokens': '2',
      'x-mock-prompt-tokens': '40',
    });
    const events = await reader.all();
    expect(events.at(-1)).toBe('data: [DONE]');
    const usageChunk = chunkOf(events.at(-2) ?? '');
    expect(usageChunk.choices).toEqual([]);
    expect(usageChunk.usage).toEqual({ prompt_tokens: 40, completion_tokens: 2, total_tokens: 42 });
    expect(events.slice(0, -2).map((event) => chunkOf(event).usage)).toEqual([null, null, null]);
  });

  it('sends no usage chunk when include_usage is false', async () => {
    const server = await start();
    const reader = await openStream(server, chatBody({ stream: true, stream_options: { include_usage: false } }), {
      'x-mock-completion-tokens': '1',
    });
    const events = await reader.all();
    expect(events).toHaveLength(3);
    expect(events.slice(0, -1).every((event) => chunkOf(event).choices.length === 1)).toBe(true);
  });

  it('closes an empty reply with a finish chunk', async () => {
    const server = await start();
    const reader = await openStream(server, chatBody({ stream: true }), { 'x-mock-completion-tokens': '0' });
    const events = await reader.all();
    expect(events.map((event) => (event === 'data: [DONE]' ? event : chunkOf(event).choices[0]))).toEqual([
      { index: 0, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null },
      { index: 0, delta: {}, logprobs: null, finish_reason: 'stop' },
      'data: [DONE]',
    ]);
  });

  it('delivers the first chunk while later ones are still being generated', async () => {
    // With ten minutes per token the second chunk cannot be on its way: anything the client reads
    // now was flushed on its own, before the stream ended.
    const server = await start();
    const reader = await openStream(server, chatBody({ stream: true }), { 'x-mock-latency-ms-per-token': '600000' });
    const first = await reader.next();
    expect(chunkOf(first ?? '').choices[0]?.delta).toEqual({ role: 'assistant', content: '' });
    expect(reader.ended).toBe(false);
    expect(reader.response.complete).toBe(false);
    reader.response.destroy();
    // The pending token timer must not hold the server open.
    await server.close();
  });

  it('applies the server-wide --latency-ms-per-token the same way', async () => {
    const server = await start({ latencyMsPerToken: 600_000 });
    const reader = await openStream(server, chatBody({ stream: true }));
    expect(chunkOf((await reader.next()) ?? '').choices[0]?.delta.role).toBe('assistant');
    expect(reader.response.complete).toBe(false);
    // A header of 0 overrides the server default.
    const fast = await openStream(server, chatBody({ stream: true }), { 'x-mock-latency-ms-per-token': '0' });
    expect((await fast.all()).at(-1)).toBe('data: [DONE]');
    await server.close();
  });
});
