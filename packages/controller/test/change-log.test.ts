// A kind's change log tells the keys changed since a count it gave, or that it cannot.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ChangeLog } from '../src/watch/change-log.js';

describe('ChangeLog', () => {
  it('tells the keys changed since a count, nothing for the current count', () => {
    const log = new ChangeLog();
    const start = log.count;
    log.changed('ns/a');
    const mid = log.count;
    log.changed('ns/b');
    log.changed('ns/a');
    expect([...log.since(start)!].sort()).toEqual(['ns/a', 'ns/b']);
    expect([...log.since(mid)!].sort()).toEqual(['ns/a', 'ns/b']);
    expect([...log.since(log.count)!]).toEqual([]);
    // A count it never gave is not known.
    expect(log.since(log.count + 1)).toBeNull();
  });

  it('a reset (a list) makes every earlier count unknown', () => {
    const log = new ChangeLog();
    log.changed('a');
    const before = log.count;
    log.reset();
    expect(log.since(before)).toBeNull();
    const after = log.count;
    log.changed('b');
    expect([...log.since(after)!]).toEqual(['b']);
  });

  it('answers as the whole history would, or null once the count is older than what it keeps', () => {
    fc.assert(
      fc.property(fc.array(fc.oneof(fc.nat(20).map((k) => `k${k}`), fc.constant(null)), { maxLength: 120 }), fc.nat(200), (events, at) => {
        const log = new ChangeLog(16);
        // The whole history, as a reference: the keys by change number, and the counts a reset made unknown.
        const all: { n: number; key: string | null }[] = [];
        for (const e of events) {
          if (e === null) log.reset();
          else log.changed(e);
          all.push({ n: log.count, key: e });
        }
        const n = Math.min(at, log.count);
        const got = log.since(n);
        const after = all.filter((c) => c.n > n);
        const keys = [...new Set(after.map((c) => c.key))].sort();
        // After a reset: unknown. Within the last 8 changes (half the history is always kept): the
        // keys. Older: the keys, or unknown.
        const allowed = after.some((c) => c.key === null) ? ['unknown'] : log.count - n <= 8 ? [keys] : [keys, 'unknown'];
        expect(allowed).toContainEqual(got === null ? 'unknown' : [...got].sort());
      }),
      { numRuns: 300 },
    );
  });
});
