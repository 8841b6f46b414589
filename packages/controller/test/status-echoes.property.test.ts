// Property: withoutEchoes() hands out, for each object, the object handed out last time under its
// key when the two differ in their status, resourceVersion and managedFields alone, and the
// object itself otherwise; and the last list handed out, the same array, when that is every
// object. Checked against a model that compares canonical JSON texts, over random sequences of
// lists (echoes, edits of the spec, of labels and of managedFields, adds, deletes, moves, a
// caller that changes its array afterwards).
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { sameButStatus as sameButStatusOf, withoutEchoes, type Keyed } from '../src/translate/status-echoes.js';

interface Obj {
  metadata: { name: string; namespace: string; resourceVersion?: string; labels?: Record<string, string>; managedFields?: unknown[] };
  spec: unknown;
  status?: unknown;
}

/** JSON with sorted keys: two values have the same text when they are equal as JSON. */
function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (v !== null && typeof v === 'object')
    return `{${Object.keys(v)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical((v as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  return JSON.stringify(v) ?? 'undefined';
}

/** The model: what a status write leaves equal. */
function specOf(o: Obj): string {
  const { status: _s, metadata, ...rest } = o;
  const { resourceVersion: _rv, managedFields: _mf, ...meta } = metadata;
  return canonical([meta, rest]);
}

const NAMES = ['a', 'b', 'c', 'd', 'e', 'f'];
const SPECS: unknown[] = [{ rules: [{ weight: 1 }] }, { rules: [{ weight: 2 }] }, { rules: [] }, { hostnames: ['x.example.com'], rules: [{ weight: 1 }] }, { rules: [{ weight: 1 }], extra: null }];

type Op = readonly [what: 'echo' | 'edit' | 'label' | 'fields' | 'add' | 'delete' | 'move' | 'copy' | 'keep', at: number, n: number];
const op = fc.tuple(fc.constantFrom('echo', 'edit', 'label', 'fields', 'add', 'delete', 'move', 'copy', 'keep'), fc.nat(), fc.nat()) as fc.Arbitrary<Op>;

function make(name: string, n: number): Obj {
  return { metadata: { name, namespace: 'ns', resourceVersion: String(n) }, spec: structuredClone(SPECS[n % SPECS.length]) };
}

function applyOp(list: Obj[], [what, at, n]: Op): void {
  const i = list.length ? at % list.length : 0;
  const o = list[i];
  switch (what) {
    case 'echo':
      if (o) list[i] = { ...structuredClone(o), metadata: { ...structuredClone(o.metadata), resourceVersion: `e${n}`, managedFields: [{ manager: 'm', time: String(n) }] }, status: { n } };
      return;
    case 'edit':
      if (o) list[i] = { ...structuredClone(o), spec: structuredClone(SPECS[n % SPECS.length]) };
      return;
    case 'label':
      if (o) list[i] = { ...structuredClone(o), metadata: { ...structuredClone(o.metadata), labels: { l: String(n % 2) } } };
      return;
    case 'fields':
      // managedFields alone: what a status write changes, so an echo.
      if (o) list[i] = { ...structuredClone(o), metadata: { ...structuredClone(o.metadata), managedFields: [{ manager: String(n % 3) }] } };
      return;
    case 'add': {
      const name = NAMES[n % NAMES.length]!;
      if (!list.some((x) => x.metadata.name === name)) list.splice(i, 0, make(name, n));
      return;
    }
    case 'delete':
      if (o) list.splice(i, 1);
      return;
    case 'move':
      if (o) list.push(...list.splice(i, 1));
      return;
    case 'copy':
      // The same content as a new object (a relist).
      if (o) list[i] = structuredClone(o);
      return;
    case 'keep':
      return;
  }
}

let kinds = 0;

/** Objects of any shape (the function reads them as JSON). */
const sameButStatus = (a: object, b: object): boolean => sameButStatusOf(a as Keyed, b as Keyed);

describe('withoutEchoes (property)', () => {
  it('hands out the object before for an echo, the object given otherwise, and the last list when nothing else changed', () => {
    fc.assert(
      fc.property(fc.array(fc.array(op, { maxLength: 6 }), { minLength: 1, maxLength: 12 }), fc.boolean(), (rounds, scribble) => {
        const kind = `Kind${kinds++}`;
        const list: Obj[] = NAMES.slice(0, 3).map((name, n) => make(name, n));
        let out = withoutEchoes(kind, list);
        expect(out).toEqual(list);
        for (const ops of rounds) {
          for (const o of ops) applyOp(list, o);
          const before = new Map(out.map((o) => [o.metadata.name, o] as const));
          const lastOut = out;
          const given = [...list];
          out = withoutEchoes(kind, list);
          // A caller that reuses its array: what was handed out and remembered is not changed by it.
          if (scribble) list.reverse();
          expect(out).toHaveLength(given.length);
          given.forEach((o, i) => {
            const was = before.get(o.metadata.name);
            const expected = was !== undefined && specOf(was) === specOf(o) ? was : o;
            expect(out[i]).toBe(expected);
          });
          const allKept = out.length === lastOut.length && out.every((o, i) => o === lastOut[i]);
          expect(out === lastOut).toBe(allKept);
          if (scribble) list.reverse();
        }
      }),
      { numRuns: 500 },
    );
  });

  it('compares field by field, whatever the order of the keys, and counts a value nested too deep as a change', () => {
    const a = { metadata: { name: 'r', namespace: 'n', resourceVersion: '1' }, spec: { x: 1, y: [1, { z: null }] } };
    const b = { spec: { y: [1, { z: null }], x: 1 }, status: { ok: true }, metadata: { namespace: 'n', resourceVersion: '2', name: 'r' } };
    expect(sameButStatus(a, b)).toBe(true);
    expect(sameButStatus(a, { ...b, spec: { ...b.spec, x: 2 } })).toBe(false);
    expect(sameButStatus(a, { ...b, spec: { ...b.spec, w: undefined } })).toBe(false);
    expect(sameButStatus(a, { ...b, spec: { x: 1, y: { 0: 1, 1: { z: null } } } })).toBe(false);
    expect(sameButStatus(a, { ...b, metadata: { ...b.metadata, labels: {} } })).toBe(false);
    const deep = (n: number): unknown => (n ? { d: deep(n - 1) } : 0);
    const c = { metadata: { name: 'r' }, spec: deep(40) };
    expect(sameButStatus(c, structuredClone(c))).toBe(false);
    expect(sameButStatus(c, c)).toBe(true);
  });
});
