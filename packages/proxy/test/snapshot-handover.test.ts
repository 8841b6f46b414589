// The hand-over of a snapshot from the main thread to a worker thread, across a structured
// clone as postMessage makes it: whole the first time, then relative to the last one, the
// routes the worker holds taken by reference (the same objects, so its compile reuses what it
// built for them), the Secrets the clone drops put back.
import { Secret, standaloneToSnapshot, validateStandaloneConfig, withVersion, type ProxySnapshot, type RouteIR } from '@tollgate/api';
import { describe, expect, it } from 'vitest';
import { HandoverGap, HandoverReceiver, HandoverSender, type Handover } from '../src/process/workers/snapshot-handover.js';
import { simpleConfig } from './helpers.js';

function routeConfig(i: number) {
  return {
    name: `r${i}`,
    matches: [{ path: { type: 'PathPrefix', value: `/r${i}` } }],
    filters: [{ type: 'RequestHeaderModifier', requestHeaderModifier: { set: [{ name: 'authorization', value: `Bearer key-${i}` }] } }],
    backends: [{ host: '127.0.0.1:9' }],
  };
}

function snapshotOf(n: number): ProxySnapshot {
  return standaloneToSnapshot(validateStandaloneConfig(simpleConfig(8080, Array.from({ length: n }, (_, i) => routeConfig(i))), 'test'), { kind: 'controller', gateway: 'edge/public' });
}

function routesOf(s: ProxySnapshot): readonly RouteIR[] {
  return s.binds[0]!.listeners[0]!.routes;
}

/** `s` with its one listener's routes replaced, the rest (and the route objects kept) shared. */
function withRoutes(s: ProxySnapshot, routes: readonly RouteIR[]): ProxySnapshot {
  const listener = s.binds[0]!.listeners[0]!;
  return withVersion({ source: s.source, binds: [{ ...s.binds[0]!, listeners: [{ ...listener, routes }] }] });
}

/** What the worker thread receives: a structured clone, as postMessage makes. */
const across = (h: Handover): Handover => structuredClone(h);

/** The credential header a route sets, read through its Secret. */
function credential(r: RouteIR): string {
  const f = r.filters[0] as unknown as { set: { value: unknown }[] };
  const v = f.set[0]!.value;
  expect(v).toBeInstanceOf(Secret);
  return (v as Secret).reveal();
}

const kinds = (h: Handover) => h.snapshot.binds.flatMap((b) => b.listeners.flatMap((l) => l.routes.map((w) => (typeof w === 'number' ? 'ref' : 'route'))));

