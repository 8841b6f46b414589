// The route index's splice of the stretch between a list's common head and tail: when it is
// refused (the update then walks the list), and that a splice answers as an index built afresh.
import { describe, expect, it } from 'vitest';
import { DEFAULT_LIMITS, toMatches, type RouteIR } from '@tollgate/api';
import { compileMatch } from '../src/routing/candidate.js';
import { RouteIndex } from '../src/routing/route-index.js';

let serial = 0;
function route(path = '/a'): RouteIR {
  const name = `r${serial++}`;
  return {
    name,
    origin: { kind: 'config', path: name },
    hostnames: [],
    matches: toMatches([{ path: { type: 'PathPrefix', value: path } }]),
    filters: [],
    policy: null,
    backends: [],
    timeouts: { requestMs: null, backendRequestMs: null },
  };
}

const matchesOf = (r: RouteIR) => r.matches.map((m) => compileMatch(m, DEFAULT_LIMITS.regex));

/** An index updated to (a copy of) `list` by a walk (given the list, so a splice may follow). */
function walked(routes: readonly RouteIR[], index = new RouteIndex<RouteIR>(null)): RouteIndex<RouteIR> {
  const list = [...routes];
  index.begin(list);
  for (const r of list) index.place(r, matchesOf(r), r);
  index.finish();
  return index;
}

/** The route each probe path selects. */
function selects(index: RouteIndex<RouteIR>): (string | null)[] {
  return ['/a', '/a/b', '/b', '/c'].map((path) => index.find('x.example.com', path, () => true)?.route.ir.name ?? null);
}

function spliced(index: RouteIndex<RouteIR>, list: readonly RouteIR[], limit = 100): boolean {
  const plan = index.spliceable(list, limit);
  if (!plan) return false;
  const middle = list.slice(plan.head, list.length - plan.tail);
  index.splice(plan, middle.map(matchesOf), middle, []);
  return true;
}

describe('route index splice', () => {
  const [a, b, c, d] = [route('/a'), route('/a'), route('/a/b'), route('/b')];

  it('puts in and takes out the routes between the common head and tail, as a walk would', () => {
    const index = walked([a, b, c, d]);
    const x = route('/a');
    for (const list of [[a, x, b, c, d], [a, x, c, d], [x, c, d], [x, c, d, a], [c, d, a], [d, a, b, x], [b, x]]) {
      expect(spliced(index, list)).toBe(true);
      expect(selects(index)).toEqual(selects(walked(list)));
      expect(index.size()).toEqual(walked(list).size());
    }
  });

  it('refuses a list it cannot splice', () => {
    // The last list is not known (an update not given its list).
    const unknown = new RouteIndex<RouteIR>(null);
    unknown.begin();
    for (const r of [a, b]) unknown.place(r, matchesOf(r), r);
    unknown.finish();
    expect(unknown.spliceable([a, c, b], 100)).toBeNull();
    // The last list holds an object twice.
    const twice = walked([a, b, a]);
    expect(twice.listedTwice).toBe(true);
    expect(twice.spliceable([a, b, c, a], 100)).toBeNull();
    const index = walked([a, b, c]);
    // A new route between head and tail that the head or the tail lists too.
    expect(index.spliceable([a, a, b, c], 100)).toBeNull();
    expect(index.spliceable([a, b, c, c], 100)).toBeNull();
    // One object twice between head and tail.
    const x = route();
    expect(index.spliceable([a, x, x, b, c], 100)).toBeNull();
    // More routes to take out and put in than the limit.
    expect(index.spliceable([a, route(), route(), b, c], 1)).toBeNull();
    // And it changed nothing: a splice it allows still works.
    expect(spliced(index, [a, x, b, c])).toBe(true);
    expect(selects(index)).toEqual(selects(walked([a, x, b, c])));
  });

  it('routes added at one place, one after the other, widen the stretch to renumber their neighbours, never the whole list', () => {
    const list = [a, ...Array.from({ length: 300 }, () => route('/a')), b];
    const index = walked(list);
    let widest = 0;
    let replaced = 0;
    for (let i = 0; i < 400; i++) {
      // Each new route right before the last one added: the room between two numbers halves each time.
      list.splice(150, 0, route('/a'));
      const plan = index.spliceable([...list], 400);
      expect(plan).not.toBeNull();
      widest = Math.max(widest, list.length - plan!.head - plan!.tail);
      replaced += list.length - plan!.head - plan!.tail - 1;
      const middle = list.slice(plan!.head, list.length - plan!.tail);
      index.splice(plan!, middle.map(matchesOf), middle, []);
    }
    // A few routes renumbered per route added (amortized), at most a few hundred at once.
    expect(widest).toBeGreaterThan(1);
    expect(widest).toBeLessThan(256);
    expect(replaced).toBeLessThan(400 * 16);
    expect(selects(index)).toEqual(selects(walked(list)));
    expect(index.size()).toEqual(walked(list).size());
    // The tie between all of them goes to the first, as a walk has it.
    expect(index.serving('x.example.com').map((c) => c.route.ir)).toEqual(walked(list).serving('x.example.com').map((c) => c.route.ir));
  });

  it('refuses when the stretch would have to widen past the limit, and a walk renumbers', () => {
    const list = [a, b];
    const index = walked(list);
    let refused = 0;
    for (let i = 0; i < 200; i++) {
      list.splice(1, 0, route('/a'));
      if (spliced(index, [...list], 4)) continue;
      refused++;
      walked([...list], index);
    }
    expect(refused).toBeGreaterThan(0);
    expect(selects(index)).toEqual(selects(walked(list)));
    expect(index.serving('x.example.com').map((c) => c.route.ir)).toEqual(walked(list).serving('x.example.com').map((c) => c.route.ir));
  });

  it('a plan made before another update is refused', () => {
    const index = walked([a, b]);
    const plan = index.spliceable([a, c, b], 100)!;
    walked([a, d, b], index);
    expect(() => index.splice(plan, [matchesOf(c)], [c], [])).toThrow(/updated since the plan/);
  });
});
