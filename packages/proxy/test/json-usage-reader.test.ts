// The reader of JSON responses too large to hold: it must find the top-level `usage` wherever
// it is and collect the generated text of `choices`, whatever the chunking of the bytes (a
// split inside a key, an escape, a multi-byte character or a number), agreeing with JSON.parse
// of the whole body.
import { describe, expect, it } from 'vitest';
import { JsonUsageReader } from '../src/llm/json-usage-reader.js';

interface Read {
  readonly total: number | null;
  readonly text: string;
  readonly unkeptBytes: number;
}

function read(body: string, cuts: number[], room = 1 << 20): Read {
  let text = '';
  let unkeptBytes = 0;
  const reader = new JsonUsageReader({
    room: () => room - text.length,
    onGenerated: (t, bytes) => {
      if (t === null) unkeptBytes += bytes;
      else text += t;
    },
  });
  const buf = Buffer.from(body);
  let from = 0;
  for (const cut of [...cuts.filter((c) => c > 0 && c < buf.length).sort((a, b) => a - b), buf.length]) {
    reader.push(buf.subarray(from, cut));
    from = cut;
  }
  return { total: reader.totalTokens(), text, unkeptBytes };
}

/** Every single cut, and a few dense ones: the reader must not depend on where chunks end. */
function everySplit(body: string): Read[] {
  const n = Buffer.byteLength(body);
  const out = [read(body, [])];
  for (let i = 1; i < n; i++) out.push(read(body, [i]));
  out.push(read(body, Array.from({ length: n }, (_, i) => i)));
  return out;
}

const completion = (usage: unknown, extra: Record<string, unknown> = {}) => ({
  id: 'c1',
  choices: [
    {
      index: 0,
      message: {
        role: 'assistant',
        content: 'Hé "quoted" \\ ✓ 😀',
        reasoning_content: 'think\nstep',
        refusal: null,
        tool_calls: [{ id: 't', type: 'function', function: { name: 'f', arguments: '{"a":[1,{"b":"}"}]}' } }],
      },
      logprobs: { content: [{ token: 'Hé', logprob: -0.25e-3, bytes: [72, 195, 169], top_logprobs: [{ token: 'x', logprob: -1, bytes: [120] }] }] },
      finish_reason: 'stop',
    },
  ],
  ...extra,
  usage,
});

const GENERATED = 'Hé "quoted" \\ ✓ 😀think\nstep{"a":[1,{"b":"}"}]}';

describe('JsonUsageReader', () => {
  it('finds usage at the end, first or in the middle, split anywhere', () => {
    const last = JSON.stringify(completion({ prompt_tokens: 1, completion_tokens: 99_999, total_tokens: 100_000 }));
    const first = `{"usage":{"total_tokens":7},${last.slice(1).replace(/,"usage":\{[^}]*\}/, '')}`;
    const middle = `{"id":"x","usage":{"total_tokens":8,"prompt_tokens_details":{"cached_tokens":0}},"choices":[],"model":"m"}`;
    for (const [body, total] of [
      [last, 100_000],
      [first, 7],
      [middle, 8],
    ] as const) {
      expect(JSON.parse(body)).toHaveProperty('usage.total_tokens', total);
      for (const r of everySplit(body)) expect(r.total).toBe(total);
    }
  });

  it('reads generated text of choices exactly as JSON.parse decodes it, and nothing else', () => {
    const body = JSON.stringify(completion({ total_tokens: 3 }, { system_fingerprint: 'content' }));
    for (const r of everySplit(body)) expect(r.text).toBe(GENERATED);
  });

  it('takes the last usage member, as JSON.parse does, and an escaped key', () => {
    const body = '{"usage":{"total_tokens":1},"choices":[],"us\\u0061ge":{"total_tokens":42}}';
    expect(JSON.parse(body)).toHaveProperty('usage.total_tokens', 42);
    for (const r of everySplit(body)) expect(r.total).toBe(42);
  });

  it('ignores usage that is not a top-level member, or not a usable count', () => {
    for (const body of [
      '{"choices":[{"usage":{"total_tokens":5}}],"x":"\\"usage\\":{\\"total_tokens\\":6}"}',
      '{"usage":null}',
      '{"usage":{"total_tokens":-1}}',
      '{"usage":{"total_tokens":"9"}}',
      '[{"usage":{"total_tokens":5}}]',
    ]) {
      for (const r of everySplit(body)) expect(r.total).toBeNull();
    }
  });

  it('a usage value too large to believe is not read; generated text past the room is counted, not kept', () => {
    const huge = `{"usage":{"total_tokens":5,"pad":"${'x'.repeat(70_000)}"}}`;
    expect(read(huge, [10, 40_000]).total).toBeNull();
    const body = JSON.stringify({ choices: [{ message: { content: 'a'.repeat(1000) } }], usage: { total_tokens: 1 } });
    const r = read(body, [20, 500], 100);
    expect(r.text).toBe('');
    expect(r.unkeptBytes).toBe(1000);
    expect(r.total).toBe(1);
  });

  it('stays linear on a long string full of escapes', () => {
    const body = `{"choices":[{"message":{"content":"${'\\n'.repeat(2_000_000)}"}}],"usage":{"total_tokens":3}}`;
    const r = read(body, [1 << 20, 2 << 20, 3 << 20], 8 << 20);
    expect(r.total).toBe(3);
    expect(r.text.length).toBe(2_000_000);
  });
});
