// Route regular expressions: RE2 syntax, matched against the whole input (Gateway API), in
// time linear in the input.
import { describe, expect, it } from 'vitest';
import { compileRouteRegex } from '../src/regex.js';

const test = (pattern: string, input: string) => {
  const r = compileRouteRegex(pattern);
  if (!r.ok) throw new Error(r.problem);
  return r.value.test(input);
};

describe('compileRouteRegex', () => {
  it('matches the whole input, alternations included', () => {
    expect(test('/[a-z]+', '/abc')).toBe(true);
    expect(test('/[a-z]+', '/abc/')).toBe(false);
    expect(test('/[a-z]+', 'x/abc')).toBe(false);
    expect(test('gpt-4o|gpt-4o-mini', 'gpt-4o-mini')).toBe(true);
    expect(test('a|ab', 'ab')).toBe(true);
    expect(test('/v1/\\d+', '/v1/42')).toBe(true);
  });

  it('answers a pathological pattern on a long input (a backtracking engine would not)', () => {
    expect(test('(a+)+$', `${'a'.repeat(10_000)}!`)).toBe(false);
    expect(test('(a+)+$', 'a'.repeat(10_000))).toBe(true);
  });

  it('refuses what RE2 cannot run, saying so', () => {
    for (const p of ['(a)\\1', '(?=a)', '(?!a)', '(?<=a)b', '(?<!a)b', '[']) {
      const r = compileRouteRegex(p);
      expect(r, p).toMatchObject({ ok: false, problem: expect.stringMatching(/^not a valid regular expression in RE2 syntax \(.+\); backreferences and lookaround are not supported$/) as unknown });
    }
  });
});
