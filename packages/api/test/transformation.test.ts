// The transformation policy kind as a config holds it: what is refused, naming the field (header
// names the gateway owns, a header or body field edited twice, paths too deep, expressions that do
// not type-check, are over the cost budget, or are constants that can never be written), what the
// IR holds (credential-like expressions as Secrets: a dump prints them redacted), and the JSON a
// CEL value becomes.
import { inspect } from 'node:util';
import { describe, expect, it } from 'vitest';
import { celToJson, compileCel, decodeSnapshot, DEFAULT_LIMITS, encodeSnapshot, looksLikeSecret, Secret, standaloneToSnapshot, validateStandaloneConfig } from '../src/index.js';
import { cfg, problems, route } from './support.js';

const AT = 'binds[0].listeners[0].routes[0].policies.traffic.transformation';
const withTransformation = (transformation: unknown) => cfg([route({ policies: { traffic: { transformation } } })]);
const setHeader = (name: string, value: string, extra: Record<string, unknown> = {}) => withTransformation({ request: { headers: { set: [{ name, value, ...extra }] } } });
/** `text` as a regular expression that matches it literally. */
const literally = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const setBody = (path: string, value: string) => withTransformation({ request: { body: { set: [{ path, value }] } } });

describe('a transformation in a config', () => {
  it('is accepted with request headers, body fields and response headers', () => {
    expect(
      problems(
        withTransformation({
          request: {
            headers: { set: [{ name: 'x-team', value: 'consumer.group' }], add: [{ name: 'x-via', value: '"tollgate"' }], remove: ['x-debug'] },
            body: {
              set: [
                { path: 'model', value: '"gpt-4o-mini"' },
                { path: 'max_tokens', value: 'llm.maxTokens == 0 || llm.maxTokens > 1024 ? 1024 : llm.maxTokens' },
                { path: 'stream_options.include_usage', value: 'true', when: 'llm.stream' },
                { path: 'metadata', value: '{"team": consumer.group, "user": consumer.name}' },
              ],
              remove: ['user', 'max_completion_tokens'],
            },
          },
          response: { headers: { set: [{ name: 'x-served-for', value: 'consumer.name' }], remove: ['server'] } },
        }),
      ),
    ).toEqual([]);
  });

  it('refuses header names that are not names, and those the gateway owns', () => {
    expect(problems(setHeader('x team', '"a"'))[0]).toBe(`${AT}.request.headers.set[0].name: got "x team"; expected an HTTP header name (letters, digits and !#$%&'*+-.^_\`|~)`);
    for (const name of ['Content-Length', 'host', 'transfer-encoding', 'connection']) {
      expect(problems(setHeader(name, '"a"'))[0]).toMatch(new RegExp(`^${literally(`${AT}.request.headers.set[0].name: got "${name}": the gateway sets this header itself`)}`));
    }
    expect(problems(withTransformation({ response: { headers: { remove: ['content-length'] } } }))[0]).toContain('response.headers.remove[0]: got "content-length"');
    // Removing a request's host is refused too; a response may set a server header.
    expect(problems(withTransformation({ request: { headers: { remove: ['Host'] } } }))[0]).toContain("use a URLRewrite filter's hostname");
    expect(problems(withTransformation({ response: { headers: { set: [{ name: 'server', value: '"tollgate"' }] } } }))).toEqual([]);
  });

  it('refuses a header edited twice, in any case', () => {
    const out = problems(withTransformation({ request: { headers: { set: [{ name: 'X-Team', value: '"a"' }], remove: ['x-team'] } } }));
    expect(out).toEqual([`${AT}.request.headers.remove[0]: "x-team" is edited at ${AT}.request.headers.set[0].name too; a header is edited once: set, add and remove name different headers (compared without case)`]);
  });

  it('refuses body paths that are not paths, too deep, or overlapping', () => {
    expect(problems(setBody('messages[0].content', '"x"'))[0]).toMatch(/request\.body\.set\[0\]\.path: got "messages\[0\]\.content"; expected at most 8 object member names/);
    expect(problems(setBody('a.b.c.d.e.f.g.h.i', '1'))[0]).toMatch(/request\.body\.set\[0\]\.path: got "a\.b\.c\.d\.e\.f\.g\.h\.i"; expected at most 8/);
    expect(problems(setBody('a.b.c.d.e.f.g.h', '1'))).toEqual([]);
    const overlap = problems(withTransformation({ request: { body: { set: [{ path: 'stream_options', value: '{}' }], remove: ['stream_options.include_usage'] } } }));
    expect(overlap).toEqual([`${AT}.request.body.remove[0]: got "stream_options.include_usage": overlaps "stream_options" at ${AT}.request.body.set[0].path; a body field is edited once, and not inside another edited field`]);
    // "model" and "model_x" share a prefix, not a field.
    expect(problems(withTransformation({ request: { body: { set: [{ path: 'model', value: '"m"' }, { path: 'model_x.y', value: '1' }] } } }))).toEqual([]);
  });

  it('refuses more edits than the bound, and a transformation that edits nothing', () => {
    const many = Array.from({ length: 17 }, (_, i) => ({ name: `x-${i}`, value: '"v"' }));
    expect(problems(withTransformation({ request: { headers: { set: many } } }))[0]).toMatch(/request\.headers\.set: .*at most 16/);
    expect(problems(withTransformation({}))).toEqual([`${AT}: edits nothing; set request.headers, request.body or response.headers, or remove the transformation`]);
  });

  it('refuses expressions that do not type-check, give the wrong type, or are over the cost budget, naming the field', () => {
    expect(problems(setHeader('x-a', 'consumer.team'))[0]).toBe(`${AT}.request.headers.set[0].value: got "consumer.team": does not type-check: consumer has no field 'team' (its fields are name, group, labels, claims); e.g. consumer.group`);
    expect(problems(setHeader('x-a', '{"a": 1}'))[0]).toContain('evaluates to map(string, int); a header value must be string, int, uint, double, bool');
    expect(problems(setHeader('x-a', '"a"', { when: 'consumer.name' }))[0]).toContain(`${AT}.request.headers.set[0].when: got "consumer.name": evaluates to string; the condition of an edit must be bool; e.g. llm.stream`);
    expect(problems(setBody('model', 'request'))[0]).toContain('evaluates to request; a body value must be');
    const costly = 'request.headers.all(a, request.headers.all(b, request.headers.exists(c, a + b == c))) ? "y" : "n"';
    expect(problems(setHeader('x-a', costly))[0]).toMatch(/request\.headers\.set\[0\]\.value: got .*its estimated cost is \d+, more than the budget of 10000 \(cel\.maxCost\)/);
    // Cheap alone, over the budget together: named at the transformation, with the costliest.
    const each = 'request.headers.exists(k, k.startsWith("x-tenant-")) ? "y" : "n"';
    const together = problems(withTransformation({ request: { headers: { set: Array.from({ length: 8 }, (_, i) => ({ name: `x-${i}`, value: each })) } } }));
    expect(together).toEqual([expect.stringMatching(new RegExp(`^${literally(AT)}: the expressions together have an estimated cost of \\d+, more than the budget of 10000 .*the most expensive is ${literally(`${AT}.request.headers.set[0].value`)}`))]);
  });

  it('refuses a constant that can never be written: CR/LF in a header, bytes in a body, an error', () => {
    expect(problems(setHeader('x-a', '"ok\\r\\nset-cookie: s=1"'))).toEqual([
      `${AT}.request.headers.set[0].value: got "\\"ok\\\\r\\\\nset-cookie: s=1\\"": the value has U+000D at index 2; expected a header value of visible characters, spaces and tabs (no CR, LF or other control characters)`,
    ]);
    expect(problems(setBody('data', '[b"x"]'))[0]).toContain('bytes have no JSON form');
    expect(problems(setHeader('x-a', 'string(1 / 0)'))[0]).toContain('fails whatever the request: int divide by zero');
  });

  it('never quotes an expression that may hold a credential in a message', () => {
    const out = problems(setHeader('authorization', '"Bearer sk-live-0123456789\\n"'));
    expect(out).toEqual([`${AT}.request.headers.set[0].value: the expression (not shown: it may hold a credential): the value has U+000A at index 25; expected a header value of visible characters, spaces and tabs (no CR, LF or other control characters)`]);
  });
});

