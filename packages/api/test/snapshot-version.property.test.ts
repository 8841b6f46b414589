// Property: a snapshot's version does not depend on how it was computed. Whatever snapshot is
// given as the previous one (the one before, an unrelated one, none), and whatever routes
// were added, removed, replaced or moved since, the version is the hash of the whole skeleton
// written out at once (the reference below, the definition of the version).
import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Secret, snapshotVersion, toWire, type ListenerIR, type ProxySnapshot, type RouteIR } from '../src/index.js';

/** The version as defined: the skeleton with each route's digest and each policy in wire form (secrets in clear), hashed as one JSON text. */
function referenceVersion(s: Omit<ProxySnapshot, 'version'>): string {
  const digest = (r: RouteIR) => createHash('sha256').update(JSON.stringify(toWire(r as never))).digest('base64');
  const skeleton = {
    source: s.source,
    ...(s.limits ? { limits: s.limits } : {}),
    binds: s.binds.map((b) => ({
      port: b.port,
      address: b.address,
      listeners: b.listeners.map((l) => ({ name: l.name, protocol: l.protocol, hostname: l.hostname, policy: toWire(l.policy as never), routes: l.routes.map(digest) })),
    })),
  };
  return createHash('sha256').update(JSON.stringify(skeleton)).digest('hex').slice(0, 12);
}

function route(n: number): RouteIR {
  return {
    name: `ns/r${n}/rule/0`,
    origin: { kind: 'HTTPRoute', namespace: 'ns', name: `r${n}`, rule: 0 },
    hostnames: n % 3 ? [`h${n}.example.com`] : [],
    matches: [{ path: { type: 'PathPrefix', value: `/v1/${n}` }, method: null, headers: [], queryParams: [] }],
    filters: n % 2 ? [{ type: 'RequestHeaderModifier', set: [{ name: 'authorization', value: new Secret(`Bearer ${n}`) }], add: [], remove: [] }] : [],
    policy: null,
    backends: [{ kind: 'invalid', name: `ns/b${n}`, weight: 1, reason: 'BackendNotFound' }],
    timeouts: { requestMs: null, backendRequestMs: null },
  };
}

function snapshot(lists: readonly (readonly RouteIR[])[], hostname: string | null): Omit<ProxySnapshot, 'version'> {
  const listeners: ListenerIR[] = lists.map((routes, i) => ({ name: `l${i}`, protocol: 'HTTP', hostname: i ? hostname : null, policy: null, routes }));
  return { source: { kind: 'controller', gateway: 'ns/gw' }, binds: [{ port: 8080, address: '0.0.0.0', listeners }] };
}

const step = fc.tuple(fc.constantFrom('add', 'remove', 'replace', 'move', 'same'), fc.nat(), fc.nat());

