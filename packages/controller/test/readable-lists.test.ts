// ReadableLists hands out what filtering the whole list would (the readable objects, in the
// list's order, the ids of the others in `seen`), while checking only what changed: the same
// array while the cache's change count stays, and only the stretch that differs when a few
// objects changed and none was left out.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ReadableLists } from '../src/watch/readable-lists.js';

interface Obj {
  readonly name: string;
  readonly bad: boolean;
}

const obj = (name: string, bad = false): Obj => ({ name, bad });

function harness() {
  const lists = new ReadableLists<Obj>();
  let checks = 0;
  let lists_ = 0;
  const check = (o: Obj): string | null => {
    checks++;
    return o.bad ? `id/${o.name}` : null;
  };
  return {
    call(count: number, items: readonly Obj[]) {
      const seen = new Set<string>();
      const out = lists.list(
        'HTTPRoute',
        count,
        () => {
          lists_++;
          return items.slice();
        },
        check,
        seen,
      );
      return { out, seen };
    },
    get checks() {
      return checks;
    },
    get lists() {
      return lists_;
    },
  };
}

describe('ReadableLists', () => {
  it('hands out the same array while the count stays, and checks only the stretch that changed', () => {
    const h = harness();
    const items = Array.from({ length: 1000 }, (_, i) => obj(`r${i}`));
    const first = h.call(1, items);
    expect(first.out).toEqual(items);
    expect(h.checks).toBe(1000);

    const again = h.call(1, items);
    expect(again.out).toBe(first.out);
    expect(h.lists).toBe(1);
    expect(h.checks).toBe(1000);

    // One replaced near the end, one added: the stretch from the first to the end, three checks.
    const next = [...items];
    next[997] = obj('r997');
    next.push(obj('r1000'));
    const changed = h.call(2, next);
    expect(changed.out).toEqual(next);
    expect(changed.out[997]).toBe(next[997]);
    expect(h.checks).toBe(1004);
  });

  it('leaves an unreadable object out, names it in seen on every call, and checks every object while one is left out', () => {
    const h = harness();
    const items = [obj('a'), obj('b'), obj('c')];
    h.call(1, items);
    const withBad = [...items, obj('d', true)];
    const bad = h.call(2, withBad);
    expect(bad.out).toEqual(items);
    expect([...bad.seen]).toEqual(['id/d']);
    // The count stays: the same list, the id named again (so its report is kept).
    const same = h.call(2, withBad);
    expect(same.out).toBe(bad.out);
    expect([...same.seen]).toEqual(['id/d']);
    // Fixed: every object checked (one was left out before), then in the list.
    const checks = h.checks;
    const fixed = [...items, obj('d')];
    const out = h.call(3, fixed);
    expect(out.out).toEqual(fixed);
    expect(out.seen.size).toBe(0);
    expect(h.checks - checks).toBe(4);
  });

  it('hands out what filtering the whole list does, over random changes', () => {
    type Op = readonly [what: 'add' | 'bad' | 'replace' | 'delete' | 'same' | 'move', at: number];
    const op = fc.tuple(fc.constantFrom('add', 'bad', 'replace', 'delete', 'same', 'move'), fc.nat()) as fc.Arbitrary<Op>;
    fc.assert(
      fc.property(fc.array(fc.array(op, { maxLength: 4 }), { maxLength: 30 }), (steps) => {
        const h = harness();
        let items: Obj[] = Array.from({ length: 5 }, (_, i) => obj(`r${i}`));
        let count = 1;
        let n = 5;
        for (const ops of [[], ...steps]) {
          items = [...items];
          for (const [what, at] of ops) {
            const i = items.length ? at % items.length : 0;
            if (what === 'add') items.splice(i, 0, obj(`r${n++}`));
            if (what === 'bad') items.splice(i, 0, obj(`r${n++}`, true));
            if (what === 'replace' && items[i]) items[i] = obj(items[i].name, at % 3 === 0);
            if (what === 'delete') items.splice(i, 1);
            if (what === 'move' && items[i]) items.push(...items.splice(i, 1));
          }
          // Any change moves the count; 'same' alone leaves the list as it was.
          if (ops.some(([what]) => what !== 'same')) count++;
          const { out, seen } = h.call(count, items);
          expect(out).toEqual(items.filter((o) => !o.bad));
          for (const [k, o] of out.entries()) expect(o).toBe(items.filter((x) => !x.bad)[k]);
          expect([...seen].sort()).toEqual(
            items
              .filter((o) => o.bad)
              .map((o) => `id/${o.name}`)
              .sort(),
          );
        }
      }),
      { numRuns: 300 },
    );
  });
});
