// The unparsed reading of an Anthropic text delta must agree with JSON.parse on every text, and
// must refuse anything that is not exactly one JSON string literal in the text's place (a
// backend must not be able to add members to the client's chunk, nor pass invalid JSON on).
import { describe, expect, it } from 'vitest';
import { isSilentEvent, textDeltaLiteral } from '../src/llm/formats/text-delta.js';
import { MessagesStreamTranslator } from '../src/llm/formats/messages-stream.js';

const delta = (text: string, index = 0) => JSON.stringify({ type: 'content_block_delta', index, delta: { type: 'text_delta', text } });

/** Texts with every kind of character JSON escapes or may escape. */
const TEXTS = ['', 'hello', 'é ü 漢字 🙂', 'quote " inside', 'back\\slash', 'line\nbreak\ttab\r', '\u0000\u001f\u007f', '\u2028\u2029', '"}},"x":{"a":"', '\\"', 'a'.repeat(10_000)];

describe('textDeltaLiteral', () => {
  it('reads the text of every text delta as JSON.parse does', () => {
    for (const text of TEXTS) {
      for (const index of [0, 7, 123]) {
        const literal = textDeltaLiteral(delta(text, index));
        expect(literal).not.toBeNull();
        expect(JSON.parse(literal!)).toBe(text);
      }
    }
    // Escapes JSON.stringify does not write but a backend may.
    const data = '{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"\\u00e9\\/\\b\\f"}}';
    expect(JSON.parse(textDeltaLiteral(data)!)).toBe('é/\b\f');
  });

  it('refuses what is not one JSON string in the text place', () => {
    const bad = [
      '{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a","evil":"b"}}',
      '{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a\\"}}',
      '{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"raw\nnewline"}}',
      '{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"bad \\x escape"}}',
      '{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"\\u12"}}',
      '{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"\\u12g4"}}',
      '{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"\\"}}',
      '{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"}}',
      '{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":}}',
      '{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":1}}',
      '{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a"}} ',
      '{"type":"content_block_delta","index":-1,"delta":{"type":"text_delta","text":"a"}}',
      '{"type":"content_block_delta","index":,"delta":{"type":"text_delta","text":"a"}}',
      '{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"a"}}',
      '{"index":0,"type":"content_block_delta","delta":{"type":"text_delta","text":"a"}}',
    ];
    for (const data of bad) expect(textDeltaLiteral(data), data).toBeNull();
  });

  it('reads a random text place only when JSON.parse reads one string there, and reads it the same', () => {
    // Pieces that make valid and invalid strings, and strings that close early and add members.
    const pieces = ['a', 'é', '"', '\\', '\\"', '\\n', '\\u00e9', '\\u00', '\\x', '\n', '}', '{', ',', ':', '","k":"', '"}', '/', '\\/', '\u2028'];
    let seed = 7;
    let read = 0;
    const results: { data: string; one: boolean; same: boolean }[] = [];
    const next = () => (seed = (seed * 1103515245 + 12345) % 2147483648);
    for (let n = 0; n < 5000; n++) {
      let place = '"';
      for (let k = next() % 6; k > 0; k--) place += pieces[next() % pieces.length];
      place += next() % 10 ? '"' : '';
      const data = `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":${place}}}`;
      let parsed: unknown;
      try {
        parsed = JSON.parse(data);
      } catch {
        parsed = undefined;
      }
      const delta = (parsed as { delta?: Record<string, unknown> } | undefined)?.delta;
      const one = delta !== undefined && Object.keys(delta).length === 2 && Object.keys(parsed as object).length === 3 && typeof delta.text === 'string';
      const literal = textDeltaLiteral(data);
      // Refusing is always safe (the event is then parsed); reading must be exact.
      if (literal === null) continue;
      read++;
      results.push({ data, one, same: one && JSON.parse(literal) === delta.text });
    }
    expect(results.filter((r) => !r.one || !r.same)).toEqual([]);
    // The pieces make many valid strings: the unparsed path took a good share of them.
    expect(read).toBeGreaterThan(500);
  });
});

describe('isSilentEvent', () => {
  it('knows a ping and a content_block_stop in their usual form, and nothing else', () => {
    for (const data of ['{"type":"ping"}', '{"type":"content_block_stop","index":0}', '{"type":"content_block_stop","index":12}']) expect(isSilentEvent(data), data).toBe(true);
    const others = ['{"type":"ping","x":1}', '{"type":"content_block_stop","index":}', '{"type":"content_block_stop","index":1,"x":2}', '{"type":"content_block_stop","index":-1}', '{"type":"content_block_stop","index":1} ', '{"type":"message_stop"}', '{"type":"content_block_stop","index":1'];
    for (const data of others) expect(isSilentEvent(data), data).toBe(false);
  });
});

describe('a translated stream', () => {
  /** The client's chunks, parsed, for a stream whose deltas have the common key order or another. */
  function chunks(reordered: boolean): unknown[] {
    const t = new MessagesStreamTranslator({ includeUsage: true, maxEventBytes: 1 << 20, created: 1 });
    const events = [
      { type: 'message_start', message: { id: 'm', model: 'c', usage: { input_tokens: 1, output_tokens: 1 } } },
      ...TEXTS.map((text) => (reordered ? { delta: { text, type: 'text_delta' }, index: 0, type: 'content_block_delta' } : (JSON.parse(delta(text)) as object))),
      { type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 5 } },
      { type: 'message_stop' },
    ];
    const out = Buffer.concat([t.transform(Buffer.from(events.map((e) => `data: ${JSON.stringify(e)}\n\n`).join(''))), t.flush()]).toString();
    return out.split('\n\n').filter((l) => l.startsWith('data: {')).map((l) => JSON.parse(l.slice(6)) as unknown);
  }

  it('is the same whether its deltas are read unparsed or parsed', () => {
    const fast = chunks(false);
    expect(fast).toEqual(chunks(true));
    expect(fast.map((c) => (c as { choices: { delta: { content?: string } }[] }).choices[0]?.delta.content).filter((x) => x !== undefined)).toEqual(['', ...TEXTS]);
  });
});
