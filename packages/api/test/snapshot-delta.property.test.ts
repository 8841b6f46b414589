// Property: a snapshot decoded as a delta against the one the decoder holds is the snapshot a
// decode in full gives, whatever changed since (routes added, removed, moved, edited, on two
// listeners at once, sent again as new objects of the same content, listeners gone and back,
// bounds changed), with bad deltas and rollback() in between. The routes a decoder keeps are
// those of what it holds: a route it held is the object it was, a route it no longer holds is
// decoded anew, and a listener whose routes are the objects it had is the array it had.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  DeltaMismatchError,
  encodeSnapshotDelta,
  encodeSnapshotParts,
  endpointPositions,
  resolveLimits,
  routePositions,
  Secret,
  SnapshotDecoder,
  toWire,
  ValidationError,
  withVersion,
  type ListenerIR,
  type ProxySnapshot,
  type RouteIR,
  type SnapshotParts,
} from '../src/index.js';

/** A route of its own content (`n`); a heavy one has a pattern over the default bounds (within the raised ones). */
function route(n: number, heavy = false): RouteIR {
  const headers = heavy ? [{ type: 'RegularExpression' as const, name: 'x-id', value: '[a-z]{150}[0-9]{100}' }] : [];
  return {
    name: `ns/r${n}/rule/0`,
    origin: { kind: 'HTTPRoute', namespace: 'ns', name: `r${n}`, rule: 0 },
    hostnames: n % 3 ? [`h${n}.example.com`] : [],
    matches: [{ path: { type: 'PathPrefix', value: `/v1/${n}` }, method: null, headers, queryParams: [] }],
    filters: n % 2 ? [{ type: 'RequestHeaderModifier', set: [{ name: 'authorization', value: new Secret(`Bearer ${n}`) }], add: [], remove: [] }] : [],
    policy: null,
    backends: [{ kind: 'invalid', name: `ns/b${n}`, weight: 1, reason: 'BackendNotFound' }],
    timeouts: { requestMs: null, backendRequestMs: null },
  };
}

const heavy = new WeakSet<RouteIR>();
const RAISED = resolveLimits({ regex: { maxProgramSize: 300 } });

/** Three listeners on two ports; the first of port 8080 can be absent (the others move up a place). */
function content(lists: readonly (readonly RouteIR[])[], first: boolean, raised: boolean): Omit<ProxySnapshot, 'version'> {
  const listener = (i: number): ListenerIR => ({ name: `l${i}`, protocol: 'HTTP', hostname: i === 1 ? 'a.example.com' : null, policy: null, routes: lists[i]! });
  return {
    source: { kind: 'controller', gateway: 'ns/gw' },
    ...(raised ? { limits: RAISED } : {}),
    binds: [
      { port: 8080, address: '0.0.0.0', listeners: first ? [listener(0), listener(1)] : [listener(1)] },
      { port: 8081, address: '0.0.0.0', listeners: [listener(2)] },
    ],
  };
}

const routesOf = (s: ProxySnapshot): RouteIR[] => s.binds.flatMap((b) => b.listeners.flatMap((l) => l.routes));
const listsOf = (s: ProxySnapshot): (readonly RouteIR[])[] => s.binds.flatMap((b) => b.listeners.map((l) => l.routes));
const wireText = (r: RouteIR) => JSON.stringify(toWire(r as never));

const edit = fc.tuple(fc.constantFrom('add', 'remove', 'move', 'edit', 'swap', 'twice', 'same-content', 'again', 'heavy'), fc.nat(), fc.nat(), fc.nat());
const bad = fc.constantFrom('none', 'base', 'range', 'fraction', 'text', 'count', 'version');
const step = fc.record({
  edits: fc.array(edit, { maxLength: 5 }),
  first: fc.boolean(),
  raised: fc.boolean(),
  bad,
  full: fc.boolean(),
  rollback: fc.boolean(),
});

