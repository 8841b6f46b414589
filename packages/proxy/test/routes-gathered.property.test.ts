// What a compile gathers from the routes (their parts, names, the endpoints and Service ports they
// send to, the detached ones) is changed by what each listener's list gained and lost, on a fork
// of the serving snapshot's. Over random sequences of snapshots (listeners that come and go, a
// listener key listed twice, routes moved between listeners or listed twice, lists kept as the
// same array, applies refused), it must equal what a compile from scratch gathers, and a refused
// apply must leave the serving snapshot's as it was.
import { standaloneToSnapshot, validateStandaloneConfig, type BackendIR, type ListenerIR, type ProxySnapshot, type RouteIR } from '@tollgate/api';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compileSnapshot, type CompiledSnapshot } from '../src/routing/compile.js';
import { standalonePickerDeps } from '../src/routing/backend-picker.js';
import { CountedKeys, LayeredMap, listingChanges } from '../src/routing/routes-gathered.js';
import { LimiterStore } from '../src/ratelimit/local/limiter.js';
import { systemClock } from '../src/ratelimit/clock.js';
import { simpleConfig } from './helpers.js';

const POOL = 8;
const HOSTNAMES = ['example.com', 'other.example.com', '*.example.com'];

const service = (n: number, protocol?: 'h2c'): BackendIR => ({ kind: 'service', name: `s${n}.ai.svc.cluster.local:80`, namespace: 'ai', service: `s${n}`, port: 80, weight: 1, ...(protocol ? { protocol } : {}) });

/** Routes of every kind of sending: static endpoints (shared by some), Services in two ways of speaking, both. */
const base = standaloneToSnapshot(
  validateStandaloneConfig(
    simpleConfig(
      8080,
      Array.from({ length: POOL }, (_, i) => ({
        name: `r${i}`,
        hostnames: [[], ['x.example.com'], ['example.com']][i % 3],
        matches: [{ path: { type: 'PathPrefix', value: `/r${i}` } }],
        backends: [{ host: `198.18.0.${i % 3}:8000` }],
      })),
      { hostname: 'example.com' },
    ),
    'test',
  ),
  { kind: 'controller', gateway: 'edge/public' },
);
const pool: RouteIR[] = base.binds[0]!.listeners[0]!.routes.map((r, i) => {
  if (i % 4 === 1) return { ...r, backends: [service(i % 2)] };
  if (i % 4 === 2) return { ...r, backends: [service(i % 2, 'h2c')] };
  if (i % 4 === 3) return { ...r, backends: [...r.backends, { ...service(1), weight: 2 }] };
  return r;
});
const endpoints = [0, 1].map((n) => ({ name: service(n).name, endpoints: [{ address: `198.18.1.${n}`, port: 8000 }] }));

/** One listener of a step: which name and hostname (two alike give one key twice), its routes, or the array it had at the last step. */
const arbListener = fc.record({ at: fc.nat({ max: 3 }), routes: fc.array(fc.nat({ max: POOL - 1 }), { maxLength: 7 }), same: fc.boolean() });
const arbStep = fc.record({ listeners: fc.array(arbListener, { maxLength: 4 }), refused: fc.boolean() });

function snapshotAt(listeners: readonly ListenerIR[]): ProxySnapshot {
  return { ...base, endpoints, binds: [{ ...base.binds[0]!, listeners }] };
}

/** What a compiled snapshot gathered, as plain sorted values. */
function gatheredOf(c: CompiledSnapshot) {
  return {
    parts: [...c.parts.keys()].map((r) => pool.indexOf(r)).sort(),
    routeNames: [...c.routeNames].sort(),
    upstreams: [...c.upstreams].sort(),
    services: [...c.serviceEndpoints.keys()].sort(),
    suffixes: [...c.gathered.services].map(([name, s]) => `${name} ${[...s].sort().join(',')}`).sort(),
    detached: [...c.detached].sort(),
  };
}

describe('what the routes gather, changed by what the lists gained and lost (property)', () => {
  it('equals a compile from scratch after every apply; a refused apply leaves the serving snapshot\'s as it was', () => {
    fc.assert(
      fc.property(fc.array(arbStep, { minLength: 1, maxLength: 8 }), (steps) => {
        const deps = { limiters: new LimiterStore(systemClock, { maxKeys: 100 }), makeGlobal: null, picking: standalonePickerDeps() };
        let serving: CompiledSnapshot | null = null;
        for (const step of steps) {
          const listeners = step.listeners.map(({ at, routes, same }): ListenerIR => {
            const name = `l${at % 3}`;
            const hostname = HOSTNAMES[at % HOSTNAMES.length]!;
            const last = serving?.ir.binds[0]!.listeners.find((l) => l.name === name && l.hostname === hostname);
            return { ...base.binds[0]!.listeners[0]!, name, hostname, routes: same && last ? last.routes : routes.map((i) => pool[i]!) };
          });
          const next = snapshotAt(listeners);
          const before = serving && gatheredOf(serving);
          const compiled = compileSnapshot(next, { ...deps, previous: serving });
          const scratch = compileSnapshot(next);
          expect(gatheredOf(compiled)).toEqual(gatheredOf(scratch));
          // Each route listed keeps the parts the serving snapshot had for it.
          const held = [...compiled.parts.keys()].filter((r) => serving?.parts.has(r));
          expect(held.filter((r) => compiled.parts.get(r) !== serving!.parts.get(r))).toEqual([]);
          // A refused apply: the serving snapshot's gathering is as it was (the next step compiles against it again).
          expect(serving && gatheredOf(serving)).toEqual(before);
          if (step.refused) continue;
          deps.limiters.commit();
          deps.picking.services.commit(compiled.serviceEndpoints);
          serving = compiled;
        }
      }),
      { numRuns: 1000 },
    );
  });
});

