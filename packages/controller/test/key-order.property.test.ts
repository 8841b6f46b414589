// Property: the key order kept between translations (translate/key-order.ts) is the one built
// from scratch. After any sequence of lists (objects replaced, added, removed, moved, keys
// used twice, long stretches changed), the map is the objects by key in sorted key order, the
// last of equal keys kept, as byKey() orders them.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { inKeyOrder } from '../src/translate/key-order.js';
import { byKey, keyOf } from '../src/translate/keys.js';

type Obj = { readonly metadata: { readonly namespace?: string; readonly name: string }; readonly n: number };

function fromScratch(items: readonly Obj[]): [string, Obj][] {
  const byName = new Map<string, Obj>();
  for (const o of items) byName.set(keyOf(o.metadata), o);
  return byKey([...byName.values()]).map((o) => [keyOf(o.metadata), o]);
}

const op = fc.tuple(fc.constantFrom('replace', 'add', 'remove', 'move', 'twice', 'many'), fc.nat(), fc.nat({ max: 30 }));

describe('inKeyOrder across calls (property)', () => {
  it('gives the map built from scratch after any changes to the list', () => {
    let made = 0;
    const obj = (name: number, ns?: string): Obj => ({ metadata: { ...(ns ? { namespace: ns } : {}), name: `o-${name}` }, n: made++ });
    fc.assert(
      fc.property(fc.nat({ max: 40 }), fc.array(fc.array(op, { maxLength: 4 }), { minLength: 1, maxLength: 8 }), (size, rounds) => {
        const kind = `Kind${made}`; // a kind of its own: the first call indexes from scratch
        let list: Obj[] = Array.from({ length: size }, (_, i) => obj(i, i % 3 ? 'a' : undefined));
        expect([...inKeyOrder(kind, list)]).toEqual(fromScratch(list));
        for (const ops of rounds) {
          list = [...list];
          for (const [what, at, k] of ops) {
            const i = list.length ? at % list.length : 0;
            const ns = k % 3 ? 'a' : k % 2 ? 'b' : undefined;
            if (what === 'replace' && list.length) list[i] = { ...list[i]!, n: made++ };
            else if (what === 'add') list.splice(i, 0, obj(100 + k, ns));
            else if (what === 'remove') list.splice(i, 1);
            else if (what === 'move' && list.length) list.push(...list.splice(i, 1));
            else if (what === 'twice' && list.length) list.splice(i, 0, { ...list[(i + k) % list.length]!, n: made++ });
            else if (what === 'many') for (let j = 0; j < 70; j++) list.push(obj(200 + j + k, ns));
          }
          expect([...inKeyOrder(kind, list)]).toEqual(fromScratch(list));
        }
      }),
      { numRuns: 400 },
    );
  });
});
