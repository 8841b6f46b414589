// The body edits of a transformation on the bytes of a request body, as the pipeline makes them
// (transform/body-edit.ts over the parse of llm/request-body.ts): members the edits do not reach
// are kept byte for byte, those they reach are written once, objects on the way are made, and
// the include_usage a metered route asks of a stream is kept, dropped or asked again as the
// edited body needs it, never shown to a client that did not ask.
import { describe, expect, it } from 'vitest';
import { parse } from '../src/llm/request-body.js';
import { editBody, type ReadBody, type ResolvedBodyEdit } from '../src/transform/body-edit.js';

const read = (text: string, askUsage = false) => parse(Buffer.from(text), askUsage) as ReadBody;
const set = (path: string, value: unknown): ResolvedBodyEdit => ({ segments: path.split('.'), value });
const remove = (path: string): ResolvedBodyEdit => ({ segments: path.split('.') });
const edited = (text: string, edits: ResolvedBodyEdit[], askUsage = false) => editBody(read(text, askUsage), edits, askUsage);

describe('editBody', () => {
  it('writes the members it reaches once, at their place, and keeps the others as sent', () => {
    const out = edited('  {"a" : 1, "model":"x", "b":[1, 2], "model":"y"}\n', [set('model', 'z'), set('c.d', true)]);
    expect(out.body.toString()).toBe('  {"a" : 1,"b":[1, 2],"model":"z","c":{"d":true}}\n');
    expect(out.model).toBe('z');
  });

  it('makes objects on the way, replacing a member that is not one; removes what is there', () => {
    expect(edited('{"o":"text"}', [set('o.p.q', 1)]).body.toString()).toBe('{"o":{"p":{"q":1}}}');
    expect(edited('{"o":{"p":1,"q":2}}', [remove('o.p'), remove('o.x.y'), remove('absent')]).body.toString()).toBe('{"o":{"q":2}}');
    expect(edited('{"a":1}', [remove('a')]).body.toString()).toBe('{}');
    expect(edited('{}', [set('a', null)]).body.toString()).toBe('{"a":null}');
  });

  it('keeps the digits of integers beyond 2^53 in the members it writes', () => {
    expect(edited('{"metadata":{"id":12345678901234567890,"f":1.5}}', [set('metadata.team', 't')]).body.toString()).toBe('{"metadata":{"id":12345678901234567890,"f":1.5,"team":"t"}}');
  });

  it('reads the edited body: model, max_tokens, stream and prompt are the new ones', () => {
    const out = edited('{"model":"big","max_completion_tokens":900,"messages":[{"role":"user","content":"abcd"}]}', [set('model', 'small'), set('max_tokens', 10), remove('max_completion_tokens')]);
    expect([out.model, out.maxTokens, out.stream, out.promptText]).toEqual(['small', 10, false, 'abcd']);
  });

  describe('the usage a metered route asks of a stream', () => {
    const stream = '{"model":"m","stream":true,"messages":[]}';

    it('stays asked, once, and hidden from the client when the edits do not touch it', () => {
      const out = edited(stream, [set('model', 'n')], true);
      expect(out.injectedUsage).toBe(true);
      expect(JSON.parse(out.body.toString())).toEqual({ model: 'n', stream: true, messages: [], stream_options: { include_usage: true } });
    });

    it('is the client\'s (shown to it) when the transformation asks for it', () => {
      const out = edited(stream, [set('stream_options.include_usage', true)], true);
      expect(out.injectedUsage).toBe(false);
      expect((JSON.parse(out.body.toString()) as Record<string, unknown>).stream_options).toEqual({ include_usage: true });
    });

    it('is asked again when the transformation removed it, and dropped when the request no longer streams', () => {
      const again = edited('{"stream":true,"stream_options":{"x":1},"messages":[]}', [remove('stream_options')], true);
      expect(again.injectedUsage).toBe(true);
      expect((JSON.parse(again.body.toString()) as Record<string, unknown>).stream_options).toEqual({ include_usage: true });
      const off = edited(stream, [set('stream', false)], true);
      expect(off.injectedUsage).toBe(false);
      expect(JSON.parse(off.body.toString())).toEqual({ model: 'm', stream: false, messages: [] });
    });

    it('is not asked on a route that counts no tokens', () => {
      const out = edited(stream, [set('stream_options.x', 1)], false);
      expect(out.injectedUsage).toBe(false);
      expect((JSON.parse(out.body.toString()) as Record<string, unknown>).stream_options).toEqual({ x: 1 });
    });
  });
});
