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

/** An index updated to `list` by a walk (given the list, so a splice may follow). */
function walked(list: readonly RouteIR[], index = new RouteIndex<RouteIR>(null)): RouteIndex<RouteIR> {
  index.begin(list);
  for (const r of list) index.place(r, matchesOf(r), r);
  index.finish();
  return index;
}

/** The route each probe path selects. */
function selects(index: RouteIndex<RouteIR>): (string | null)[] {
  return ['/a', '/a/b', '/b', '/c'].map((path) => index.find('x.example.com', path, () => true)?.route.ir.name ?? null);
}

function spliced(index: RouteIndex<RouteIR>, list: readonly RouteIR[]): boolean {
  const plan = index.spliceable(list, 100);
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

  it('refuses once the numbers between two neighbours run out, and a walk renumbers', () => {
    const list = [a, b];
    const index = walked(list);
    let refused = 0;
    for (let i = 0; i < 200; i++) {
      list.splice(1, 0, route('/a'));
      if (spliced(index, [...list])) continue;
      refused++;
      walked([...list], index);
    }
    expect(refused).toBeGreaterThan(0);
    expect(refused).toBeLessThan(10);
    expect(selects(index)).toEqual(selects(walked(list)));
    expect(index.size()).toEqual(walked(list).size());
  });

  it('a plan made before another update is refused', () => {
    const index = walked([a, b]);
    const plan = index.spliceable([a, c, b], 100)!;
    walked([a, d, b], index);
    expect(() => index.splice(plan, [matchesOf(c)], [c], [])).toThrow(/updated since the plan/);
  });
});
