// mock-llm's Anthropic Messages API (POST /v1/messages): the message and its SSE events as
// Anthropic sends them, usage, tools, Anthropic-shaped errors (extra fields refused as Anthropic
// does), the garbage and truncate faults on both APIs, and serving over TLS (option and CLI).
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { issueTestCertificate } from '@tollgate/testkit';
import { describe, expect, it } from 'vitest';
import { chatBody, fetchRaw, json, postChat, start } from './helpers.js';
import type { MockLlm } from '../src/index.js';

function postMessages(server: MockLlm, body: unknown, headers: Record<string, string> = {}) {
  return fetchRaw(`${server.url}/v1/messages`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
}

const BASE = { model: 'claude-mock', max_tokens: 100, messages: [{ role: 'user', content: 'alpha beta gamma' }] };

/** The events of an Anthropic stream: [event name, data object]. */
function events(text: string): [string, Record<string, unknown>][] {
  return text
    .split('\n\n')
    .filter((e) => e.trim())
    .map((e) => {
      const name = /^event: (.*)$/m.exec(e)?.[1] ?? '';
      const data = /^data: (.*)$/m.exec(e)?.[1] ?? 'null';
      return [name, JSON.parse(data) as Record<string, unknown>];
    });
}

describe('POST /v1/messages', () => {
  it('answers a message: the words of the last user turn, stop_reason, usage', async () => {
    const server = await start();
    const r = await postMessages(server, { ...BASE, system: 'be brief' }, { 'x-mock-completion-tokens': '3', 'x-mock-prompt-tokens': '21' });
    expect(r.status).toBe(200);
    expect(json(r.text)).toMatchObject({
      type: 'message',
      role: 'assistant',
      model: 'claude-mock',
      content: [{ type: 'text', text: 'alpha beta gamma' }],
      stop_reason: 'end_turn',
      stop_sequence: null,
      usage: { input_tokens: 21, output_tokens: 3 },
    });
  });

  it('stops at max_tokens and at a stop sequence', async () => {
    const server = await start();
    expect(json((await postMessages(server, { ...BASE, max_tokens: 2 })).text)).toMatchObject({ content: [{ text: 'alpha beta' }], stop_reason: 'max_tokens' });
    expect(json((await postMessages(server, { ...BASE, stop_sequences: ['gamma'] }, { 'x-mock-completion-tokens': '5' })).text)).toMatchObject({
      content: [{ text: 'alpha beta' }],
      stop_reason: 'stop_sequence',
      stop_sequence: 'gamma',
    });
  });

  it('answers tool_choice any or tool with a tool_use block', async () => {
    const server = await start();
    const tools = [{ name: 'first', input_schema: { type: 'object' } }, { name: 'second', input_schema: { type: 'object' } }];
    const r = await postMessages(server, { ...BASE, tools, tool_choice: { type: 'tool', name: 'second' } }, { 'x-mock-completion-tokens': '2' });
    expect(json(r.text)).toMatchObject({ content: [{ type: 'tool_use', name: 'second', input: { text: 'alpha beta' } }], stop_reason: 'tool_use' });
  });

  it('streams message_start, content_block_start, ping, deltas, content_block_stop, message_delta with usage, message_stop', async () => {
    const server = await start();
    const r = await postMessages(server, { ...BASE, stream: true }, { 'x-mock-completion-tokens': '2', 'x-mock-prompt-tokens': '8' });
    expect(r.headers['content-type']).toContain('text/event-stream');
    const list = events(r.text);
    expect(list.map(([name]) => name)).toEqual(['message_start', 'content_block_start', 'ping', 'content_block_delta', 'content_block_delta', 'content_block_stop', 'message_delta', 'message_stop']);
    expect(list.every(([name, data]) => data.type === name)).toBe(true);
    expect(list[0]![1]).toMatchObject({ message: { model: 'claude-mock', usage: { input_tokens: 8 } } });
    expect(list[3]![1]).toMatchObject({ delta: { type: 'text_delta', text: 'alpha' } });
    expect(list[4]![1]).toMatchObject({ delta: { type: 'text_delta', text: ' beta' } });
    expect(list[6]![1]).toMatchObject({ delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 2 } });
    const none = events((await postMessages(server, { ...BASE, stream: true }, { 'x-mock-usage': 'none' })).text);
    expect(JSON.stringify(none)).not.toContain('usage');
  });

  it("refuses what Anthropic refuses, in Anthropic's error shape: extra fields, no max_tokens", async () => {
    const server = await start();
    const extra = await postMessages(server, { ...BASE, stream: true, stream_options: { include_usage: true } });
    expect(extra.status).toBe(400);
    expect(json(extra.text)).toEqual({ type: 'error', error: { type: 'invalid_request_error', message: 'stream_options: Extra inputs are not permitted' } });
    const noMax = await postMessages(server, { model: 'm', messages: BASE.messages });
    expect(noMax.status).toBe(400);
    expect(json(noMax.text)).toMatchObject({ error: { message: expect.stringContaining('max_tokens') as string } });
    const injected = await postMessages(server, BASE, { 'x-mock-status': '529' });
    expect(injected.status).toBe(529);
    expect(json(injected.text)).toMatchObject({ type: 'error', error: { type: 'overloaded_error' } });
  });
});