/** The good delta spoilt one way; what it must throw, or null when it cannot be spoilt that way. */
function spoilt(parts: SnapshotParts, how: string, baseRoutes: number): { parts: SnapshotParts; error: typeof ValidationError } | null {
  const base = parts.base!;
  const named = base.refs.findIndex((r) => r > 0);
  switch (how) {
    case 'base':
      return { parts: { ...parts, base: { ...base, version: 'ffffffffffff' } }, error: DeltaMismatchError };
    case 'range':
    case 'fraction':
      if (named < 0) return null;
      return { parts: { ...parts, base: { ...base, refs: base.refs.map((r, i) => (i === named ? (how === 'range' ? baseRoutes + 1 : 1.5) : r)) } }, error: DeltaMismatchError };
    case 'text':
      if (!parts.routes.length) return null;
      return { parts: { ...parts, routes: [...parts.routes.slice(0, -1), '{"name":1}'] }, error: ValidationError };
    case 'count':
      return { parts: { ...parts, routes: [...parts.routes, parts.routes[0] ?? '{}'] }, error: ValidationError };
    case 'version':
      return { parts: { ...parts, skeleton: parts.skeleton.replace(/"version":"[0-9a-f]+"/, '"version":"000000000000"') }, error: ValidationError };
    default:
      return null;
  }
}

/** What `fn` threw (its class's name), or 'nothing'. */
function refusal(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    return (err as Error).constructor.name;
  }
  return 'nothing';
}

