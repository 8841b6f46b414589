// Non-streaming chat completions over raw HTTP: body shape, determinism, token arithmetic.
import { describe, expect, it } from 'vitest';
import { chatBody, json, postChat, start } from './helpers.js';

describe('POST /v1/chat/completions (non-streaming)', () => {
  it('answers a chat.completion object with usage and a request id', async () => {
    const server = await start();
    const res = await postChat(server, chatBody({ model: 'any-model-name' }));
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('application/json');
    expect(res.headers['x-request-id']).toMatch(/^chatcmpl-mock-\d+$/);
    expect(json(res.text)).toMatchObject({
      id: res.headers['x-request-id'],
      object: 'chat.completion',
      model: 'any-model-name',
      choices: [{ index: 0, message: { role: 'assistant' }, finish_reason: 'stop' }],
      usage: { prompt_tokens: 11, completion_tokens: 16, total_tokens: 27 },
    });
  });

  it('replies the same text to the same prompt, built from the last user message', async () => {
    const server = await start();
    const body = chatBody({
      messages: [
        { role: 'user', content: 'first question' },
        { role: 'assistant', content: 'an answer' },
        { role: 'user', content: 'Rate-limit my tokens, please' },
      ],
    });
    const headers = { 'x-mock-completion-tokens': '6' };
    const [a, b] = await Promise.all([postChat(server, body, headers), postChat(server, body, headers)]);
    const content = (text: string): unknown => (json(text) as { choices: { message: { content: unknown } }[] }).choices[0]?.message.content;
    expect(content(a?.text ?? '')).toBe('Rate-limit my tokens please Rate-limit my');
    expect(content(b?.text ?? '')).toBe(content(a?.text ?? ''));
  });

  it('derives prompt tokens from all message text, including content parts', async () => {
    const server = await start();
    const res = await postChat(
      server,
      chatBody({
        messages: [
          { role: 'developer', content: 'abcdefgh' },
          { role: 'user', content: [{ type: 'text', text: 'one two' }, { type: 'image_url', image_url: { url: 'x' } }] },
        ],
        max_tokens: 2,
      }),
    );
    // 8 + 7 characters -> ceil(15 / 4) = 4
    expect(json(res.text)).toMatchObject({
      choices: [{ message: { content: 'one two' } }],
      usage: { prompt_tokens: 4, completion_tokens: 2, total_tokens: 6 },
    });
  });

  it('falls back to fixed words when the last user message has none', async () => {
    const server = await start({ completionTokens: 3 });
    const res = await postChat(server, chatBody({ messages: [{ role: 'user', content: '?!' }] }));
    expect(json(res.text)).toMatchObject({
      choices: [{ message: { content: 'mock reply from' } }],
      usage: { prompt_tokens: 1, completion_tokens: 3, total_tokens: 4 },
    });
  });

  it('lets x-mock-completion-tokens override max_tokens, down to an empty reply', async () => {
    const server = await start();
    const res = await postChat(server, chatBody({ max_tokens: 2 }), { 'x-mock-completion-tokens': '0' });
    expect(json(res.text)).toMatchObject({
      choices: [{ message: { content: '' } }],
      usage: { prompt_tokens: 11, completion_tokens: 0, total_tokens: 11 },
    });
  });

  it('prefers max_completion_tokens over max_tokens and ignores unknown OpenAI fields', async () => {
    const server = await start();
    const res = await postChat(
      server,
      chatBody({ max_completion_tokens: 1, max_tokens: 9, temperature: 0.2, tools: [], user: 'u-1', n: 1 }),
    );
    expect(res.status).toBe(200);
    expect(json(res.text)).toMatchObject({ usage: { completion_tokens: 1 } });
  });

  it('omits the usage field entirely with x-mock-usage: none', async () => {
    const server = await start();
    const res = await postChat(server, chatBody(), { 'x-mock-usage': 'none' });
    expect(res.status).toBe(200);
    expect(json(res.text)).not.toHaveProperty('usage');
  });
});