describe('snapshotVersion (property)', () => {
  // Many runs of many steps: on a loaded machine (a CI run) longer than the default test timeout.
  it('equals the hash of the whole skeleton after any edits, with any previous snapshot or none', { timeout: 180_000 }, () => {
    fc.assert(
      fc.property(fc.array(fc.nat({ max: 40 }), { minLength: 1, maxLength: 3 }), fc.array(fc.array(step, { maxLength: 6 }), { minLength: 1, maxLength: 6 }), (sizes, rounds) => {
        let made = 0;
        const lists: RouteIR[][] = sizes.map((n) => Array.from({ length: n }, () => route(made++)));
        let previous: ProxySnapshot | undefined;
        const seen: ProxySnapshot[] = [];
        for (const edits of rounds) {
          // A list no edit touches stays the same object, as the translator keeps it.
          const copied = new Set<number>();
          const listAt = (n: number): RouteIR[] => {
            const k = n % lists.length;
            if (!copied.has(k)) lists[k] = [...lists[k]!];
            copied.add(k);
            return lists[k]!;
          };
          for (const [what, at, other] of edits) {
            const list = listAt(at);
            const i = list.length ? other % list.length : 0;
            if (what === 'add') list.splice(i, 0, route(made++));
            else if (what === 'remove') list.splice(i, 1);
            else if (what === 'replace' && list.length) list[i] = route(made++);
            else if (what === 'move' && list.length) listAt(at + 1).push(...list.splice(i, 1));
          }
          const content = snapshot(lists, made % 2 ? 'a.example.com' : null);
          const expected = referenceVersion(content);
          const hint = seen.length && made % 3 === 0 ? seen[made % seen.length] : previous;
          const version = snapshotVersion(content, hint);
          expect(version).toBe(expected);
          expect(snapshotVersion(content)).toBe(expected);
          previous = { ...content, version };
          seen.push(previous);
        }
      }),
      { numRuns: 300 },
    );
  });

  // Lists long enough that the hash of the last one is taken up from a mark inside them (every
  // 256 routes): edits at and around the marks, lists cut at them, the same binds under another head.
  // Many runs of many steps: on a loaded machine (a CI run) longer than the default test timeout.
  it('equals the hash of the whole skeleton when taken up from inside long route lists', { timeout: 180_000 }, () => {
    const where = fc.oneof(fc.nat({ max: 1400 }), fc.constantFrom(0, 1, 255, 256, 257, 511, 512, 513, 767, 768, 769));
    const longStep = fc.tuple(fc.constantFrom('add', 'remove', 'replace', 'cut', 'move', 'head'), fc.nat({ max: 2 }), where);
    fc.assert(
      fc.property(fc.array(fc.nat({ max: 1300 }), { minLength: 1, maxLength: 2 }), fc.array(fc.array(longStep, { maxLength: 3 }), { minLength: 1, maxLength: 5 }), (sizes, rounds) => {
        let made = 0;
        const lists: RouteIR[][] = sizes.map((n) => Array.from({ length: n }, () => route(made++)));
        let previous: ProxySnapshot | undefined;
        let limits = false;
        for (const edits of rounds) {
          let binds = true;
          for (const [what, at, i] of edits) {
            const k = at % lists.length;
            const list = [...lists[k]!];
            const j = list.length ? i % list.length : 0;
            if (what === 'add') list.splice(i % (list.length + 1), 0, route(made++));
            else if (what === 'remove') list.splice(j, 1);
            else if (what === 'replace' && list.length) list[j] = route(made++);
            else if (what === 'cut') list.length = Math.min(list.length, i);
            else if (what === 'move' && list.length) lists[(k + 1) % lists.length] = [...lists[(k + 1) % lists.length]!, ...list.splice(j, 1)];
            // The head changes (bounds set or not), the route lists stay the same arrays.
            else if (what === 'head') {
              limits = !limits;
              binds = false;
            }
            if (what !== 'head') lists[k] = list;
          }
          const base = snapshot(lists, 'a.example.com');
          const content = binds || !previous ? base : { ...base, binds: previous.binds, ...(limits ? { limits: { regex: { maxProgramSize: 300 + made }, cel: { maxCost: 1000 } } as never } : {}) };
          const expected = referenceVersion(content);
          expect(snapshotVersion(content, previous)).toBe(expected);
          previous = { ...content, version: expected };
        }
      }),
      { numRuns: 60 },
    );
  });

  it('equals the hash of the whole skeleton for lists cut at a mark, edited beside one, and listeners after a mark between them', () => {
    let made = 0;
    const long = (n: number) => Array.from({ length: n }, () => route(made++));
    const check = (lists: RouteIR[][], previous: ProxySnapshot | undefined): ProxySnapshot => {
      const content = snapshot(lists, 'a.example.com');
      const expected = referenceVersion(content);
      expect(snapshotVersion(content, previous)).toBe(expected);
      return { ...content, version: expected };
    };
    const six = long(600);
    const first = check([six], undefined);
    // Cut at the marks (256, 512): a mark at a list's new end stands after a comma the list no longer has.
    for (const n of [512, 513, 511, 256, 257]) check([six.slice(0, n)], first);
    for (const i of [255, 256, 511, 512]) check([six.map((r, k) => (k === i ? route(made++) : r))], first);
    // Listeners of 255 routes: a mark at the start of a listener (not inside its list).
    const lists = [long(255), long(255), long(255), long(3)];
    const three = check(lists, undefined);
    check([lists[0]!, lists[1]!, [...lists[2]!.slice(0, -1), route(made++)], lists[3]!], three);
    check([lists[0]!, lists[1]!, lists[2]!, [route(made++)]], three);
  });
});