describe('the IR', () => {
  const ir = () => {
    const snap = standaloneToSnapshot(
      validateStandaloneConfig(
        withTransformation({
          request: {
            headers: { set: [{ name: 'Authorization', value: '"Bearer token"' }, { name: 'x-key', value: '"sk-proj-abcdefghijklmnop"' }, { name: 'x-team', value: 'consumer.group' }] },
            body: { set: [{ path: 'model', value: '"gpt-4o-mini"', when: 'request.headers["x-k"] == "ghp_0123456789abcdefghij"' }] },
          },
        }),
      ),
      { kind: 'file', path: '/x' },
    );
    return { snap, t: snap.binds[0]!.listeners[0]!.routes[0]!.policy!.transformation! };
  };

  it('holds the values of credential headers and credential-like expressions as Secrets; the rest as text', () => {
    const { snap, t } = ir();
    const set = t.request.headers!.set;
    expect(set.map((h) => h.name)).toEqual(['authorization', 'x-key', 'x-team']);
    expect(set[0]!.value).toBeInstanceOf(Secret);
    expect(set[1]!.value).toBeInstanceOf(Secret);
    expect(set[2]!.value).toBe('consumer.group');
    expect(t.request.body!.set[0]!.value).toBe('"gpt-4o-mini"');
    expect(t.request.body!.set[0]!.when).toBeInstanceOf(Secret);
    const printed = `${JSON.stringify(snap)}${inspect(snap, { depth: 30 })}`;
    for (const secret of ['Bearer token', 'sk-proj-abcdefghijklmnop', 'ghp_0123456789abcdefghij']) expect(printed).not.toContain(secret);
    expect(t.response.headers).toBeNull();
  });

  it('travels the snapshot stream with its secrets in clear, and is a Secret again on arrival', () => {
    const { snap } = ir();
    const text = encodeSnapshot(snap);
    expect(text).toContain('{"secret":"\\"Bearer token\\""}');
    const back = decodeSnapshot(text).binds[0]!.listeners[0]!.routes[0]!.policy!.transformation!;
    const value = back.request.headers!.set[0]!.value;
    expect(value).toBeInstanceOf(Secret);
    expect((value as Secret).reveal()).toBe('"Bearer token"');
    expect(back.request.body!.set[0]!.path).toBe('model');
  });
});

