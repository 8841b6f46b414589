// defineErrors: entries carry code, message, hint and status; create() fills placeholders and
// keeps the cause; a malformed catalog is refused when it is declared.
import { describe, expect, it } from 'vitest';
import { CatalogError, defineErrors } from '../src/index.js';

describe('defineErrors', () => {
  const E = defineErrors({
    gone: { code: 'TG_TEST_GONE', status: 410, message: 'no {what} at {where}', hint: 'look elsewhere' },
    crash: { code: 'TG_TEST_CRASH', message: 'stopped: {reason}', hint: 'restart it' },
  });

  it('gives each entry its fields, a body for answers, and errors with placeholders filled', () => {
    expect(E.gone).toMatchObject({ code: 'TG_TEST_GONE', status: 410, body: 'no {what} at {where}', hint: 'look elsewhere' });
    expect('body' in E.crash).toBe(false);
    const cause = new Error('root');
    const err = E.gone.create({ what: 'file', where: '/tmp' }, { cause });
    expect(err).toBeInstanceOf(CatalogError);
    expect(err).toMatchObject({ code: 'TG_TEST_GONE', status: 410, hint: 'look elsewhere', message: 'no file at /tmp', cause });
    expect(E.crash.create({}).message).toBe('stopped: {reason}');
  });

  it('refuses a bad code, a code used twice, an empty hint and a status that is not an error', () => {
    expect(() => defineErrors({ a: { code: 'TG_lower', message: 'm', hint: 'h' } })).toThrow(/not TG_ followed by upper-case words/);
    expect(() => defineErrors({ a: { code: 'TG_A', message: 'm', hint: 'h' }, b: { code: 'TG_A', message: 'm', hint: 'h' } })).toThrow(/declared twice/);
    expect(() => defineErrors({ a: { code: 'TG_A', message: 'm', hint: ' ' } })).toThrow(/must not be empty/);
    expect(() => defineErrors({ a: { code: 'TG_A', status: 200, message: 'm', hint: 'h' } })).toThrow(/not an HTTP error status/);
  });
});
