// A translated Anthropic stream is metered from the translation itself (the meter does not parse
// the chunks it made): the usage it reports must be the usage chunk's, whether or not the client
// asked for that chunk, none for a stream cut before message_stop, and then the generated text
// (text and tool-input JSON) for the estimate, whatever the chunking of the backend's bytes.
import { describe, expect, it } from 'vitest';
import { MessagesStreamTranslator } from '../src/llm/formats/messages-stream.js';
import { UsageMeter } from '../src/llm/usage-meter.js';

const event = (type: string, data: object) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;

const START = event('message_start', { message: { id: 'msg_1', model: 'claude', usage: { input_tokens: 12, cache_read_input_tokens: 3, output_tokens: 1 } } });
const BODY = [
  event('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }),
  event('content_block_delta', { index: 0, delta: { type: 'text_delta', text: 'héllo ' } }),
  event('content_block_delta', { index: 0, delta: { type: 'text_delta', text: 'world' } }),
  event('content_block_stop', { index: 0 }),
  event('content_block_start', { index: 1, content_block: { type: 'tool_use', id: 'tu_1', name: 'lookup', input: {} } }),
  event('content_block_delta', { index: 1, delta: { type: 'input_json_delta', partial_json: '{"q":' } }),
  event('content_block_delta', { index: 1, delta: { type: 'input_json_delta', partial_json: '"x"}' } }),
  event('content_block_stop', { index: 1 }),
  event('message_delta', { delta: { stop_reason: 'tool_use' }, usage: { output_tokens: 9 } }),
].join('');
const STOP = event('message_stop', {});

/** The client's stream and what the meter charges, with the backend's bytes cut every `step` bytes. */
function translate(stream: string, includeUsage: boolean, step: number) {
  const t = new MessagesStreamTranslator({ includeUsage, maxEventBytes: 64 * 1024, created: 1 });
  const meter = new UsageMeter(false, 64 * 1024);
  meter.readFrom(t);
  const bytes = Buffer.from(stream);
  const out: Buffer[] = [];
  for (let i = 0; i < bytes.length; i += step) out.push(meter.transform(t.transform(bytes.subarray(i, i + step))));
  out.push(t.flush(), meter.flush());
  return { client: Buffer.concat(out).toString(), usage: meter.result() };
}

describe('a translated Anthropic stream, metered from the translation', () => {
  for (const step of [1, 7, 1 << 20]) {
    it(`reports the usage chunk's total, asked for or not (backend bytes in pieces of ${step})`, () => {
      for (const includeUsage of [true, false]) {
        const { client, usage } = translate(START + BODY + STOP, includeUsage, step);
        // prompt 12 + 3 cached, completion 9
        expect(usage.reported).toBe(24);
        // Reported: the text is not needed (and not decoded).
        expect(usage.completionText).toBe('');
        expect(client.includes('"total_tokens":24')).toBe(includeUsage);
        expect(client.trimEnd().endsWith('data: [DONE]')).toBe(true);
      }
    });
  }

  it('reports no usage for a stream cut before message_stop, keeping the text seen for the estimate', () => {
    const { client, usage } = translate(START + BODY, true, 5);
    expect(usage.reported).toBeNull();
    expect(usage.completionText).toBe('héllo world{"q":"x"}');
    expect(usage.extraCompletionChars).toBe(0);
    expect(client).toContain('TG_FORMAT_BAD_RESPONSE');
    expect(client).not.toContain('total_tokens');
  });

  it('reports no usage for garbage after the first events, and the text before it', () => {
    const { usage } = translate(START + BODY.slice(0, BODY.indexOf('event: content_block_stop')) + 'data: {not json\n\n' + STOP, true, 3);
    expect(usage.reported).toBeNull();
    expect(usage.completionText).toBe('héllo world');
  });
});

describe('the text kept for the estimate', () => {
  it('is bounded: past the bound, characters are counted, not kept', async () => {
    const { MAX_COMPLETION_CHARS } = await import('../src/llm/completion-text.js');
    const piece = 'x'.repeat(1 << 20);
    const deltas = Array.from({ length: 6 }, () => event('content_block_delta', { index: 0, delta: { type: 'text_delta', text: piece } })).join('');
    const t = new MessagesStreamTranslator({ includeUsage: false, maxEventBytes: 2 << 20, created: 1 });
    t.transform(Buffer.from(START + event('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }) + deltas));
    t.flush();
    const usage = t.usage();
    expect(usage.reported).toBeNull();
    expect(usage.completionText.length).toBeLessThanOrEqual(MAX_COMPLETION_CHARS);
    expect(usage.completionText.length + usage.extraCompletionChars).toBe(6 * piece.length);
  });

  it('holds a bounded number of undecoded deltas: a million empty ones are decoded in batches, nothing kept', () => {
    const t = new MessagesStreamTranslator({ includeUsage: false, maxEventBytes: 1 << 20, created: 1 });
    t.transform(Buffer.from(START));
    const empty = Buffer.from(event('content_block_delta', { index: 0, delta: { type: 'text_delta', text: '' } }).repeat(10_000));
    for (let i = 0; i < 100; i++) t.transform(empty);
    t.transform(Buffer.from(event('content_block_delta', { index: 0, delta: { type: 'text_delta', text: 'end' } })));
    t.flush();
    expect(t.usage()).toEqual({ reported: null, completionText: 'end', extraCompletionChars: 0 });
  });
});
