// Differential property: a listener's route index updated in place, snapshot after snapshot
// (routes added, edited, removed, moved between listeners and hosts, reordered, listed twice,
// given a policy of their own, a listener's hostname changed, nothing changed but the endpoints,
// an apply abandoned), answers every probe request exactly as an index built from scratch over
// the same routes, and holds exactly as much as that index. A listener whose routes did not
// change keeps its route list (the same array, as the snapshot decoder keeps it), so the
// compile's path that takes a list whole is taken as often as the one that walks it.
//
// A list that differs from the last one only between a common head and tail is spliced
// (route-index.ts splice()): the sequences mix such changes (several at once too) with those it
// falls back from (an object listed twice, a listener policy changed), compiles that throw
// midway, and views of older snapshots read after newer compiles; the routes with a policy of
// their own must be compiled anew at each apply, whichever path took their list.
import fc from 'fast-check';
import { describe, expect, it, vi } from 'vitest';
import { standaloneToSnapshot, toMatches, validateStandaloneConfig, type HTTPRouteMatch, type ListenerIR, type PolicyIR, type ProxySnapshot, type RouteIR, listedPolicies } from '@tollgate/api';
import { compileSnapshot, listedPoliciesFrom, routesServing, selectRoute, type CompiledListener, type CompiledRoute, type CompiledSnapshot } from '../src/routing/compile.js';
import { RouteIndex } from '../src/routing/route-index.js';
import { standalonePickerDeps } from '../src/routing/backend-picker.js';
import { LimiterStore } from '../src/ratelimit/local/limiter.js';
import { systemClock } from '../src/ratelimit/clock.js';
import { simpleConfig } from './helpers.js';

const LISTENER_HOSTS = [null, '*.example.com', 'a.example.com', '*.a.example.com'];
const ROUTE_HOSTS = ['a.example.com', '*.example.com', 'b.a.example.com', '*.a.example.com', 'other.org'];
const PREFIXES = ['/', '/a', '/a/', '/a/b', '/ab', '/a/b/c'];
const EXACTS = ['/a', '/a/b', '/'];
const REQ_HOSTS = ['a.example.com', 'b.a.example.com', 'c.example.com', 'x.b.a.example.com', 'other.org'];
const REQ_PATHS = ['/', '/a', '/a/', '/a/b', '/a/b/c', '/ab', '/abc', '/a/bc'];
const REQ_VARIANTS = [
  { method: 'GET', headers: {}, query: '' },
  { method: 'POST', headers: { 'x-a': '1' }, query: '' },
  { method: 'GET', headers: { 'x-a': '1', 'x-b': '2' }, query: 'q=1' },
];

const arbMatch: fc.Arbitrary<HTTPRouteMatch> = fc.record(
  {
    path: fc.oneof(
      { weight: 3, arbitrary: fc.constantFrom(...PREFIXES).map((value) => ({ type: 'PathPrefix' as const, value })) },
      { weight: 2, arbitrary: fc.constantFrom(...EXACTS).map((value) => ({ type: 'Exact' as const, value })) },
      { weight: 1, arbitrary: fc.constant({ type: 'RegularExpression' as const, value: '/a/.*' }) },
    ),
    method: fc.constantFrom('GET', 'POST'),
    headers: fc.subarray([{ name: 'x-a', value: '1' }, { name: 'x-b', value: '2' }]),
    queryParams: fc.subarray([{ name: 'q', value: '1' }]),
  },
  { requiredKeys: ['path'] },
);
// Small pools: many routes share a host and a path, so ties fall to the routes' order.
const arbRouteSpec = fc.record({ hostnames: fc.subarray(ROUTE_HOSTS, { maxLength: 2 }), matches: fc.array(arbMatch, { maxLength: 3 }) });
type RouteSpec = { hostnames: string[]; matches: HTTPRouteMatch[] };

