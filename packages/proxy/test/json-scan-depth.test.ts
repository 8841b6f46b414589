// The depth bound on request bodies the gateway reads: deeper than the limit is refused, and
// brackets that do not nest (siblings, or characters inside strings) never count as depth,
// whichever path of the check decides (few brackets in all, or the exact scan).
import { describe, expect, it } from 'vitest';
import { nestsDeeperThan } from '../src/llm/json-scan.js';

const bytes = (s: string) => Buffer.from(s);

describe('nestsDeeperThan', () => {
  it('is true past the limit and false at it', () => {
    expect(nestsDeeperThan(bytes(`${'['.repeat(129)}${']'.repeat(129)}`), 128)).toBe(true);
    expect(nestsDeeperThan(bytes(`${'['.repeat(128)}${']'.repeat(128)}`), 128)).toBe(false);
    expect(nestsDeeperThan(bytes(`{"a":${'{"b":'.repeat(130)}1${'}'.repeat(131)}`), 128)).toBe(true);
  });

  it('counts nesting, not brackets: many siblings stay shallow', () => {
    const siblings = `[${Array.from({ length: 500 }, () => '{"x":[]}').join(',')}]`;
    expect(nestsDeeperThan(bytes(siblings), 128)).toBe(false);
  });

  it('skips brackets inside strings, escaped quotes included', () => {
    const inString = JSON.stringify({ content: `${'['.repeat(300)}"${'{'.repeat(300)}` });
    expect(nestsDeeperThan(bytes(inString), 128)).toBe(false);
    const mixed = `{"s":"\\"${'['.repeat(200)}",${'['.repeat(129)}${']'.repeat(129)}}`;
    expect(nestsDeeperThan(bytes(mixed), 128)).toBe(true);
  });

  it('a chat body with few brackets is not deep', () => {
    const body = JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi '.repeat(2000) }], max_tokens: 16 });
    expect(nestsDeeperThan(bytes(body), 128)).toBe(false);
  });
});
