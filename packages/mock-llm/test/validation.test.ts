// Bad requests get OpenAI-style 400s naming the field, and never take the process down.
import { connect } from 'node:net';
import { describe, expect, it } from 'vitest';
import { chatBody, fetchRaw, json, postChat, start } from './helpers.js';

interface Case {
  name: string;
  body: string;
  param: string | null;
  message: RegExp;
}

const user = { role: 'user', content: 'hi' };
const cases: Case[] = [
  { name: 'invalid JSON', body: '{"model": ', param: null, message: /could not parse the JSON body/ },
  { name: 'a JSON array', body: '[]', param: null, message: /must be a JSON object, but got an array/ },
  { name: 'missing model', body: JSON.stringify({ messages: [user] }), param: 'model', message: /Missing required parameter: 'model'\. Send the model name as a string/ },
  { name: 'numeric model', body: JSON.stringify({ model: 4, messages: [user] }), param: 'model', message: /Invalid type for 'model': expected a string, but got a number/ },
  { name: 'missing messages', body: JSON.stringify({ model: 'm' }), param: 'messages', message: /Missing required parameter: 'messages'\. Send an array of messages/ },
  { name: 'string messages', body: JSON.stringify({ model: 'm', messages: 'hi' }), param: 'messages', message: /expected an array of objects, but got a string/ },
  { name: 'empty messages', body: JSON.stringify({ model: 'm', messages: [] }), param: 'messages', message: /empty array.*send at least one message/ },
  { name: 'a non-object message', body: JSON.stringify({ model: 'm', messages: [user, 'hi'] }), param: 'messages[1]', message: /expected an object, but got a string/ },
  { name: 'an unknown role', body: JSON.stringify({ model: 'm', messages: [{ role: 'robot', content: 'x' }] }), param: 'messages[0].role', message: /Supported values are: system, developer, user/ },
  { name: 'a missing role', body: JSON.stringify({ model: 'm', messages: [{ content: 'x' }] }), param: 'messages[0].role', message: /Missing required parameter/ },
  { name: 'numeric content', body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 5 }] }), param: 'messages[0].content', message: /expected a string or an array of content parts/ },
  { name: 'missing user content', body: JSON.stringify({ model: 'm', messages: [{ role: 'user' }] }), param: 'messages[0].content', message: /Missing required parameter/ },
  { name: 'a string stream flag', body: JSON.stringify({ model: 'm', messages: [user], stream: 'yes' }), param: 'stream', message: /expected a boolean, but got a string/ },
  { name: 'stream_options without stream', body: JSON.stringify({ model: 'm', messages: [user], stream_options: { include_usage: true } }), param: 'stream_options', message: /only allowed when 'stream' is enabled/ },
  { name: 'a non-boolean include_usage', body: JSON.stringify({ model: 'm', messages: [user], stream: true, stream_options: { include_usage: 1 } }), param: 'stream_options.include_usage', message: /expected a boolean/ },
  { name: 'max_tokens of 0', body: JSON.stringify({ model: 'm', messages: [user], max_tokens: 0 }), param: 'max_tokens', message: /integer of at least 1/ },
];

describe('request validation', () => {
  it.each(cases)('answers 400 for $name', async ({ body, param, message }) => {
    const server = await start();
    const res = await postChat(server, body);
    expect(res.status).toBe(400);
    expect(res.headers['content-type']).toBe('application/json');
    const parsed = json(res.text) as { error: { message: string } };
    expect(parsed).toEqual({ error: { message: expect.any(String) as unknown, type: 'invalid_request_error', param, code: null } });
    expect(parsed.error.message).toMatch(message);
  });

  it('keeps serving after garbage bytes, an invalid HTTP request and bad bodies', async () => {
    const server = await start();
    const reply = await new Promise<string>((resolve, reject) => {
      const socket = connect(server.port, '127.0.0.1', () => socket.end('\x00\x01 not http at all\r\n\r\n'));
      let text = '';
      socket.setEncoding('utf8');
      socket.on('data', (chunk: string) => (text += chunk));
      socket.on('close', () => resolve(text));
      socket.on('error', reject);
    });
    expect(reply).toMatch(/^HTTP\/1\.1 400/);
    await postChat(server, '\u0000');
    await postChat(server, 'null');
    const ok = await postChat(server, chatBody());
    expect(ok.status).toBe(200);
    expect((await fetchRaw(`${server.url}/healthz`)).status).toBe(200);
  });
});
