// An apply compiles in proportion to what changed: a route with no policy, on a listener whose
// policy is the same object (or none), keeps the compiled route of the last apply (one route
// edited among many builds one);
// a policy that comes to or leaves the listener reaches every route of it; a change of a
// Service's endpoints builds no route, and reaches every route to the Service.
import { standaloneToSnapshot, validateStandaloneConfig, type ListenerIR, type ProxySnapshot, type RouteIR, type ServiceBackendIR } from '@tollgate/api';
import { describe, expect, it } from 'vitest';
import { compileSnapshot, selectRoute, type CompiledRoute, type CompiledSnapshot } from '../src/routing/compile.js';
import { standalonePickerDeps, type UpstreamTarget } from '../src/routing/backend-picker.js';
import { LimiterStore } from '../src/ratelimit/local/limiter.js';
import { systemClock } from '../src/ratelimit/clock.js';
import { simpleConfig } from './helpers.js';

const N = 20;
const routeConfig = (i: number, tag = '') => ({ name: `r${i}${tag}`, matches: [{ path: { type: 'PathPrefix', value: `/r${i}` } }], backends: [{ host: '127.0.0.1:9' }] });

function snapshotOf(routes: unknown[], listener: Record<string, unknown> = {}): ProxySnapshot {
  return standaloneToSnapshot(validateStandaloneConfig(simpleConfig(8080, routes, listener), 'test'), { kind: 'controller', gateway: 'edge/public' });
}

const listenerOf = (s: ProxySnapshot): ListenerIR => s.binds[0]!.listeners[0]!;

/** `s` with its one listener replaced by `change` of it; the route objects it keeps are the same objects. */
function withListener(s: ProxySnapshot, change: (l: ListenerIR) => ListenerIR): ProxySnapshot {
  return { ...s, binds: [{ ...s.binds[0]!, listeners: [change(listenerOf(s))] }] };
}

/** The compiled route each route's path selects, in route order. */
function selected(c: CompiledSnapshot): CompiledRoute[] {
  const listener = c.binds.get(8080)!.listeners.first('example.com')!;
  return Array.from({ length: N }, (_, i) => selectRoute(listener, 'example.com', { method: 'GET', path: `/r${i}/x`, query: '', headers: {} })!.route);
}