/** A change of one route of a list: each leaves the list spliceable (no object listed twice). */
const arbRouteChange = fc.oneof(
  fc.record({ kind: fc.constant('add' as const), at: fc.nat(), listener: fc.nat(), spec: arbRouteSpec }),
  fc.record({ kind: fc.constant('edit' as const), at: fc.nat(), listener: fc.nat(), spec: arbRouteSpec }),
  fc.record({ kind: fc.constant('remove' as const), at: fc.nat(), listener: fc.nat() }),
  fc.record({ kind: fc.constant('move' as const), at: fc.nat(), listener: fc.nat(), to: fc.nat(), where: fc.nat() }),
  fc.record({ kind: fc.constant('policy' as const), at: fc.nat(), listener: fc.nat() }),
);

const arbListChange = fc.oneof(
  arbRouteChange,
  fc.record({ kind: fc.constant('swap' as const), at: fc.nat(), listener: fc.nat(), other: fc.nat() }),
  // A new route listed twice (one splice would put in both).
  fc.record({ kind: fc.constant('add-twice' as const), at: fc.nat(), gap: fc.nat({ max: 3 }), listener: fc.nat(), spec: arbRouteSpec }),
);

const arbOp = fc.oneof(
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('add' as const), at: fc.nat(), listener: fc.nat(), spec: arbRouteSpec }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('edit' as const), at: fc.nat(), listener: fc.nat(), spec: arbRouteSpec }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('remove' as const), at: fc.nat(), listener: fc.nat() }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('move' as const), at: fc.nat(), listener: fc.nat(), to: fc.nat(), where: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('swap' as const), at: fc.nat(), listener: fc.nat(), other: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('twice' as const), at: fc.nat(), listener: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('add-twice' as const), at: fc.nat(), gap: fc.nat({ max: 3 }), listener: fc.nat(), spec: arbRouteSpec }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('rehost' as const), listener: fc.nat(), host: fc.constantFrom(...LISTENER_HOSTS) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('abandon' as const), spec: arbRouteSpec }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('same' as const) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('abandon-same' as const) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('policy' as const), at: fc.nat(), listener: fc.nat() }) },
  // Several changes in one snapshot: a longer stretch between head and tail, or none in common.
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('batch' as const), changes: fc.array(arbListChange, { minLength: 2, maxLength: 4 }) }) },
  // The listener's policy: none, the one object, or another object (every route compiled anew).
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('listener-policy' as const), listener: fc.nat(), which: fc.constantFrom('none' as const, 'same' as const, 'other' as const) }) },
  // An apply whose compile throws midway (a new route in some listener cannot be compiled).
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('throw' as const), listener: fc.nat(), at: fc.nat(), spec: arbRouteSpec, also: fc.option(arbListChange, { nil: undefined }) }) },
);
type Op = typeof arbOp extends fc.Arbitrary<infer T> ? T : never;

let serial = 0;
function route(spec: RouteSpec, name = `r${serial++}`): RouteIR {
  return {
    name,
    origin: { kind: 'config', path: name },
    hostnames: spec.hostnames,
    matches: toMatches(spec.matches),
    filters: [],
    policy: null,
    backends: [],
    timeouts: { requestMs: null, backendRequestMs: null },
  };
}

interface ListenerModel {
  name: string;
  hostname: string | null;
  routes: RouteIR[];
  policy?: PolicyIR | null;
}

/** A route whose compile throws (its backends cannot be read). */
function unbuildable(spec: RouteSpec): RouteIR {
  const r = route(spec);
  Object.defineProperty(r, 'backends', {
    get() {
      throw new Error('unbuildable route');
    },
  });
  return r;
}

/** A policy of a route's own (a rate limit): its compiled route is made with each apply. */
const ROUTE_POLICY: PolicyIR = standaloneToSnapshot(
  validateStandaloneConfig(simpleConfig(1, [{ name: 'p', matches: [{ path: { type: 'PathPrefix', value: '/' } }], backends: [{ host: '127.0.0.1:9' }], policies: { traffic: { rateLimit: { local: [{ requests: 1000, unit: 'Minutes' }] } } } }]), 'test'),
  { kind: 'controller', gateway: 'edge/public' },
).binds[0]!.listeners[0]!.routes[0]!.policy!;

