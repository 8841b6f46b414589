// The hand-over of a snapshot from the main thread to a worker thread, across a structured
// clone as postMessage makes it: whole the first time, then relative to the last one, the
// routes the worker holds taken by reference (the same objects, so its compile reuses what it
// built for them), the Secrets the clone drops put back.
import { Secret, standaloneToSnapshot, validateStandaloneConfig, withVersion, type ProxySnapshot, type RouteIR } from '@tollgate/api';
import fc from 'fast-check';
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

/**
 * How each listener's routes crossed: 'list' for a list the thread holds (its number alone), else
 * per route 'ref' (held) or 'route' (sent), between 'head N' and 'tail N' for a list made from one
 * the thread holds.
 */
const kinds = (h: Handover) =>
  h.snapshot.binds.flatMap((b) =>
    b.listeners.flatMap((l) => {
      const w = l.routes;
      if (!('routes' in w)) return ['list'];
      const each = w.routes.map((x) => (typeof x === 'number' ? 'ref' : 'route'));
      return 'from' in w ? [`head ${w.head}`, ...each, `tail ${w.tail}`] : each;
    }),
  );

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
    // Made from the list the worker holds: its first 7 routes kept, the other 23 named (21 held).
    expect(kinds(out.relative)[0]).toBe('head 7');
    expect(kinds(out.relative).at(-1)).toBe('tail 0');
    expect(kinds(out.relative).filter((k) => k === 'route')).toHaveLength(2);
    expect(kinds(out.relative).filter((k) => k === 'ref')).toHaveLength(21);

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

  it('a route list that is the same array crosses as its number: the worker serves its own array (an endpoint change)', () => {
    const sender = new HandoverSender();
    const receiver = new HandoverReceiver();
    const first = snapshotOf(30);
    const a = receiver.open(across(sender.next(first).whole()));
    a.applied();
    const endpoints = [{ name: 'llm.ai.svc.cluster.local:80', endpoints: [{ address: '198.18.0.7', port: 8000 }] }];
    const out = sender.next({ ...first, endpoints });
    expect(kinds(out.relative)).toEqual(['list']);
    expect(out.relative.gone).toEqual({ lists: [], routes: [] });
    const b = receiver.open(across(out.relative));
    expect(b.snapshot).toEqual({ ...first, endpoints });
    expect(routesOf(b.snapshot)).toBe(routesOf(a.snapshot));
    b.applied();
    // A thread restarted since is sent every route, in the same numbers.
    const fresh = new HandoverReceiver();
    const whole = fresh.open(across(out.whole()));
    expect(kinds(out.whole())).toEqual(Array(30).fill('route'));
    expect(whole.snapshot).toEqual({ ...first, endpoints });
  });

  it('names the lists and routes that left, and the worker forgets them once applied (a later reference to one is a gap)', () => {
    const sender = new HandoverSender();
    const receiver = new HandoverReceiver();
    const first = snapshotOf(5);
    const a = sender.next(first);
    receiver.open(across(a.whole())).applied();
    const listNumber = (h: Handover) => h.snapshot.binds[0]!.listeners[0]!.routes.list;
    const routeNumbers = (h: Handover) => {
      const l = h.snapshot.binds[0]!.listeners[0]!.routes;
      return 'routes' in l ? l.routes.map((w) => (typeof w === 'number' ? w : w.id)) : [];
    };
    const numbers = routeNumbers(a.whole());
    // Route 2 edited: the list is new, the old list and route 2 left.
    const edited = { ...routesOf(first)[2]!, name: 'r2-edited' };
    const second = withRoutes(first, routesOf(first).map((r, i) => (i === 2 ? edited : r)));
    const b = sender.next(second);
    expect(kinds(b.relative)).toEqual(['head 2', 'route', 'tail 2']);
    expect(b.relative.gone).toEqual({ lists: [listNumber(a.relative)], routes: [numbers[2]] });
    const opened = receiver.open(across(b.relative));
    expect(opened.snapshot).toEqual(second);
    opened.applied();
    // A hand-over naming what left (forged here: the sender never does) is refused, and so is a list never sent.
    const h = sender.next(second).relative;
    const forged = (routes: Handover['snapshot']['binds'][number]['listeners'][number]['routes']): Handover => {
      const l = h.snapshot.binds[0]!.listeners[0]!;
      return { ...h, snapshot: { ...h.snapshot, binds: [{ ...h.snapshot.binds[0]!, listeners: [{ ...l, routes }] }] } };
    };
    expect(() => receiver.open(across(forged({ list: listNumber(a.relative) })))).toThrow(/refers to route list \d+, which hand-over \d+ did not have/);
    expect(() => receiver.open(across(forged({ list: 999, routes: [numbers[2]!] })))).toThrow(/refers to route \d+, which hand-over \d+ did not have/);
    expect(() => receiver.open(across(forged({ list: 999, routes: [numbers[3]!] })))).not.toThrow();
    // A list made from one that left, or of more routes than it has, is refused too.
    expect(() => receiver.open(across(forged({ list: 999, from: listNumber(a.relative), head: 1, tail: 0, routes: [] })))).toThrow(/refers to route list \d+, which hand-over \d+ did not have/);
    expect(() => receiver.open(across(forged({ list: 999, from: listNumber(b.relative), head: 4, tail: 2, routes: [] })))).toThrow(/first 4 and last 2 routes of list \d+, which has 5/);
  });

  it('one array on two listeners crosses once, and is one array on the worker', () => {
    const sender = new HandoverSender();
    const receiver = new HandoverReceiver();
    const first = snapshotOf(3);
    const l = first.binds[0]!.listeners[0]!;
    const shared = withVersion({ source: first.source, binds: [{ ...first.binds[0]!, listeners: [l, { ...l, name: 'other', hostname: 'other.example.com' }] }] });
    const out = sender.next(shared).whole();
    expect(kinds(out)).toEqual(['route', 'route', 'route', 'list']);
    const a = receiver.open(across(out));
    expect(a.snapshot).toEqual(shared);
    expect(a.snapshot.binds[0]!.listeners[1]!.routes).toBe(a.snapshot.binds[0]!.listeners[0]!.routes);
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
    expect(kinds(b.relative)).toEqual(['head 2', 'tail 0']);
    receiver.open(across(b.relative)).applied();
    const back = sender.next(first);
    expect(kinds(back.relative)).toEqual(['head 2', 'route', 'tail 0']);
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

  it('a route listed twice in one list is named as gone once no list holds it', () => {
    const sender = new HandoverSender();
    const first = snapshotOf(2);
    const [r, other] = routesOf(first);
    sender.next(withRoutes(first, [r!, other!, r!]));
    expect(sender.next(withRoutes(first, [r!])).relative.gone.routes).toHaveLength(1);
    expect(sender.next(withRoutes(first, [other!])).relative.gone.routes).toHaveLength(1);
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
    // Sent once: the second listener names the one the first carried.
    expect(handedPolicies(next.relative)).toEqual(['policy', 'ref']);
    const c = receiver.open(across(next.relative));
    expect(policies(c.snapshot)).toEqual([changed, changed]);
    expect(policies(c.snapshot)[1]).toBe(policies(c.snapshot)[0]);
    expect(policies(c.snapshot)[0]).not.toBe(policies(b.snapshot)[0]);
    expect(policies(c.snapshot)[0]!.directResponse?.status).toBe(429);
    // And none: none.
    c.applied();
    expect(policies(receiver.open(across(sender.next(two(null)).relative)).snapshot)).toEqual([null, null]);
  });

  it('after any sequence of snapshots, refused applies and restarts, the worker holds what was sent, its own objects for what it held', () => {
    const pool = routesOf(snapshotOf(12));
    let made = 0;
    const fresh = (i: number): RouteIR => ({ ...pool[i % pool.length]!, name: `made-${made++}` });
    const arbOp = fc.oneof(
      fc.record({ kind: fc.constant('same' as const) }),
      fc.record({ kind: fc.constant('edit' as const), listener: fc.nat(), at: fc.nat(), route: fc.nat() }),
      fc.record({ kind: fc.constant('add' as const), listener: fc.nat(), route: fc.nat() }),
      fc.record({ kind: fc.constant('remove' as const), listener: fc.nat(), at: fc.nat() }),
      fc.record({ kind: fc.constant('move' as const), from: fc.nat(), to: fc.nat(), at: fc.nat() }),
      fc.record({ kind: fc.constant('share' as const), from: fc.nat(), to: fc.nat() }),
      fc.record({ kind: fc.constant('listener' as const), add: fc.boolean() }),
    );
    // Most applies succeed, so that most hand-overs are relative to the one before.
    const arbStep = fc.record({ op: arbOp, refused: fc.nat(4).map((n) => n === 0), restart: fc.nat(7).map((n) => n === 0) });
    fc.assert(
      fc.property(fc.array(arbStep, { minLength: 1, maxLength: 25 }), (steps) => {
        const sender = new HandoverSender();
        let receiver = new HandoverReceiver();
        let holds: number | null = null;
        // The model: each listener's route list, an array kept while it does not change.
        let lists: RouteIR[][] = [[fresh(0), fresh(1), fresh(2)], [fresh(3)]];
        // What the worker applied last: the sender's arrays and routes to its own.
        let heldLists = new Map<readonly RouteIR[], readonly RouteIR[]>();
        let heldRoutes = new Map<RouteIR, RouteIR>();
        const l0 = snapshotOf(1).binds[0]!.listeners[0]!;
        for (const { op, refused, restart } of steps) {
          const at = (n: number) => lists[n % lists.length]!;
          switch (op.kind) {
            case 'edit': {
              const l = at(op.listener);
              if (l.length) lists = lists.map((x) => (x === l ? l.map((r, i) => (i === op.at % l.length ? fresh(op.route) : r)) : x));
              break;
            }
            case 'add':
              lists = lists.map((x) => (x === at(op.listener) ? [...x, fresh(op.route)] : x));
              break;
            case 'remove': {
              const l = at(op.listener);
              if (l.length) lists = lists.map((x) => (x === l ? l.filter((_, i) => i !== op.at % l.length) : x));
              break;
            }
            case 'move': {
              // A route of one listener also listed by another (the same object on two lists).
              const from = at(op.from);
              if (from.length) lists = lists.map((x) => (x === at(op.to) ? [...x, from[op.at % from.length]!] : x));
              break;
            }
            case 'share':
              lists = lists.map((x, i) => (i === op.to % lists.length ? at(op.from) : x));
              break;
            case 'listener':
              lists = op.add ? [...lists, [fresh(lists.length)]] : lists.length > 1 ? lists.slice(1) : lists;
              break;
          }
          const snapshot = withVersion({ source: first().source, binds: [{ ...first().binds[0]!, listeners: lists.map((routes, i) => ({ ...l0, name: `l${i}`, hostname: `l${i}.example.com`, routes })) }] });
          if (restart) {
            receiver = new HandoverReceiver();
            holds = null;
            heldLists = new Map();
            heldRoutes = new Map();
          }
          const out = sender.next(snapshot);
          const h = holds !== null && holds === out.relative.base ? out.relative : out.whole();
          const opened = receiver.open(across(h));
          expect(opened.snapshot).toEqual(snapshot);
          const got = opened.snapshot.binds[0]!.listeners.map((l) => l.routes);
          // Relative to what it holds, what the worker held is its own object still: the compile
          // keeps what it built for it (a whole hand-over is all new objects).
          const mismatched: string[] = [];
          if (h === out.relative) {
            lists.forEach((l, i) => {
              const held = heldLists.get(l);
              if (held && got[i] !== held) mismatched.push(`list of l${i}`);
              l.forEach((r, j) => {
                const own = heldRoutes.get(r);
                if (own && got[i]![j] !== own) mismatched.push(`route ${j} of l${i}`);
              });
            });
          }
          expect(mismatched).toEqual([]);
          if (refused) continue;
          opened.applied();
          holds = out.seq;
          heldLists = new Map(lists.map((l, i) => [l, got[i]!]));
          heldRoutes = new Map(lists.flatMap((l, i) => l.map((r, j) => [r, got[i]![j]!] as const)));
        }
      }),
      { numRuns: 200 },
    );
    function first(): ProxySnapshot {
      return snapshotOf(1);
    }
  });
});