describe('SnapshotDecoder deltas (property)', () => {
  // Many runs of many steps: on a loaded machine (a CI run) longer than the default test timeout.
  it('decode to what a decode in full gives, keeping the objects of the routes and lists it holds, across bad deltas and rollback()', { timeout: 180_000 }, () => {
    fc.assert(
      fc.property(fc.array(fc.nat({ max: 12 }), { minLength: 3, maxLength: 3 }), fc.array(step, { minLength: 1, maxLength: 8 }), (sizes, steps) => {
        let made = 0;
        const fresh = (isHeavy = false) => {
          const r = route(made++, isHeavy);
          if (isHeavy) heavy.add(r);
          return r;
        };
        const first = content(
          sizes.map((n) => Array.from({ length: n }, () => fresh())),
          true,
          false,
        );
        const decoder = new SnapshotDecoder();
        // What the decoder holds: the snapshot sent (whose objects a delta's positions count) and what it decoded.
        let held = { sent: withVersion(first), decoded: undefined as unknown as ProxySnapshot, lists: sizes.map(() => [] as RouteIR[]), raised: false };
        held.decoded = decoder.decodeParts(encodeSnapshotParts(held.sent));
        held.lists = listsOf(held.sent).map((l) => [...l]);
        const everDecoded = new Set<RouteIR>(routesOf(held.decoded));
        const removed: RouteIR[] = [];

        for (const s of steps) {
          // The next content, from what the decoder holds.
          const lists = held.lists.map((l) => [...l]);
          const all = () => lists.flat();
          for (const [what, a, b, c] of s.edits) {
            const list = lists[a % 3]!;
            const other = lists[b % 3]!;
            const i = list.length ? c % list.length : 0;
            const j = c % (other.length + 1);
            if (what === 'add') other.splice(j, 0, fresh());
            else if (what === 'remove' && list.length) removed.push(...list.splice(i, 1));
            else if (what === 'move' && list.length) other.splice(j, 0, ...list.splice(i, 1));
            else if (what === 'edit' && list.length) list[i] = fresh();
            else if (what === 'swap' && list.length > 1) [list[i], list[(i + 1) % list.length]] = [list[(i + 1) % list.length]!, list[i]!];
            // The same object on a second listener (a route attached to both).
            else if (what === 'twice' && all().length) other.splice(j, 0, all()[c % all().length]!);
            // A new object of a held route's content, beside it or in its place: it travels as text.
            else if (what === 'same-content' && list.length) {
              const copy = { ...list[i]! };
              if (heavy.has(list[i]!)) heavy.add(copy);
              if (b % 2) list[i] = copy;
              else other.splice(j, 0, copy);
            }
            // A route removed before comes back (the same object, or an equal one).
            else if (what === 'again' && removed.length) {
              const back = removed[c % removed.length]!;
              const copy = b % 2 ? back : { ...back };
              if (heavy.has(back)) heavy.add(copy);
              other.splice(j, 0, copy);
            } else if (what === 'heavy') other.splice(j, 0, fresh(true));
          }
          const snap = withVersion(content(lists, s.first, s.raised), held.sent);
          const valid = s.raised || !routesOf(snap).some((r) => heavy.has(r));
          // Every other step, the way the controller encodes it: the base snapshot's lists given,
          // positions looked up only between the ends each list shares (made when first needed).
          const viaLists = (made + steps.length) % 2 === 0;
          const base = held.sent;
          const delta = encodeSnapshotDelta(snap, { version: base.version, positions: viaLists ? () => routePositions(base) : routePositions(base), entries: endpointPositions(base), ...(viaLists ? { snapshot: base } : {}) });
          const inFull = () => new SnapshotDecoder().decodeParts(encodeSnapshotParts(snap));

          // A bad delta first: refused, the decoder still holds what it held.
          const spoil = spoilt(delta, s.bad, routesOf(held.sent).length);
          expect(spoil ? refusal(() => decoder.decodeParts(spoil.parts)) : 'not sent').toBe(spoil ? spoil.error.name : 'not sent');
          expect(decoder.version).toBe(held.sent.version);
          // Bounds lowered under a route that needs the raised ones: refused in full and as a delta.
          expect(refusal(inFull)).toBe(valid ? 'nothing' : 'ValidationError');
          let got: ProxySnapshot | undefined;
          expect(refusal(() => (got = decoder.decodeParts(s.full ? encodeSnapshotParts(snap) : delta)))).toBe(valid ? 'nothing' : 'ValidationError');
          expect(decoder.version).toBe(valid ? snap.version : held.sent.version);
          if (!got) continue;
          expect(got.version).toBe(snap.version);
          expect(toWire(got)).toEqual(toWire(inFull()));
          expect(toWire(got)).toEqual(toWire(snap));

          // Each route: a route the decoder held (by text) is the object it held, unless the
          // bounds changed (then only routes named by position are); any other is new, and a
          // text twice in the snapshot is one object.
          const wrong: string[] = [];
          const sameBounds = s.raised === held.raised;
          const heldByText = new Map(routesOf(held.decoded).map((r) => [wireText(r), r]));
          const positions = routePositions(held.sent);
          const heldOrder = routesOf(held.decoded);
          const inThis = new Map<string, RouteIR>();
          const sentRoutes = routesOf(snap);
          routesOf(got).forEach((r, q) => {
            const text = wireText(r);
            const at = positions.get(sentRoutes[q]!);
            if (!s.full && at !== undefined && r !== heldOrder[at]) wrong.push(`route ${q}: not the object held at ${at}`);
            const expected = heldByText.get(text) ?? inThis.get(text);
            if (sameBounds && (expected ? r !== expected : everDecoded.has(r))) wrong.push(`route ${q}: ${expected ? 'not the object held for its text' : 'an object decoded before'}`);
            if (!inThis.has(text)) inThis.set(text, r);
          });
          routesOf(got).forEach((r) => everDecoded.add(r));
          // A listener whose routes are the objects of the list at its place is that array, any other a new one.
          const placeOf = (x: ProxySnapshot) => new Map(x.binds.flatMap((b, bi) => b.listeners.map((l, li) => [`${bi}/${li}`, l.routes] as const)));
          const lastPlaces = placeOf(held.decoded);
          for (const [place, routes] of placeOf(got)) {
            const last = lastPlaces.get(place);
            const same = last !== undefined && last.length === routes.length && last.every((r, i) => r === routes[i]);
            if (same ? routes !== last : routes === last) wrong.push(`listener ${place}: ${same ? 'the same routes in a new array' : 'other routes in the array it had'}`);
          }

          const next = { sent: snap, decoded: got, lists: lists.map((l) => [...l]), raised: s.raised };
          if (s.rollback) {
            // The receiver could not apply it: the decoder holds the snapshot before again, and
            // a second rollback() changes nothing.
            decoder.rollback();
            decoder.rollback();
            if (decoder.version !== held.sent.version) wrong.push(`rolled back to ${decoder.version}, not ${held.sent.version}`);
            // Sent again (as a delta against what it holds): the same content, the held routes' objects.
            const again = decoder.decodeParts(encodeSnapshotDelta(snap, { version: held.sent.version, positions: routePositions(held.sent), entries: endpointPositions(held.sent) }));
            if (JSON.stringify(toWire(again)) !== JSON.stringify(toWire(snap))) wrong.push('sent again after rollback(): other content');
            const rolledBack = new Set(routesOf(got));
            routesOf(again).forEach((r, q) => {
              const kept = heldByText.get(wireText(r));
              if (sameBounds && (kept ? r !== kept : rolledBack.has(r))) wrong.push(`sent again, route ${q}: ${kept ? 'not the object held' : 'an object of the decode rolled back'}`);
            });
            routesOf(again).forEach((r) => everDecoded.add(r));
            held = { ...next, decoded: again };
          } else held = next;
          expect(wrong).toEqual([]);
        }
      }),
      { numRuns: 150 },
    );
  });
});