/** A listener's policy (a rate limit and a direct response): its routes are compiled with it. */
const LISTENER_POLICY: PolicyIR = standaloneToSnapshot(
  validateStandaloneConfig(
    simpleConfig(1, [{ name: 'p', matches: [{ path: { type: 'PathPrefix', value: '/' } }], backends: [{ host: '127.0.0.1:9' }] }], { policies: { traffic: { rateLimit: { local: [{ requests: 1000, unit: 'Minutes' }] }, directResponse: { status: 418 } } } }),
    'test',
  ),
  { kind: 'controller', gateway: 'edge/public' },
).binds[0]!.listeners[0]!.policy!;

/** The snapshot of the model; a listener whose routes are those of `last`'s listener keeps that array. */
function snapshot(listeners: readonly ListenerModel[], last?: ProxySnapshot): ProxySnapshot {
  const lastRoutes = new Map((last?.binds[0]!.listeners ?? []).map((l) => [l.name, l.routes]));
  const irs: ListenerIR[] = listeners.map((l) => {
    const held = lastRoutes.get(l.name);
    const routes = held && held.length === l.routes.length && held.every((r, i) => r === l.routes[i]) ? held : [...l.routes];
    return { name: l.name, protocol: 'HTTP', hostname: l.hostname, policy: l.policy ?? null, routes };
  });
  return { version: 't', source: { kind: 'file', path: 't' }, binds: [{ port: 1, address: '127.0.0.1', listeners: irs }] };
}

/** Applies one change to the model (in place); positions wrap around the lists. */
function apply(model: ListenerModel[], op: Exclude<Op, { kind: 'abandon' | 'abandon-same' | 'throw' }>): void {
  if (op.kind === 'same') return;
  if (op.kind === 'batch') {
    for (const change of op.changes) apply(model, change);
    return;
  }
  if (op.kind === 'listener-policy') {
    const l = model[op.listener % model.length]!;
    l.policy = op.which === 'none' ? null : op.which === 'same' ? LISTENER_POLICY : { ...LISTENER_POLICY };
    return;
  }
  const l = model[op.listener % model.length]!;
  const at = (n: number, extra = 0): number => n % (l.routes.length + extra);
  switch (op.kind) {
    case 'add':
      l.routes.splice(at(op.at, 1), 0, route(op.spec));
      return;
    case 'rehost':
      l.hostname = op.host;
      return;
    case 'add-twice': {
      const r = route(op.spec);
      const i = at(op.at, 1);
      l.routes.splice(i, 0, r);
      l.routes.splice(Math.min(i + 1 + op.gap, l.routes.length), 0, r);
      return;
    }
  }
  if (!l.routes.length) return;
  const i = at(op.at);
  switch (op.kind) {
    case 'edit':
      // A changed route is a new object under the same name, as the translator and the decoder make it.
      l.routes[i] = route(op.spec, l.routes[i]!.name);
      return;
    case 'remove':
      l.routes.splice(i, 1);
      return;
    case 'move': {
      const [moved] = l.routes.splice(i, 1);
      const to = model[op.to % model.length]!;
      to.routes.splice(op.where % (to.routes.length + 1), 0, moved!);
      return;
    }
    case 'swap': {
      const j = at(op.other);
      [l.routes[i], l.routes[j]] = [l.routes[j]!, l.routes[i]!];
      return;
    }
    case 'twice':
      l.routes.splice(i, 0, l.routes[i]!);
      return;
    case 'policy':
      l.routes[i] = { ...l.routes[i]!, policy: ROUTE_POLICY };
      return;
  }
}

const deps = () => ({ limiters: new LimiterStore(systemClock, { maxKeys: 100 }), makeGlobal: null, picking: standalonePickerDeps() });

function listenersOf(c: CompiledSnapshot): Map<string, CompiledListener> {
  return new Map(c.binds.get(1)!.listeners.values().map((l) => [l.ir.name, l]));
}