describe('listingChanges', () => {
  it('gives the listings gained (positions) and lost as the multiset difference of the two lists (property)', () => {
    const routes = pool.slice(0, 4);
    fc.assert(
      fc.property(fc.array(fc.nat({ max: 3 }), { maxLength: 10 }), fc.array(fc.nat({ max: 3 }), { maxLength: 10 }), (a, b) => {
        const before = a.map((i) => routes[i]!);
        const after = b.map((i) => routes[i]!);
        const { gained, lost } = listingChanges(before, after);
        const count = (list: readonly RouteIR[]) => routes.map((r) => list.filter((x) => x === r).length);
        const gainedRoutes = gained.map((i) => after[i]!);
        expect(count(before).map((n, i) => n + count(gainedRoutes)[i]! - count(lost)[i]!)).toEqual(count(after));
        // Nothing is both gained and lost.
        expect(gainedRoutes.filter((r) => lost.includes(r))).toEqual([]);
      }),
      { numRuns: 500 },
    );
  });

  it('passes over the same head and tail: one route added in the middle of 3,000 is one listing gained', () => {
    const list = Array.from({ length: 3000 }, (_, i) => pool[i % POOL]!);
    const added = { ...pool[0]! };
    expect(listingChanges(list, [...list.slice(0, 1500), added, ...list.slice(1500)])).toEqual({ gained: [1500], lost: [] });
    expect(listingChanges(list, list.slice(1))).toEqual({ gained: [], lost: [list[0]] });
  });
});

describe('LayeredMap', () => {
  it('each fork reads as a Map given the same changes, and every earlier fork stays as it was, across new roots and settles (property)', () => {
    const arbOp = fc.oneof(
      fc.record({ set: fc.nat({ max: 120 }), value: fc.nat() }),
      fc.record({ del: fc.nat({ max: 120 }) }),
      fc.constant({ fork: true as const }),
      fc.constant({ settle: true as const }),
    );
    fc.assert(
      fc.property(fc.array(arbOp, { maxLength: 600 }), (ops) => {
        let map = new LayeredMap<number, number>();
        let model = new Map<number, number>();
        const versions: [LayeredMap<number, number>, Map<number, number>][] = [];
        for (const op of ops) {
          if ('fork' in op) {
            versions.push([map, model]);
            map = map.fork();
            model = new Map(model);
          } else if ('settle' in op) {
            // A new root of a grown layer: the same entries, and no earlier fork changed.
            map.settle();
          } else if ('set' in op) {
            map.set(op.set, op.value);
            model.set(op.set, op.value);
          } else {
            map.delete(op.del);
            model.delete(op.del);
          }
        }
        versions.push([map, model]);
        for (const [m, expected] of versions) {
          expect(m.size).toBe(expected.size);
          expect(new Map(m)).toEqual(expected);
          for (let k = 0; k <= 120; k++) {
            expect(m.has(k)).toBe(expected.has(k));
            expect(m.get(k)).toBe(expected.get(k));
          }
        }
      }),
      { numRuns: 200 },
    );
  });
});

describe('CountedKeys', () => {
  it('a fork shares the table until either side changes it', () => {
    const a = new CountedKeys<string>();
    a.add('x');
    a.add('x');
    const b = a.fork();
    expect(b.delete('x')).toBe(false);
    expect(b.delete('x')).toBe(true);
    expect([...b]).toEqual([]);
    expect([...a]).toEqual(['x']);
    expect(b.add('y')).toBe(true);
    expect(a.has('y')).toBe(false);
    expect(() => b.delete('z')).toThrow(/not held/);
    // What left since the one it was forked from (a key that came back did not leave).
    const c = b.fork();
    c.add('x');
    c.delete('y');
    c.delete('x');
    c.add('w');
    c.delete('w');
    c.add('w');
    expect(c.leftSince(b)).toEqual(['y', 'x']);
    expect(c.leftSince(a)).toBeNull();
    expect(c.leftSince(new Set(['y']))).toBeNull();
  });
});