describe('SnapshotDecoder deltas: the cases the routes by text hang on', () => {
  /** A decoder fed deltas, each against the last snapshot it decoded (or the one before, after rollback()). */
  function receiver(lists: readonly (readonly RouteIR[])[]) {
    const decoder = new SnapshotDecoder();
    let held = withVersion(content([[], ...lists], false, false));
    let before = held;
    decoder.decodeParts(encodeSnapshotParts(held));
    return {
      send(next: readonly (readonly RouteIR[])[]): (readonly RouteIR[])[] {
        const snap = withVersion(content([[], ...next], false, false));
        const got = decoder.decodeParts(encodeSnapshotDelta(snap, { version: held.version, positions: routePositions(held), entries: endpointPositions(held) }));
        expect(toWire(got)).toEqual(toWire(snap));
        before = held;
        held = snap;
        return listsOf(got).slice(0, 2);
      },
      rollback() {
        decoder.rollback();
        held = before;
      },
    };
  }
  const copy = (r: RouteIR): RouteIR => ({ ...r });

  it("a listener whose refs are another listener's list is that list's routes, not its own", () => {
    const [a, b, c, d] = [route(1), route(2), route(3), route(4)];
    const rx = receiver([[a, b], [c, d]]);
    const [first, second] = rx.send([[a, b], [c, d]]);
    const [, moved] = rx.send([[a, b], [a, b]]);
    expect(moved).toEqual(first);
    expect(moved).not.toBe(second);
    expect(moved![0]).toBe(first![0]);
  });

  it('a route sent as text that a ref names too stays held while either place keeps it', () => {
    const a = route(1);
    const rx = receiver([[a], []]);
    const [[held]] = rx.send([[a], []]) as [RouteIR[]];
    // An equal new object beside it: the held object twice.
    const [both] = rx.send([[a, copy(a)], []]);
    expect(both).toEqual([held, held]);
    expect(both![1]).toBe(held);
  });

  it('a route at two places, then at one, is still held by its text', () => {
    const a = route(1);
    const a2 = copy(a);
    const rx = receiver([[a], []]);
    const [[held]] = rx.send([[a], []]) as [RouteIR[]];
    rx.send([[a, a2], []]);
    // The first place goes: the route is still at the second.
    expect(rx.send([[a2], []])[0]![0]).toBe(held);
    expect(rx.send([[copy(a)], []])[0]![0]).toBe(held);
  });

  it('a new route sent twice (two listeners), then at one place, is still held by its text', () => {
    const [a, n] = [route(1), route(2)];
    const n2 = copy(n);
    const rx = receiver([[a], []]);
    const [[, added], [again]] = rx.send([[a, n], [n2]]) as [RouteIR[], RouteIR[]];
    expect(again).toBe(added);
    rx.send([[a], [n2]]);
    expect(rx.send([[a], [copy(n)]])[1]![0]).toBe(added);
  });

  it('rollback() puts back the texts of the routes the delta removed and forgets those it added', () => {
    const [a, b, n] = [route(1), route(2), route(3)];
    const rx = receiver([[a, b], []]);
    const [[, heldB]] = rx.send([[a, b], []]) as [RouteIR[]];
    rx.send([[a], []]);
    rx.rollback();
    expect(rx.send([[a, copy(b)], []])[0]![1]).toBe(heldB);
    const [[, , added]] = rx.send([[a, b, n], []]) as [RouteIR[]];
    rx.rollback();
    const [[, , anew]] = rx.send([[a, b, copy(n)], []]) as [RouteIR[]];
    expect(anew).toEqual(added);
    expect(anew).not.toBe(added);
  });
});