/** What each listener answers to every probe, and whether the route it serves is this snapshot's compiled route. */
function answers(c: CompiledSnapshot): unknown[] {
  const out: unknown[] = [];
  for (const [name, listener] of [...listenersOf(c)].sort(([x], [y]) => x.localeCompare(y))) {
    for (const host of REQ_HOSTS) {
      out.push({ name, host, serving: routesServing(listener, host) });
      for (const path of REQ_PATHS) {
        for (const v of REQ_VARIANTS) {
          const hit = selectRoute(listener, host, { ...v, path });
          // `own`: one of this snapshot's compiled routes of the listener, not one left from an earlier apply.
          out.push({ name, host, path, method: v.method, route: hit?.route.ir, matched: hit?.matched, own: hit ? listener.routes.values.includes(hit.route) : null });
        }
      }
    }
  }
  return out;
}

function sizes(c: CompiledSnapshot): Record<string, unknown> {
  return Object.fromEntries([...listenersOf(c)].map(([name, l]) => [name, l.routes.index.size()]));
}

/** The compiled routes of the routes with a policy of their own, in every listener. */
function withOwnPolicy(c: CompiledSnapshot): CompiledRoute[] {
  return [...listenersOf(c).values()].flatMap((l) => l.routes.values.filter((v) => v.ir.policy !== null));
}

/**
 * Each listener's compiled routes are its routes, in order (what a private index of an older
 * snapshot is built from), and its index knows whether its list holds an object twice (what
 * keeps the next update from taking the list whole or splicing it).
 */
function expectValuesInOrder(c: CompiledSnapshot): void {
  for (const l of listenersOf(c).values()) {
    expect(l.routes.values.map((v) => v.ir)).toEqual(l.ir.routes);
    expect(l.routes.index.listedTwice).toBe(new Set(l.ir.routes).size < l.ir.routes.length);
  }
}

