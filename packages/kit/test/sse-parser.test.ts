// The SSE parser: fields, line endings, raw bytes per event, UTF-8 split across chunks,
// unterminated last events, the overflow bound, and (property) that no chunking of a stream
// changes what comes out.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SseParser, type SseItem } from '../src/index.js';

function parseChunks(chunks: Buffer[], maxLineBytes?: number): SseItem[] {
  const p = new SseParser(maxLineBytes === undefined ? {} : { maxLineBytes });
  return [...chunks.flatMap((c) => p.push(c)), ...p.end()];
}

/** Splits `buf` at the given cut points. */
function split(buf: Buffer, cuts: number[]): Buffer[] {
  const points = [...new Set(cuts.map((c) => c % (buf.length + 1)))].sort((a, b) => a - b);
  const out: Buffer[] = [];
  let prev = 0;
  for (const p of [...points, buf.length]) {
    out.push(buf.subarray(prev, p));
    prev = p;
  }
  return out;
}

/** Consecutive pass-through pieces as one (where a stream is cut depends on its chunks). */
function merged(items: SseItem[]): SseItem[] {
  const out: SseItem[] = [];
  for (const i of items) {
    const last = out.at(-1);
    if (i.type === 'passthrough' && last?.type === 'passthrough') out[out.length - 1] = { ...last, raw: Buffer.concat([last.raw, i.raw]) };
    else out.push(i);
  }
  return out;
}

const view = (items: SseItem[]) => merged(items).map((i) => (i.type === 'event' ? { data: i.data, event: i.event, id: i.id, comments: i.comments, complete: i.complete, raw: i.raw.toString('latin1') } : { passthrough: i.raw.toString('latin1'), overflow: i.overflow }));

describe('SseParser', () => {
  it('reads data, event, id and comments, joining data lines, with each event\'s raw bytes', () => {
    const text = ': armed\n\nevent: delta\nid: 7\ndata: {"a":1}\ndata:second\n\ndata\n\n';
    const items = parseChunks([Buffer.from(text)]);
    expect(view(items)).toEqual([
      { data: null, event: null, id: null, comments: ['armed'], complete: true, raw: ': armed\n\n' },
      { data: '{"a":1}\nsecond', event: 'delta', id: '7', comments: [], complete: true, raw: 'event: delta\nid: 7\ndata: {"a":1}\ndata:second\n\n' },
      { data: '', event: null, id: null, comments: [], complete: true, raw: 'data\n\n' },
    ]);
  });

  it('accepts CRLF, CR and LF line ends, also a CRLF split between chunks', () => {
    const text = 'data: a\r\n\r\ndata: b\r\rdata: c\n\n';
    for (const chunks of [[Buffer.from(text)], split(Buffer.from(text), [8]), split(Buffer.from(text), [9, 10])]) {
      const items = parseChunks(chunks);
      expect(items.map((i) => (i.type === 'event' ? [i.data, i.raw.toString()] : null))).toEqual([
        ['a', 'data: a\r\n\r\n'],
        ['b', 'data: b\r\r'],
        ['c', 'data: c\n\n'],
      ]);
    }
  });

  it('keeps a multi-byte UTF-8 character split across chunks intact', () => {
    const text = Buffer.from('data: héllo wörld 🎉 ✓\n\n');
    const at = text.indexOf(Buffer.from('🎉')) + 2; // inside the 4-byte emoji
    const items = parseChunks(split(text, [at - 5, at, at + 1]));
    expect(items).toHaveLength(1);
    expect(items[0]!.type === 'event' && items[0]!.data).toBe('héllo wörld 🎉 ✓');
  });

  it('hands out an unterminated last event at the end, marked incomplete', () => {
    const items = parseChunks([Buffer.from('data: 1\n\ndata: [DONE]')]);
    expect(view(items).at(-1)).toMatchObject({ data: '[DONE]', complete: false, raw: 'data: [DONE]' });
  });

  it('past maxLineBytes reports the overflow once and passes the rest through unparsed', () => {
    const big = `data: ${'x'.repeat(100)}`;
    const chunks = [Buffer.from('data: ok\n\n'), Buffer.from(big.slice(0, 60)), Buffer.from(big.slice(60)), Buffer.from('\n\ndata: after\n\n')];
    const items = parseChunks(chunks, 64);
    expect(items.map((i) => [i.type, i.raw.toString(), i.type === 'passthrough' && i.overflow])).toEqual([
      ['event', 'data: ok\n\n', false],
      ['passthrough', big, true],
      ['passthrough', '\n\ndata: after\n\n', false],
    ]);
    expect(items.filter((i) => i.type === 'passthrough' && i.overflow)).toHaveLength(1);
  });

  it('reads a 40 MB line delivered in 64 KiB chunks', () => {
    const size = 40 * 1024 * 1024;
    const stream = Buffer.concat([Buffer.from('data: '), Buffer.alloc(size, 'y'), Buffer.from('\n\ndata: next\n\n')]);
    const p = new SseParser({ maxLineBytes: 64 * 1024 * 1024 });
    const items: SseItem[] = [];
    for (let i = 0; i < stream.length; i += 64 * 1024) items.push(...p.push(stream.subarray(i, i + 64 * 1024)));
    items.push(...p.end());
    expect(items.map((i) => (i.type === 'event' ? i.data?.length : -1))).toEqual([size, 4]);
  });

  it('any chunking of a stream gives the same events, and the raw bytes add up to the input', () => {
    const line = fc.oneof(
      fc.string({ unit: 'grapheme', maxLength: 12 }).map((s) => `data: ${s.replace(/[\r\n]/g, '')}`),
      fc.constantFrom('event: delta', 'id: 42', ': keepalive', 'data', 'retry: 10'),
    );
    const event = fc.tuple(fc.array(line, { minLength: 1, maxLength: 4 }), fc.constantFrom('\n', '\r\n', '\r'));
    const stream = fc.tuple(fc.array(event, { maxLength: 6 }), fc.boolean()).map(([events, unterminated]) => {
      const text = events.map(([lines, eol]) => `${lines.join(eol)}${eol}${eol}`).join('');
      return Buffer.from(unterminated ? `${text}data: tail` : text);
    });
    fc.assert(
      fc.property(stream, fc.array(fc.nat(), { maxLength: 12 }), fc.constantFrom(16, 1 << 20), (buf, cuts, max) => {
        const whole = parseChunks([buf], max);
        const chunked = parseChunks(split(buf, cuts), max);
        expect(view(chunked)).toEqual(view(whole));
        expect(Buffer.concat(chunked.map((i) => i.raw)).equals(buf)).toBe(true);
      }),
      { numRuns: 500 },
    );
  });
});