describe('snapshot hand-over to a worker thread', () => {
  it('hands over the whole snapshot first; the worker gets an equal snapshot with its Secrets', () => {
    const sender = new HandoverSender();
    const receiver = new HandoverReceiver();
    const first = snapshotOf(5);
    const out = sender.next(first);
    // A thread that holds nothing is sent the whole hand-over; the relative one would be refused.
    expect(() => receiver.open(across(out.relative))).toThrow(HandoverGap);
    const opened = receiver.open(across(out.whole()));
    expect(opened.snapshot).toEqual(first);
    expect(routesOf(opened.snapshot).map(credential)).toEqual(['Bearer key-0', 'Bearer key-1', 'Bearer key-2', 'Bearer key-3', 'Bearer key-4']);
  });

  it('then sends only the routes that changed: the worker keeps its own objects for the others', () => {
    const sender = new HandoverSender();
    const receiver = new HandoverReceiver();
    const first = snapshotOf(30);
    const a = receiver.open(across(sender.next(first).whole()));
    a.applied();
    const held = routesOf(a.snapshot);

    // Route 7 edited (a new object, as the snapshot source makes it), route 30 added, route 29 removed.
    const edited = { ...routesOf(first)[7]!, name: 'r7-edited' };
    const added = routesOf(snapshotOf(31))[30]!;
    const next = withRoutes(first, [...routesOf(first).slice(0, 7), edited, ...routesOf(first).slice(8, 29), added]);
    const out = sender.next(next);
    expect(kinds(out.relative).filter((k) => k === 'route')).toHaveLength(2);
    expect(kinds(out.relative).filter((k) => k === 'ref')).toHaveLength(28);

    const b = receiver.open(across(out.relative));
    expect(b.snapshot).toEqual(next);
    const now = routesOf(b.snapshot);
    const kept = now.map((r, i) => r === held[i]);
    expect(kept).toEqual(Array.from({ length: 30 }, (_, i) => i !== 7 && i !== 29));
    expect(now[7]!.name).toBe('r7-edited');
    // The new routes' Secrets came across with them; the kept ones still have theirs.
    expect(credential(now[7]!)).toBe('Bearer key-7');
    expect(credential(now[29]!)).toBe('Bearer key-30');
    expect(credential(now[0]!)).toBe('Bearer key-0');
  });

  it('a worker that did not apply the last hand-over refuses the next relative one, and takes the whole one', () => {
    const sender = new HandoverSender();
    const receiver = new HandoverReceiver();
    const first = snapshotOf(3);
    receiver.open(across(sender.next(first).whole())).applied();
    // Opened but never applied (the runtime refused it): the worker still holds the first.
    const second = withRoutes(first, [...routesOf(first), routesOf(snapshotOf(4))[3]!]);
    receiver.open(across(sender.next(second).relative));
    const third = withRoutes(second, routesOf(second).slice(1));
    const out = sender.next(third);
    expect(() => receiver.open(across(out.relative))).toThrow(/relative to hand-over 2, and this thread holds 1/);
    const opened = receiver.open(across(out.whole()));
    expect(opened.snapshot).toEqual(third);
  });

  it('an equal route that is another object is sent again (a whole snapshot read from a file)', () => {
    const sender = new HandoverSender();
    const receiver = new HandoverReceiver();
    receiver.open(across(sender.next(snapshotOf(4)).whole())).applied();
    const reread = snapshotOf(4);
    const out = sender.next(reread);
    expect(kinds(out.relative)).toEqual(['route', 'route', 'route', 'route']);
    expect(receiver.open(across(out.relative)).snapshot).toEqual(reread);
  });

  it('a route that leaves and comes back, the same object, is sent again (the worker let it go)', () => {
    const sender = new HandoverSender();
    const receiver = new HandoverReceiver();
    const first = snapshotOf(3);
    receiver.open(across(sender.next(first).whole())).applied();
    const without = withRoutes(first, routesOf(first).slice(0, 2));
    const b = sender.next(without);
    expect(kinds(b.relative)).toEqual(['ref', 'ref']);
    receiver.open(across(b.relative)).applied();
    const back = sender.next(first);
    expect(kinds(back.relative)).toEqual(['ref', 'ref', 'route']);
    const opened = receiver.open(across(back.relative));
    expect(opened.snapshot).toEqual(first);
    expect(credential(routesOf(opened.snapshot)[2]!)).toBe('Bearer key-2');
  });

  it('a route listed twice stays one object on the worker', () => {
    const sender = new HandoverSender();
    const receiver = new HandoverReceiver();
    const first = snapshotOf(2);
    const r = routesOf(first)[0]!;
    const twice = withVersion({ source: first.source, binds: [{ ...first.binds[0]!, listeners: [{ ...first.binds[0]!.listeners[0]!, routes: [r, routesOf(first)[1]!] }, { ...first.binds[0]!.listeners[0]!, name: 'other', routes: [r] }] }] });
    const a = receiver.open(across(sender.next(twice).whole()));
    a.applied();
    expect(a.snapshot.binds[0]!.listeners[1]!.routes[0]).toBe(a.snapshot.binds[0]!.listeners[0]!.routes[0]);
    const b = receiver.open(across(sender.next(twice).relative));
    expect(b.snapshot.binds[0]!.listeners[1]!.routes[0]).toBe(a.snapshot.binds[0]!.listeners[0]!.routes[0]);
  });

  it("hands a listener's policy over by number while it is the same object, one object for the listeners sharing it", () => {
    const sender = new HandoverSender();
    const receiver = new HandoverReceiver();
    const policyOf = (status: number) =>
      standaloneToSnapshot(validateStandaloneConfig(simpleConfig(8080, [routeConfig(0)], { policies: { traffic: { directResponse: { status } } } }), 'test'), { kind: 'controller', gateway: 'edge/public' }).binds[0]!.listeners[0]!.policy;
    const first = snapshotOf(3);
    const shared = policyOf(418);
    // One Gateway-level policy object on both listeners, as the controller sends it.
    const two = (policy: typeof shared): ProxySnapshot => {
      const l = first.binds[0]!.listeners[0]!;
      return withVersion({ source: first.source, binds: [{ ...first.binds[0]!, listeners: [{ ...l, policy }, { ...l, name: 'other', hostname: 'other.example.com', policy }] }] });
    };
    const policies = (s: ProxySnapshot) => s.binds[0]!.listeners.map((l) => l.policy);
    const handedPolicies = (h: Handover) => h.snapshot.binds[0]!.listeners.map((l) => (typeof l.policy === 'number' ? 'ref' : l.policy === null ? null : 'policy'));
    const a = receiver.open(across(sender.next(two(shared)).whole()));
    a.applied();
    expect(policies(a.snapshot)).toEqual([shared, shared]);
    expect(policies(a.snapshot)[1]).toBe(policies(a.snapshot)[0]);
    // The same policy object: by number, and the worker's own object.
    const same = sender.next(two(shared));
    expect(handedPolicies(same.relative)).toEqual(['ref', 'ref']);
    const b = receiver.open(across(same.relative));
    b.applied();
    expect(policies(b.snapshot)[0]).toBe(policies(a.snapshot)[0]);
    expect(policies(b.snapshot)[1]).toBe(policies(a.snapshot)[0]);
    // Another policy object: sent, and equal to it on the worker.
    const changed = policyOf(429);
    const next = sender.next(two(changed));
    expect(handedPolicies(next.relative)).toEqual(['policy', 'policy']);
    const c = receiver.open(across(next.relative));
    expect(policies(c.snapshot)).toEqual([changed, changed]);
    expect(policies(c.snapshot)[0]).not.toBe(policies(b.snapshot)[0]);
    expect(policies(c.snapshot)[0]!.directResponse?.status).toBe(429);
    // And none: none.
    c.applied();
    expect(policies(receiver.open(across(sender.next(two(null)).relative)).snapshot)).toEqual([null, null]);
  });
});