describe('compile in proportion to the change', () => {
  const deps = { limiters: new LimiterStore(systemClock, { maxKeys: 100 }), makeGlobal: null, picking: standalonePickerDeps() };
  const compile = (s: ProxySnapshot, previous: CompiledSnapshot | null) => {
    const c = compileSnapshot(s, { ...deps, previous });
    // What the runtime's switch does with a compiled snapshot.
    deps.limiters.commit();
    deps.picking.services.commit(c.serviceEndpoints);
    return c;
  };

  it('keeps the compiled routes a change did not touch, and builds the one it did', () => {
    const first = snapshotOf(Array.from({ length: N }, (_, i) => routeConfig(i)));
    const a = compile(first, null);
    const edited: RouteIR = snapshotOf([routeConfig(7, '-edited')]).binds[0]!.listeners[0]!.routes[0]!;
    const second = withListener(first, (l) => ({ ...l, routes: l.routes.map((r, i) => (i === 7 ? edited : r)) }));
    const b = compile(second, a);
    expect(b.routesCompiled).toBe(1);
    const before = selected(a);
    const after = selected(b);
    expect(after.map((r) => r.ir.name)).toEqual(Array.from({ length: N }, (_, i) => (i === 7 ? 'main/r7-edited' : `main/r${i}`)));
    expect(after.map((r, i) => r === before[i])).toEqual(Array.from({ length: N }, (_, i) => i !== 7));
  });

  it('a policy that comes to the listener, or leaves it, reaches every route, kept objects included', () => {
    const plain = snapshotOf(Array.from({ length: N }, (_, i) => routeConfig(i)));
    const policy = listenerOf(snapshotOf([routeConfig(0)], { policies: { traffic: { directResponse: { status: 418 } } } })).policy;
    expect(policy?.directResponse?.status).toBe(418);
    const a = compile(plain, null);
    expect(selected(a).map((r) => r.direct)).toEqual(Array(N).fill(null));
    // The same route objects, the listener now with a policy: every route answers by itself.
    const b = compile(withListener(plain, (l) => ({ ...l, policy })), a);
    expect(selected(b).map((r) => r.direct?.status ?? null)).toEqual(Array(N).fill(418));
    // And without it again: none does.
    const c = compile(withListener(plain, (l) => ({ ...l, policy: null })), b);
    expect(selected(c).map((r) => r.direct)).toEqual(Array(N).fill(null));
  });

  it('on a listener with a policy, keeps the compiled routes while the policy is the same object, and makes them all anew for another', () => {
    const listener = { policies: { traffic: { rateLimit: { local: [{ requests: 100, unit: 'Minutes' }] }, directResponse: { status: 418 } } } };
    const first = snapshotOf(Array.from({ length: N }, (_, i) => routeConfig(i)), listener);
    const a = compile(first, null);
    const edited: RouteIR = snapshotOf([routeConfig(7, '-edited')]).binds[0]!.listeners[0]!.routes[0]!;
    const b = compile(withListener(first, (l) => ({ ...l, routes: l.routes.map((r, i) => (i === 7 ? edited : r)) })), a);
    const kept = selected(b).map((r, i) => r === selected(a)[i]);
    expect(kept).toEqual(Array.from({ length: N }, (_, i) => i !== 7));
    expect(selected(b).map((r) => r.direct?.status)).toEqual(Array(N).fill(418));
    // The listener's limits are compiled with each snapshot and read from its listener, never from a kept route.
    expect(b.binds.get(8080)!.listeners.first('example.com')!.policy).not.toBe(a.binds.get(8080)!.listeners.first('example.com')!.policy);
    // Another policy object (as the controller sends a policy it changed): every route is compiled with it.
    const other = listenerOf(snapshotOf([routeConfig(0)], { policies: { traffic: { rateLimit: { local: [{ requests: 100, unit: 'Minutes' }] }, directResponse: { status: 429 } } } })).policy;
    const c = compile(withListener(b.ir, (l) => ({ ...l, policy: other })), b);
    expect(selected(c).map((r, i) => r === selected(b)[i])).toEqual(Array(N).fill(false));
    expect(selected(c).map((r) => r.direct?.status)).toEqual(Array(N).fill(429));
  });

  it("a route with limits of its own is compiled again, so its budget stays the store's (GET /budgets keeps listing it)", async () => {
    const limited = { ...routeConfig(0), policies: { traffic: { rateLimit: { local: [{ requests: 5, unit: 'Minutes', by: { type: 'Header', name: 'x-tenant' } }] } } } };
    const first = snapshotOf([limited, ...Array.from({ length: N - 1 }, (_, i) => routeConfig(i + 1))]);
    const a = compile(first, null);
    expect(deps.limiters.keyedEntries().map((e) => e.scope)).toEqual(['main/r0']);
    // Another route edited; the limited one is the same object.
    const edited: RouteIR = snapshotOf([routeConfig(7, '-edited')]).binds[0]!.listeners[0]!.routes[0]!;
    compile(withListener(first, (l) => ({ ...l, routes: l.routes.map((r, i) => (i === 7 ? edited : r)) })), a);
    expect(deps.limiters.keyedEntries().map((e) => e.scope)).toEqual(['main/r0']);
  });

  it('a listener whose route list is the same array is taken whole; one that leaves takes its routes along', () => {
    const first = snapshotOf(Array.from({ length: N }, (_, i) => routeConfig(i)));
    const other = snapshotOf([{ ...routeConfig(100), backends: [{ host: '198.18.0.9:8000' }] }]).binds[0]!.listeners[0]!;
    const bind = first.binds[0]!;
    const two: ProxySnapshot = { ...first, binds: [{ ...bind, listeners: [...bind.listeners, { ...other, name: 'second', hostname: 'second.example.com' }] }] };
    const a = compile(two, null);
    expect(a.routeNames.has('main/r100')).toBe(true);
    // An endpoint change: the same lists, nothing compiled, every compiled route the same object.
    const b = compile({ ...two, endpoints: [] }, a);
    expect(b.routesCompiled).toBe(0);
    expect(selected(b).map((r, i) => r === selected(a)[i])).toEqual(Array(N).fill(true));
    // The second listener leaves; the first keeps its list: the other's route goes from what the snapshot holds.
    const c = compile({ ...two, binds: [{ ...bind, listeners: [bind.listeners[0]!] }] }, b);
    expect(c.routesCompiled).toBe(0);
    expect([...c.routeNames].sort()).toEqual([...a.routeNames].filter((n) => n !== 'main/r100').sort());
    expect(c.parts.size).toBe(N);
    expect(c.upstreams.has('198.18.0.9:8000')).toBe(false);
    expect(b.upstreams.has('198.18.0.9:8000')).toBe(true);
  });

  it('an endpoint change keeps every compiled route, and their pickers send to the new endpoints alone', () => {
    const svc: ServiceBackendIR = { kind: 'service', name: 'llm.ai.svc.cluster.local:80', namespace: 'ai', service: 'llm', port: 80, weight: 1 };
    const plain = snapshotOf(Array.from({ length: N }, (_, i) => routeConfig(i)));
    const toService = withListener(plain, (l) => ({ ...l, routes: l.routes.map((r) => ({ ...r, backends: [svc] })) }));
    const at = (...hosts: number[]): ProxySnapshot => ({ ...toService, endpoints: [{ name: svc.name, endpoints: hosts.map((h) => ({ address: `198.18.0.${h}`, port: 8000 })) }] });
    const picked = (c: CompiledSnapshot): string[] => [...new Set(selected(c).flatMap((r) => Array.from({ length: 8 }, () => (r.parts.pickBackend() as UpstreamTarget).name)))].sort();
    const a = compile(at(1, 2), null);
    expect(picked(a)).toEqual(['198.18.0.1:8000', '198.18.0.2:8000']);
    const b = compile(at(2, 3), a);
    expect(b.routesCompiled).toBe(0);
    expect(selected(b).map((r, i) => r === selected(a)[i])).toEqual(Array(N).fill(true));
    expect([...b.upstreams].sort()).toEqual(['198.18.0.2:8000', '198.18.0.3:8000']);
    expect(picked(b)).toEqual(['198.18.0.2:8000', '198.18.0.3:8000']);
    // No entry for the Service: no ready endpoint (the request gets 503).
    const c = compile(toService, b);
    expect(selected(c).map((r) => r.parts.pickBackend())).toEqual(Array(N).fill(null));
    expect(c.upstreams.size).toBe(0);
  });
});