describe('looksLikeSecret', () => {
  it('knows provider keys, tokens, credential schemes and long random runs', () => {
    for (const s of ['"sk-proj-abcdefghijklmnop"', 'x == "Bearer abc.def"', '"eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.sig"', '"AKIAIOSFODNN7EXAMPLE"', '"ghp_0123456789abcdefghij"', '"3f785a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f"', '"dGhpcyBpcyBhIHNlY3JldCBrZXkgb2YgNDggYnl0ZXMgMTIzNA=="']) {
      expect(looksLikeSecret(s), s).toBe(true);
    }
  });
  it('leaves model names, identifiers and expressions alone', () => {
    for (const s of ['"gpt-4o-mini-2024-07-18"', '"claude-3-5-sonnet-20241022"', 'consumer.labels["token"]', 'llm.maxTokens == 0 || llm.maxTokens > 1024 ? 1024 : llm.maxTokens', '"meta-llama/Meta-Llama-3.1-405B-Instruct-Turbo"', '"123e4567-e89b-12d3-a456-426614174000"', '"sk-team"']) {
      expect(looksLikeSecret(s), s).toBe(false);
    }
  });
});

describe('celToJson', () => {
  const value = (source: string) => {
    const c = compileCel(source, 'transformBody', DEFAULT_LIMITS);
    if (!c.ok) throw new Error(c.problem);
    const out = c.value.run({} as never);
    if (!out.ok) throw new Error(out.reason);
    return celToJson(out.value);
  };
  const text = (source: string) => {
    const j = value(source);
    return j.ok ? JSON.stringify(j.value) : `refused: ${j.reason}`;
  };

  it('writes integers exactly, maps with any key as objects, lists and nulls', () => {
    expect(text('9223372036854775807')).toBe('9223372036854775807');
    expect(text('18446744073709551615u')).toBe('18446744073709551615');
    expect(text('[1.5, 2.0]')).toBe('[1.5,2]');
    expect(text('[true, false]')).toBe('[true,false]');
    expect(text('{1: "a", 2: "b"}')).toBe('{"1":"a","2":"b"}');
    expect(text('{"a": {"b": [1, 2]}}')).toBe('{"a":{"b":[1,2]}}');
    expect(text('null')).toBe('null');
  });
  it('refuses what JSON has no form for', () => {
    expect(text('[b"x"]')).toBe('refused: bytes have no JSON form; write string(b) or a string');
    expect(text('[double("NaN")]')).toBe('refused: NaN has no JSON form');
    expect(text('[1.0 / 0.0]')).toBe('refused: Infinity has no JSON form');
  });
});
