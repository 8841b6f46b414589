// Property: a chain of patchedMap() calls reads as the model (a Map made anew in key order after
// each change) reads: get, has, size, every iteration in key order; the maps before are never
// changed, and none holds the one before it (only a whole map and its changes).
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compareStrings } from '../src/translate/keys.js';
import { MAX_CHANGES, patchedMap } from '../src/translate/patched-map.js';

function sorted<V>(m: ReadonlyMap<string, V>): Map<string, V> {
  return new Map([...m].sort(([a], [b]) => compareStrings(a, b)));
}

function expectReadsAs<V>(map: ReadonlyMap<string, V>, model: ReadonlyMap<string, V>, probes: readonly string[]): void {
  expect(map.size).toBe(model.size);
  for (const key of probes) {
    expect(map.has(key)).toBe(model.has(key));
    expect(map.get(key)).toBe(model.get(key));
  }
  expect([...map]).toEqual([...model]);
  expect([...map.keys()]).toEqual([...model.keys()]);
  expect([...map.values()]).toEqual([...model.values()]);
  const seen: [string, V][] = [];
  map.forEach((v, k, m) => {
    expect(m).toBe(map);
    seen.push([k, v]);
  });
  expect(seen).toEqual([...model]);
  expect(Object.prototype.toString.call(map)).toBe('[object Map]');
}

const KEYS = Array.from({ length: 12 }, (_, i) => `ns/k${i}`);
const key = fc.constantFrom(...KEYS);
const step = fc.record({ set: fc.array(fc.tuple(key, fc.nat(5)), { maxLength: 4 }), removed: fc.array(key, { maxLength: 3 }) });

describe('patchedMap (property)', () => {
  it('reads as a map made anew in key order, across a chain of patches', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(key, fc.nat(5))), fc.array(step, { maxLength: 20 }), (start, steps) => {
        const values = new Map<string, { readonly v: number }>();
        const value = (k: string, v: number) => {
          const id = `${k}=${v}`;
          if (!values.has(id)) values.set(id, { v });
          return values.get(id)!;
        };
        let model = sorted(new Map(start.map(([k, v]) => [k, value(k, v)])));
        let map: ReadonlyMap<string, { readonly v: number }> = new Map(model);
        const history: [ReadonlyMap<string, { readonly v: number }>, Map<string, { readonly v: number }>][] = [];
        for (const s of steps) {
          const next = new Map(model);
          for (const k of s.removed) next.delete(k);
          for (const [k, v] of s.set) next.set(k, value(k, v));
          const patched = patchedMap(
            map,
            s.set.map(([k, v]) => [k, value(k, v)] as const),
            s.removed,
          );
          history.push([map, model]);
          model = sorted(next);
          map = patched;
          // Read in either order: looked up before its entries are merged, or after.
          expectReadsAs(map, model, KEYS);
        }
        // The maps before still read as they did.
        expect(history).toHaveLength(steps.length);
        for (const [m, was] of history) expectReadsAs(m, was, KEYS);
      }),
      { numRuns: 300 },
    );
  });

  it('starts again from a whole map past MAX_CHANGES changes, and never from the patched map before', () => {
    const base = new Map(Array.from({ length: 1000 }, (_, i) => [`ns/r${String(i).padStart(4, '0')}`, i] as const));
    let map: ReadonlyMap<string, number> = base;
    for (let i = 0; i < MAX_CHANGES; i++) {
      map = patchedMap(map, [[`ns/r${String(i).padStart(4, '0')}`, -i]]);
      expect((map as unknown as { base: unknown }).base).toBe(base);
    }
    map = patchedMap(map, [['ns/new', 1]]);
    // Made whole: a plain Map, in key order.
    expect(map).toBeInstanceOf(Map);
    expect(map.size).toBe(1001);
    expect([...map.keys()]).toEqual([...map.keys()].sort(compareStrings));
    expect(map.get('ns/r0003')).toBe(-3);
  });
});