describe('garbage and truncate faults', () => {
  it('send a body that is not JSON, or half of one, on both APIs', async () => {
    const server = await start();
    for (const post of [(h: Record<string, string>) => postMessages(server, BASE, h), (h: Record<string, string>) => postChat(server, chatBody(), h)]) {
      const garbage = await post({ 'x-mock-error': 'garbage' });
      expect(garbage.status).toBe(200);
      expect(() => JSON.parse(garbage.text) as unknown).toThrow();
      const truncated = await post({ 'x-mock-error': 'truncate' });
      expect(truncated.status).toBe(200);
      expect(Number(truncated.headers['content-length'])).toBe(Buffer.byteLength(truncated.text));
      expect(() => JSON.parse(truncated.text) as unknown).toThrow();
    }
  });

  it('end a stream early: after an event that is not JSON, or without its end', async () => {
    const server = await start();
    const garbage = await postMessages(server, { ...BASE, stream: true }, { 'x-mock-error': 'garbage' });
    expect(garbage.text).toContain('"text":\n\n');
    expect(garbage.text).not.toContain('message_stop');
    const truncated = await postMessages(server, { ...BASE, stream: true }, { 'x-mock-error': 'truncate' });
    expect(events(truncated.text).map(([n]) => n)).toEqual(['message_start', 'content_block_start', 'ping', 'content_block_delta']);
    const chat = await postChat(server, chatBody({ stream: true, stream_options: { include_usage: true } }), { 'x-mock-error': 'truncate' });
    expect(chat.text).not.toContain('[DONE]');
    expect(chat.text).not.toContain('"usage":{');
  });
});

describe('TLS', () => {
  const cert = issueTestCertificate({ commonName: 'mock', names: ['127.0.0.1'] });

  function getHttps(url: string, ca: string): Promise<{ status: number; text: string }> {
    return new Promise((resolve, reject) => {
      const req = httpsRequest(url, { ca, method: 'POST', headers: { 'content-type': 'application/json' } }, (res) => {
        let text = '';
        res.setEncoding('utf8').on('data', (c: string) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      });
      req.on('error', reject);
      req.end(JSON.stringify(BASE));
    });
  }

  it('serves https with the certificate given', async () => {
    const server = await start({ tls: cert });
    expect(server.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    const r = await getHttps(`${server.url}/v1/messages`, cert.cert);
    expect(r.status).toBe(200);
    expect(json(r.text)).toMatchObject({ type: 'message' });
  });

  it('the CLI serves https with --tls-cert-file and --tls-key-file, and refuses one without the other', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'mock-llm-tls-'));
    await writeFile(join(dir, 'cert.pem'), cert.cert);
    await writeFile(join(dir, 'key.pem'), cert.key);
    const bin = fileURLToPath(new URL('../bin/mock-llm.js', import.meta.url));
    const child = spawn(process.execPath, [bin, '--port', '0', '--tls-cert-file', join(dir, 'cert.pem'), '--tls-key-file', join(dir, 'key.pem')], { stdio: 'pipe' });
    try {
      const [line] = (await once(createInterface({ input: child.stdout }), 'line')) as [string];
      const url = /listening on (https:\/\/\S+)/.exec(line)?.[1];
      expect(url).toBeDefined();
      expect((await getHttps(`${url!}/v1/messages`, cert.cert)).status).toBe(200);
    } finally {
      child.kill('SIGTERM');
      await once(child, 'close');
    }
    const half = spawn(process.execPath, [bin, '--port', '0', '--tls-cert-file', join(dir, 'cert.pem')], { stdio: 'pipe' });
    let stderr = '';
    half.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
    const [code] = (await once(half, 'close')) as [number];
    expect(code).toBe(2);
    expect(stderr).toContain('--tls-cert-file and --tls-key-file go together');
  });
});
