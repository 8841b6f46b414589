// The official openai client, unchanged, against the mock: what gateway tests rely on.
import OpenAI, { APIError, InternalServerError, NotFoundError, RateLimitError } from 'openai';
import { describe, expect, it } from 'vitest';
import type { MockLlm } from '../src/index.js';
import { start } from './helpers.js';

function clientFor(server: MockLlm): OpenAI {
  return new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'sk-test', maxRetries: 0 });
}

const messages: OpenAI.Chat.ChatCompletionMessageParam[] = [
  { role: 'system', content: 'You are terse.' },
  { role: 'user', content: 'Hello there, tollgate gateway!' },
];
// 14 + 30 characters of message text -> ceil(44 / 4) prompt tokens; 16 completion words by default.
const expectedUsage = { prompt_tokens: 11, completion_tokens: 16, total_tokens: 27 };
const expectedText = Array.from({ length: 4 }, () => 'Hello there tollgate gateway').join(' ');

describe('official openai client', () => {
  it('gets a non-streaming completion with content and usage', async () => {
    const client = clientFor(await start());
    const completion = await client.chat.completions.create({ model: 'mock-gpt', messages });
    expect(completion.object).toBe('chat.completion');
    expect(completion.model).toBe('mock-gpt');
    expect(completion.choices).toHaveLength(1);
    expect(completion.choices[0]?.message).toMatchObject({ role: 'assistant', content: expectedText });
    expect(completion.choices[0]?.finish_reason).toBe('stop');
    expect(completion.usage).toEqual(expectedUsage);
  });

  it('honours max_tokens and the token headers', async () => {
    const client = clientFor(await start());
    const capped = await client.chat.completions.create({ model: 'mock-gpt', messages, max_tokens: 3 });
    expect(capped.choices[0]?.message.content).toBe('Hello there tollgate');
    expect(capped.usage?.completion_tokens).toBe(3);

    const forced = await client.chat.completions.create(
      { model: 'mock-gpt', messages },
      { headers: { 'x-mock-prompt-tokens': '1000', 'x-mock-completion-tokens': '5' } },
    );
    expect(forced.usage).toEqual({ prompt_tokens: 1000, completion_tokens: 5, total_tokens: 1005 });
    expect(forced.choices[0]?.message.content).toBe('Hello there tollgate gateway Hello');
  });

  it('leaves usage out with x-mock-usage: none', async () => {
    const client = clientFor(await start());
    const completion = await client.chat.completions.create({ model: 'mock-gpt', messages }, { headers: { 'x-mock-usage': 'none' } });
    expect(completion.usage).toBeUndefined();
    expect(completion.choices[0]?.message.content).toBe(expectedText);
  });

  it('streams one word per chunk and ends on [DONE] without a usage chunk by default', async () => {
    const client = clientFor(await start());
    const stream = await client.chat.completions.create({ model: 'mock-gpt', messages, stream: true });
    const chunks: OpenAI.Chat.ChatCompletionChunk[] = [];
    for await (const chunk of stream) chunks.push(chunk);

    expect(chunks).toHaveLength(1 + 16);
    expect(chunks[0]?.choices[0]?.delta.role).toBe('assistant');
    const content = chunks.map((chunk) => chunk.choices[0]?.delta.content ?? '').join('');
    expect(content).toBe(expectedText);
    expect(chunks.map((chunk) => chunk.choices[0]?.finish_reason ?? null)).toEqual([...Array<null>(16).fill(null), 'stop']);
    expect(chunks.every((chunk) => chunk.usage === undefined)).toBe(true);
  });

  it('ends the stream with a usage-only chunk when include_usage is set', async () => {
    const client = clientFor(await start());
    const stream = await client.chat.completions.create({
      model: 'mock-gpt',
      messages,
      stream: true,
      stream_options: { include_usage: true },
    });
    const chunks: OpenAI.Chat.ChatCompletionChunk[] = [];
    for await (const chunk of stream) chunks.push(chunk);

    const last = chunks.at(-1);
    expect(last?.choices).toEqual([]);
    expect(last?.usage).toEqual(expectedUsage);
    expect(chunks.slice(0, -1).every((chunk) => chunk.usage === null)).toBe(true);
    expect(chunks).toHaveLength(1 + 16 + 1);
  });

  it('sends no usage chunk with x-mock-usage: none even when include_usage is set', async () => {
    const client = clientFor(await start());
    const stream = await client.chat.completions.create(
      { model: 'mock-gpt', messages, stream: true, stream_options: { include_usage: true } },
      { headers: { 'x-mock-usage': 'none', 'x-mock-completion-tokens': '2' } },
    );
    const chunks: OpenAI.Chat.ChatCompletionChunk[] = [];
    for await (const chunk of stream) chunks.push(chunk);
    expect(chunks).toHaveLength(3);
    expect(chunks.every((chunk) => chunk.usage === undefined && chunk.choices.length === 1)).toBe(true);
  });

  it('lists and retrieves models', async () => {
    const client = clientFor(await start({ models: ['gpt-4o-mini', 'gpt-4o'] }));
    const ids: string[] = [];
    for await (const model of client.models.list()) ids.push(model.id);
    expect(ids).toEqual(['gpt-4o-mini', 'gpt-4o']);
    const model = await client.models.retrieve('gpt-4o');
    expect(model).toMatchObject({ id: 'gpt-4o', object: 'model', owned_by: 'tollgate' });
  });

  it('throws RateLimitError on an injected 429', async () => {
    const client = clientFor(await start());
    const error: unknown = await client.chat.completions
      .create({ model: 'mock-gpt', messages }, { headers: { 'x-mock-status': '429' } })
      .then(() => undefined, (caught: unknown) => caught);
    expect(error).toBeInstanceOf(RateLimitError);
    expect(error).toMatchObject({ status: 429, code: 'rate_limit_exceeded', type: 'requests' });
  });

  it('throws InternalServerError on an injected 500, also for a streaming request', async () => {
    const client = clientFor(await start());
    for (const stream of [false, true]) {
      const error: unknown = await client.chat.completions
        .create({ model: 'mock-gpt', messages, stream }, { headers: { 'x-mock-status': '500' } })
        .then(() => undefined, (caught: unknown) => caught);
      expect(error).toBeInstanceOf(InternalServerError);
      expect(error).toMatchObject({ status: 500, type: 'server_error' });
    }
  });

  it('throws NotFoundError for a model outside the configured list', async () => {
    const client = clientFor(await start({ models: ['gpt-4o'] }));
    const error: unknown = await client.chat.completions
      .create({ model: 'gpt-5', messages })
      .then(() => undefined, (caught: unknown) => caught);
    expect(error).toBeInstanceOf(NotFoundError);
    expect(error).toMatchObject({ status: 404, code: 'model_not_found', param: 'model' });
  });

  it('surfaces a stream reset after the first content chunk as an error, not a clean end', async () => {
    const client = clientFor(await start());
    const stream = await client.chat.completions.create(
      { model: 'mock-gpt', messages, stream: true },
      { headers: { 'x-mock-error': 'reset-mid-stream' } },
    );
    const contents: string[] = [];
    const consumed = (async () => {
      for await (const chunk of stream) contents.push(chunk.choices[0]?.delta.content ?? '');
    })();
    await expect(consumed).rejects.toThrow();
    expect(contents).toEqual(['', 'Hello']);
  });

  it('reports a reset before any answer as a connection error', async () => {
    const client = clientFor(await start());
    const error: unknown = await client.chat.completions
      .create({ model: 'mock-gpt', messages }, { headers: { 'x-mock-error': 'reset' } })
      .then(() => undefined, (caught: unknown) => caught);
    expect(error).toBeInstanceOf(APIError);
    expect(error).toMatchObject({ status: undefined });
  });
});
