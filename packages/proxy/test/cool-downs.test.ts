// Cool-downs of backends: Retry-After read as seconds or as an HTTP date, held to the maximum,
// anything else the default; a shorter cool-down never cuts a longer one; what /backends shows.
// A clock the test sets: cool-downs are read against it.
import { describe, expect, it } from 'vitest';
import { CoolDowns, retryAfterMs } from '../src/upstream/cool-downs.js';

const NOW = Date.parse('2026-10-21T07:28:00.000Z');

describe('retryAfterMs', () => {
  it('reads delay-seconds and HTTP dates, held to 0..max', () => {
    expect(retryAfterMs('30', NOW, 300_000)).toBe(30_000);
    expect(retryAfterMs(' 0 ', NOW, 300_000)).toBe(0);
    expect(retryAfterMs('86400', NOW, 300_000)).toBe(300_000);
    expect(retryAfterMs('Wed, 21 Oct 2026 07:28:45 GMT', NOW, 300_000)).toBe(45_000);
    // A date in the past asks for no wait; one far ahead is held to the maximum.
    expect(retryAfterMs('Wed, 21 Oct 2026 07:00:00 GMT', NOW, 300_000)).toBe(0);
    expect(retryAfterMs('Fri, 01 Jan 2100 00:00:00 GMT', NOW, 300_000)).toBe(300_000);
  });

  it('gives null for anything else: negative, fractional, not a date, too long, absent', () => {
    for (const v of [undefined, '', '-5', '1.5', 'soon', '2026-10-21T07:29:00Z', 'Wed, 21 Oct 2026 07:29:00', `${'9'.repeat(70)}`]) expect(retryAfterMs(v, NOW, 300_000), String(v)).toBeNull();
  });
});

describe('CoolDowns', () => {
  it('records 429 and 503 answers for their Retry-After or the default, shows them, and forgets them once over', () => {
    let now = NOW;
    const c = new CoolDowns({ defaultMs: 5_000, maxMs: 300_000 }, () => now);
    c.record('a', 429, '30');
    c.record('b', 503, undefined);
    c.record('z', 429, '0');
    expect(c.view('a')).toEqual({ until: '2026-10-21T07:28:30.000Z', remainingSeconds: 30, reason: '429 with Retry-After: 30' });
    expect(c.view('b')).toEqual({ until: '2026-10-21T07:28:05.000Z', remainingSeconds: 5, reason: '503 without Retry-After' });
    // Retry-After: 0 asks for none.
    expect(c.view('z')).toBeNull();
    // A 429 asked to be left alone; a 503 without Retry-After did not.
    expect(c.get('a', now)!.asked).toBe(true);
    expect(c.get('b', now)!.asked).toBe(false);
    // A shorter one never cuts a longer one.
    c.record('a', 503, '1');
    expect(c.view('a')!.remainingSeconds).toBe(30);
    now += 6_000;
    expect(c.view('b')).toBeNull();
    expect(c.view('a')!.remainingSeconds).toBe(24);
    c.retain(new Set(['b']));
    expect(c.view('a')).toBeNull();
  });
});
