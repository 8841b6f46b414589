// Property: a chain of patchedMap() calls reads as the model (a Map made anew in key order after
// each change) reads: get, has, size, every iteration in key order; the maps before are never
// changed.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compareStrings } from '../src/translate/keys.js';
import { CHUNK, patchedMap } from '../src/translate/patched-map.js';

function sorted<V>(m: ReadonlyMap<string, V>): Map<string, V> {
  return new Map([...m].sort(([a], [b]) => compareStrings(a, b)));
}

function expectReadsAs<V>(map: ReadonlyMap<string, V>, model: ReadonlyMap<string, V>, probes: readonly string[]): void {
  expect(map.size).toBe(model.size);
  const read = (m: ReadonlyMap<string, V>) => probes.map((key) => [m.has(key), m.get(key)] as const);
  const got = read(map);
  const want = read(model);
  // (Values by identity: the same object under each key.)
  expect(got.every(([has, value], i) => has === want[i]![0] && value === want[i]![1])).toBe(true);
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

// Keys enough for several chunks, and steps that add enough of them to split one.
const KEYS = Array.from({ length: 400 }, (_, i) => `ns/k${i}`);
const key = fc.constantFrom(...KEYS);
const step = fc.record({ set: fc.array(fc.tuple(key, fc.nat(5)), { maxLength: 80 }), removed: fc.array(key, { maxLength: 40 }) });

describe('patchedMap (property)', () => {
  it('reads as a map made anew in key order, across a chain of patches', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(key, fc.nat(5)), { maxLength: 300 }), fc.array(step, { maxLength: 12 }), (start, steps) => {
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
      { numRuns: 100 },
    );
  });

  it('copies only the chunks a patch changes, and holds nothing of the map before it that it does not have', () => {
    const key = (i: number) => `ns/r${String(i).padStart(4, '0')}`;
    const values = Array.from({ length: 1000 }, (_, i) => ({ i }));
    const whole = new Map(values.map((v) => [key(v.i), v] as const));
    const first = patchedMap(whole, [[key(500), { i: -500 }]]);
    const chunksOf = (m: ReadonlyMap<string, unknown>) => (m as unknown as { chunks: readonly { keys: string[]; values: unknown[] }[] }).chunks;
    expect(chunksOf(first).length).toBe(Math.ceil(1000 / CHUNK));
    // One key added, one removed elsewhere: two chunks new, every other one shared.
    const second = patchedMap(first, [[key(100) + 'x', { i: 100.5 }]], [key(900)]);
    const shared = chunksOf(second).filter((c) => chunksOf(first).includes(c));
    expect(shared.length).toBe(chunksOf(first).length - 2);
    // The removed value and the one replaced are in no chunk of the map made from them.
    const held = new Set(chunksOf(second).flatMap((c) => c.values));
    expect(held.has(values[900])).toBe(false);
    expect(new Set(chunksOf(first).flatMap((c) => c.values)).has(values[500])).toBe(false);
    expect(second.size).toBe(1000);
    // Grown past twice CHUNK, a chunk is split.
    let grown: ReadonlyMap<string, unknown> = second;
    const model = new Map<string, unknown>(second);
    for (let i = 0; i < 2 * CHUNK; i++) {
      const k = `${key(10)}-${String(i).padStart(3, '0')}`;
      grown = patchedMap(grown, [[k, i]]);
      model.set(k, i);
    }
    expect(Math.max(...chunksOf(grown).map((c) => c.keys.length))).toBeLessThan(2 * CHUNK);
    expect(chunksOf(grown).length).toBeGreaterThan(chunksOf(second).length);
    expect([...model.keys()].every((k) => grown.get(k) === model.get(k))).toBe(true);
    expect(grown.size).toBe(model.size);
    expect([...grown.keys()]).toEqual([...model.keys()].sort(compareStrings));
  });
});