describe('route index updated in place (differential property)', () => {
  // Hundreds of compiles each: on a loaded machine (a CI run) longer than the default test timeout.
  it('answers every probe as an index built from scratch, after any sequence of changes', { timeout: 180_000 }, () => {
    const splices = vi.spyOn(RouteIndex.prototype, 'splice');
    try {
      fc.assert(
        fc.property(fc.array(arbRouteSpec, { maxLength: 6 }), fc.array(arbOp, { minLength: 1, maxLength: 20 }), (initial, ops) => {
          const model: ListenerModel[] = [
            { name: 'any', hostname: null, routes: initial.map((s, i) => (i % 3 === 2 ? { ...route(s), policy: ROUTE_POLICY } : route(s))) },
            { name: 'wild', hostname: '*.example.com', routes: [] },
            { name: 'exact', hostname: 'a.example.com', routes: [] },
          ];
          const d = deps();
          let serving = compileSnapshot(snapshot(model), d);
          // The snapshot served before the one before: read after newer compiles (a request that waited).
          let older: CompiledSnapshot | null = null;
          for (const op of ops) {
            const before = serving;
            const beforeScratch = compileSnapshot(before.ir);
            let threw: unknown = null;
            if (op.kind === 'abandon') {
              // An apply compiled from the serving snapshot and then refused: the next compile starts from the serving one again.
              const tried = model.map((l) => ({ ...l, routes: [route(op.spec), ...l.routes] }));
              compileSnapshot(snapshot(tried), { ...d, previous: serving });
            } else if (op.kind === 'abandon-same') {
              // The same, for one that changed no route list (its routes with a policy of their own compiled again).
              compileSnapshot(snapshot(model, serving.ir), { ...d, previous: serving });
            } else if (op.kind === 'throw') {
              // A compile that throws where it meets a route it cannot build, after it updated the listeners before it.
              const tried = model.map((l) => ({ ...l, routes: [...l.routes] }));
              if (op.also) apply(tried, op.also);
              const l = tried[op.listener % tried.length]!;
              l.routes.splice(op.at % (l.routes.length + 1), 0, unbuildable(op.spec));
              try {
                compileSnapshot(snapshot(tried, serving.ir), { ...d, previous: serving });
              } catch (err) {
                threw = err;
              }
            } else {
              apply(model, op);
              serving = compileSnapshot(snapshot(model, before.ir), { ...d, previous: before });
            }
            expect((threw as Error | null)?.message ?? null).toBe(op.kind === 'throw' ? 'unbuildable route' : null);
            const scratch = compileSnapshot(snapshot(model));
            expect(answers(serving)).toEqual(answers(scratch));
            expect(sizes(serving)).toEqual(sizes(scratch));
            expectValuesInOrder(serving);
            expect(serving.detached).toEqual(scratch.detached);
            // The policies it lists, as the compile found them and as the runtime finds them before it compiles.
            expect(serving.policies).toEqual(listedPolicies(serving.ir));
            expect(listedPoliciesFrom(serving.ir, before)).toEqual(listedPolicies(serving.ir));
            // The routes with a policy of their own were compiled by this apply (their limits are its own).
            const stale = new Set(serving === before ? [] : withOwnPolicy(before));
            expect(withOwnPolicy(serving).filter((v) => stale.has(v))).toEqual([]);
            // The snapshot it replaced still answers as it did (it serves until the switch, and after a refused one).
            expect(answers(before)).toEqual(answers(beforeScratch));
            expect(older && answers(older)).toEqual(older && answers(compileSnapshot(older.ir)));
            older = before;
          }
        }),
        { numRuns: 150 },
      );
      // The splice was taken often (the walk is, for an object listed twice, a listener's policy or hostname changed).
      expect(splices.mock.calls.length).toBeGreaterThan(250);
    } finally {
      splices.mockRestore();
    }
  });

  // Hundreds of compiles each: on a loaded machine (a CI run) longer than the default test timeout.
  it('answers as a build from scratch while routes come, leave, change and move in the middle of a long list', { timeout: 180_000 }, () => {
    const splices = vi.spyOn(RouteIndex.prototype, 'splice');
    try {
      fc.assert(
        fc.property(
          fc.array(arbRouteSpec, { minLength: 150, maxLength: 300 }),
          fc.array(fc.record({ change: arbRouteChange, also: fc.oneof({ weight: 4, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: arbRouteChange }), check: fc.boolean() }), { minLength: 10, maxLength: 40 }),
          (initial, steps) => {
            // Every fifth with a policy of its own: moved within a splice, it is compiled anew all the same.
            const model: ListenerModel[] = [{ name: 'any', hostname: null, routes: initial.map((s, i) => (i % 5 ? route(s) : { ...route(s), policy: ROUTE_POLICY })) }];
            const d = deps();
            let serving = compileSnapshot(snapshot(model), d);
            for (const { change, also, check } of steps) {
              const before = serving;
              apply(model, change);
              if (also) apply(model, also);
              serving = compileSnapshot(snapshot(model, before.ir), { ...d, previous: before });
              const scratch = compileSnapshot(snapshot(model));
              expect(sizes(serving)).toEqual(sizes(scratch));
              expectValuesInOrder(serving);
              expect(serving.policies).toEqual(listedPolicies(serving.ir));
              expect(listedPoliciesFrom(serving.ir, before)).toEqual(listedPolicies(serving.ir));
              const stale = new Set(withOwnPolicy(before));
              expect(withOwnPolicy(serving).filter((v) => stale.has(v))).toEqual([]);
              expect(check ? answers(serving) : null).toEqual(check ? answers(scratch) : null);
            }
            expect(answers(serving)).toEqual(answers(compileSnapshot(snapshot(model))));
          },
        ),
        { numRuns: 25 },
      );
      expect(splices.mock.calls.length).toBeGreaterThan(250);
    } finally {
      splices.mockRestore();
    }
  });

  it('holds what a build from scratch holds after many routes came and left', () => {
    const d = deps();
    const spec = (i: number): RouteSpec => ({
      // Shared hosts, and each route's own (its host entry must go when it does).
      hostnames: [i % 3 ? `h${i % 7}.example.com` : '*.example.com', `own${i}.example.com`],
      matches: [{ path: { type: 'PathPrefix', value: `/t${i}/v1` } }, { path: { type: 'Exact', value: `/x${i % 5}` }, headers: [{ name: 'x-a', value: String(i) }] }, { path: { type: 'RegularExpression', value: `/r${i}/.*` } }],
    });
    const model: ListenerModel[] = [{ name: 'any', hostname: null, routes: Array.from({ length: 20 }, (_, i) => route(spec(i), `base${i}`)) }];
    const start = compileSnapshot(snapshot(model));
    let serving = compileSnapshot(snapshot(model), d);
    const l = model[0]!;
    const added: RouteIR[] = [];
    for (let round = 0; round < 300; round++) {
      // Five routes come (anywhere), then the five added longest ago leave.
      for (let k = 0; k < 5; k++) {
        const r = route(spec(1000 + round * 5 + k));
        added.push(r);
        l.routes.splice((round * 7 + k * 3) % (l.routes.length + 1), 0, r);
      }
      serving = compileSnapshot(snapshot(model), { ...d, previous: serving });
      const leaving = new Set(added.splice(0, added.length > 10 ? 5 : 0));
      l.routes = l.routes.filter((r) => !leaving.has(r));
      serving = compileSnapshot(snapshot(model), { ...d, previous: serving });
      expect(sizes(serving)).toEqual(sizes(compileSnapshot(snapshot(model))));
    }
    l.routes = l.routes.filter((r) => !added.includes(r));
    serving = compileSnapshot(snapshot(model), { ...d, previous: serving });
    expect(sizes(serving)).toEqual(sizes(compileSnapshot(snapshot(model))));
    expect(sizes(serving)).toEqual(sizes(start));
    expect(answers(serving)).toEqual(answers(start));
  });

  it('lists a host\'s routes for traces as a build from scratch does, whatever order they came in', () => {
    const d = deps();
    const model: ListenerModel[] = [{ name: 'any', hostname: null, routes: [] }];
    let serving = compileSnapshot(snapshot(model), d);
    // Each goes in front of the last: exact paths and trie branches made in the reverse of config order.
    for (const m of [{ path: { type: 'PathPrefix' as const, value: '/ab' } }, { path: { type: 'PathPrefix' as const, value: '/a' } }, { path: { type: 'Exact' as const, value: '/a/b' } }, { path: { type: 'Exact' as const, value: '/a' } }]) {
      model[0]!.routes.unshift(route({ hostnames: [], matches: [m] }));
      serving = compileSnapshot(snapshot(model), { ...d, previous: serving });
    }
    expect(routesServing(listenersOf(serving).get('any')!, 'a.example.com')).toEqual(model[0]!.routes.map((r) => r.name));
    expect(answers(serving)).toEqual(answers(compileSnapshot(snapshot(model))));
  });

  it('renumbers when routes added at one place leave no number between their neighbours', () => {
    const d = deps();
    const tie = { hostnames: ['a.example.com'], matches: [{ path: { type: 'PathPrefix' as const, value: '/a' } }] };
    const model: ListenerModel[] = [{ name: 'any', hostname: null, routes: [route(tie), route(tie)] }];
    let serving = compileSnapshot(snapshot(model), d);
    // Each new route goes right after the first (between it and the last one added), then right
    // before the last: halving the room each time, towards the lower and towards the higher neighbour.
    for (let i = 0; i < 160; i++) {
      const routes = model[0]!.routes;
      routes.splice(i < 80 ? 1 : routes.length - 1, 0, route(tie));
      serving = compileSnapshot(snapshot(model), { ...d, previous: serving });
      const hit = selectRoute(listenersOf(serving).get('any')!, 'a.example.com', { method: 'GET', path: '/a', query: '', headers: {} });
      expect(hit?.route.ir).toBe(model[0]!.routes[0]);
      // The tied routes in config order (what a trace of the host lists), as a build from scratch has them.
      expect(answers(serving)).toEqual(answers(compileSnapshot(snapshot(model))));
    }
    // The first route wins the tie; take it away and the one added last (now first) must win.
    model[0]!.routes.shift();
    serving = compileSnapshot(snapshot(model), { ...d, previous: serving });
    expect(answers(serving)).toEqual(answers(compileSnapshot(snapshot(model))));
  });
});
