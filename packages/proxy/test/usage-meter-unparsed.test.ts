// An OpenAI stream's chunks without usage are held unparsed and read only when no usage came:
// the meter must report exactly what parsing every chunk at once would (usage, text, the usage
// chunk the gateway asked for removed), for any chunking of the bytes, any placement of the
// usage, whitespace in the JSON, streams longer than the unparsed bound, and chunks whose text
// mentions "usage".
import { describe, expect, it } from 'vitest';
import { carriesNoUsage, MAX_UNPARSED_BYTES, UsageMeter, type UsageResult } from '../src/llm/usage-meter.js';

const chunk = (content: string, extra: object = {}) => `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content }, finish_reason: null }], usage: null, ...extra })}\n\n`;
const usageChunk = (total: number, spacing = '') => `data: {"id":"c","object":"chat.completion.chunk","choices":[],"usage"${spacing}:${spacing}{"prompt_tokens":1,"completion_tokens":${total - 1},"total_tokens":${total}}}\n\n`;

function meter(stream: string, strip: boolean, step: number): { out: string; usage: UsageResult } {
  const m = new UsageMeter(strip, 64 * 1024);
  m.onHeaders('text/event-stream', undefined);
  const bytes = Buffer.from(stream);
  const out: Buffer[] = [];
  for (let i = 0; i < bytes.length; i += step) out.push(m.transform(bytes.subarray(i, i + step)));
  out.push(m.flush());
  return { out: Buffer.concat(out).toString(), usage: m.result() };
}

const TEXTS = ['Hello', ' wörld', ' "usage": {"total_tokens": 999}', ' \\"usage\\":null', ' usage', '🙂'];

describe('carriesNoUsage', () => {
  it('is true only where JSON.parse finds no usage at the top level', () => {
    const cases: [string, boolean][] = [
      ['{"choices":[]}', true],
      ['{"usage":null}', true],
      ['{"usage" : null ,"choices":[]}', true],
      ['{"usage":{"total_tokens":3}}', false],
      ['{"usage" :{"total_tokens":3}}', false],
      ['{"usage"\n:\t{"total_tokens":3}}', false],
      ['{"role":"usage","usage":null}', false],
      ['{"choices":[{"delta":{"content":"\\"usage\\":{\\"total_tokens\\":1}"}}],"usage":null}', true],
    ];
    expect(cases.map(([data]) => carriesNoUsage(data))).toEqual(cases.map(([, none]) => none));
    // Where it says none, there is none.
    const said = cases.filter(([, none]) => none).map(([data]) => (JSON.parse(data) as { usage?: unknown }).usage ?? null);
    expect(said).toEqual(said.map(() => null));
  });
});

describe('an OpenAI stream, its chunks without usage read lazily', () => {
  const body = TEXTS.map((t) => chunk(t)).join('');
  const text = TEXTS.join('');

  for (const step of [1, 13, 1 << 20]) {
    it(`reports the usage chunk's total and removes the chunk the gateway asked for (pieces of ${step} bytes)`, () => {
      for (const spacing of ['', ' ']) {
        const stream = body + usageChunk(42, spacing) + 'data: [DONE]\n\n';
        const asked = meter(stream, false, step);
        expect(asked.usage.reported).toBe(42);
        expect(asked.out).toBe(stream);
        const injected = meter(stream, true, step);
        expect(injected.usage.reported).toBe(42);
        expect(injected.out).toBe(body + 'data: [DONE]\n\n');
      }
    });

    it(`keeps every chunk's text for the estimate when no usage came (pieces of ${step} bytes)`, () => {
      const { out, usage } = meter(body + 'data: [DONE]\n\n', true, step);
      expect(usage.reported).toBeNull();
      expect(usage.completionText).toBe(text);
      expect(out).toBe(body + 'data: [DONE]\n\n');
    });
  }

  it('reads a stream longer than the unparsed bound in order, whole', () => {
    const pieces = Array.from({ length: Math.ceil((3 * MAX_UNPARSED_BYTES) / 100) }, (_, i) => `<${i}>`);
    const long = pieces.map((p) => chunk(p)).join('');
    const cut = meter(long, true, 4096);
    expect(cut.usage.reported).toBeNull();
    expect(cut.usage.completionText).toBe(pieces.join(''));
    const reported = meter(long + usageChunk(7) + 'data: [DONE]\n\n', true, 4096);
    expect(reported.usage.reported).toBe(7);
    expect(reported.out).toBe(long + 'data: [DONE]\n\n');
  });

  it('reads usage on a chunk that also has choices, and the last usage wins', () => {
    const stream = chunk('a', { usage: { total_tokens: 5 } }) + chunk('b') + chunk('c', { usage: { total_tokens: 9 } });
    const { usage, out } = meter(stream, true, 7);
    expect(usage.reported).toBe(9);
    // Chunks with choices are never removed.
    expect(out).toBe(stream);
  });
});
