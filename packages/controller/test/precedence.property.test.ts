// Property: the precedence order kept between translations (translate/precedence.ts), fed the
// maps of routes by key that translate/key-order.ts keeps (which tell it the keys that changed),
// is the order sorted from scratch: oldest first, then namespace/name, HTTPRoutes before
// GRPCRoutes of the same key. After any sequence of routes added, removed, replaced, given
// another creation time, moved in the list or many at once, and of maps that are not the ones
// kept (every key looked at).
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { changedKeys, inKeyOrder } from '../src/translate/key-order.js';
import { precedenceOrder, type RouteKind } from '../src/translate/precedence.js';
import { keyOf } from '../src/translate/keys.js';
import type { HTTPRoute } from '../src/types/gateway-api.js';

const at = (s: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, s)).toISOString();

let made = 0;
function route(name: number, seconds: number | undefined, ns = 'a'): HTTPRoute {
  return { apiVersion: 'gateway.networking.k8s.io/v1', kind: 'HTTPRoute', metadata: { namespace: ns, name: `r-${name}`, uid: `u${made++}`, ...(seconds === undefined ? {} : { creationTimestamp: at(seconds) }) }, spec: {} };
}

function fromScratch(kinds: readonly (readonly [RouteKind, readonly HTTPRoute[]])[]): string[] {
  const time = (r: HTTPRoute) => (r.metadata.creationTimestamp === undefined ? Number.POSITIVE_INFINITY : new Date(r.metadata.creationTimestamp).getTime());
  const entries = kinds.flatMap(([kind, list]) => {
    const byName = new Map<string, HTTPRoute>();
    for (const r of list) byName.set(keyOf(r.metadata), r);
    return [...byName].map(([key, r]) => ({ kind, key, at: time(r), uid: r.metadata.uid }));
  });
  entries.sort((a, b) => (a.at !== b.at ? (a.at < b.at ? -1 : 1) : a.key < b.key ? -1 : a.key > b.key ? 1 : a.kind < b.kind ? -1 : a.kind > b.kind ? 1 : 0));
  return entries.map((e) => `${e.kind} ${e.key} ${e.uid}`);
}

const op = fc.tuple(fc.constantFrom('add', 'remove', 'replace', 'retime', 'move', 'many', 'fresh'), fc.boolean(), fc.nat(), fc.nat({ max: 40 }));

describe('precedenceOrder across calls (property)', () => {
  it('gives the order sorted from scratch after any changes to the routes', () => {
    fc.assert(
      fc.property(fc.nat({ max: 30 }), fc.array(fc.array(op, { maxLength: 5 }), { minLength: 1, maxLength: 8 }), (size, rounds) => {
        const lists: Record<RouteKind, HTTPRoute[]> = {
          HTTPRoute: Array.from({ length: size }, (_, i) => route(i, i % 5 === 4 ? undefined : i % 7, i % 3 ? 'a' : 'b')),
          GRPCRoute: Array.from({ length: size >> 2 }, (_, i) => route(i, i % 4)),
        };
        for (const ops of rounds) {
          let fresh = false;
          for (const [what, grpc, pick, k] of ops) {
            const kind: RouteKind = grpc ? 'GRPCRoute' : 'HTTPRoute';
            const list = (lists[kind] = [...lists[kind]]);
            const i = list.length ? pick % list.length : 0;
            const r = list[i];
            if (what === 'add') list.splice(pick % (list.length + 1), 0, route(100 + k, k % 9 === 8 ? undefined : k % 11, k % 2 ? 'a' : 'b'));
            else if (what === 'remove' && r) list.splice(i, 1);
            else if (what === 'replace' && r) list[i] = { ...r, metadata: { ...r.metadata, uid: `u${made++}` } };
            else if (what === 'retime' && r) list[i] = { ...r, metadata: { ...r.metadata, uid: `u${made++}`, creationTimestamp: at(k % 13) } };
            else if (what === 'move' && r) list.push(...list.splice(i, 1));
            else if (what === 'many') for (let j = 0; j < 70; j++) list.push(route(300 + j + k, j % 5));
            else if (what === 'fresh') fresh = true;
          }
          const maps = (['HTTPRoute', 'GRPCRoute'] as const).map((kind) => [kind, inKeyOrder(kind, lists[kind])] as const);
          // A map not made by the key order (a copy): the order cannot be told what changed.
          const kinds = fresh ? maps.map(([kind, m]) => [kind, new Map(m)] as const) : maps;
          const order = precedenceOrder(kinds);
          expect(order.map((e) => `${e.kind} ${e.key} ${e.route.metadata.uid}`)).toEqual(fromScratch([['HTTPRoute', lists.HTTPRoute], ['GRPCRoute', lists.GRPCRoute]]));
        }
      }),
      { numRuns: 400 },
    );
  });
});

describe('changedKeys (property)', () => {
  it('names every key whose value differs between a map and the one made from it', () => {
    let told = 0;
    fc.assert(
      fc.property(fc.nat({ max: 30 }), fc.array(fc.array(op, { maxLength: 4 }), { minLength: 1, maxLength: 6 }), (size, rounds) => {
        const kind = `Changed${made++}`;
        let list = Array.from({ length: size }, (_, i) => route(i, i));
        let before = inKeyOrder(kind, list);
        for (const ops of rounds) {
          list = [...list];
          for (const [what, , pick, k] of ops) {
            const i = list.length ? pick % list.length : 0;
            const r = list[i];
            if (what === 'add') list.splice(pick % (list.length + 1), 0, route(100 + k, k));
            else if (what === 'remove' && r) list.splice(i, 1);
            else if ((what === 'replace' || what === 'retime') && r) list[i] = { ...r, metadata: { ...r.metadata, uid: `u${made++}` } };
            else if (what === 'move' && r) list.push(...list.splice(i, 1));
            else if (what === 'many') for (let j = 0; j < 70; j++) list.push(route(300 + j + k, j));
          }
          const now = inKeyOrder(kind, list);
          const keys = changedKeys(before, now);
          if (keys !== null) told++;
          const differ = [...new Set([...before.keys(), ...now.keys()])].filter((key) => before.get(key) !== now.get(key));
          // Every key that differs is told (an object moved within the list may be told too); null: not known.
          expect(keys === null ? [] : differ.filter((key) => !keys.includes(key))).toEqual([]);
          expect((keys ?? []).every((key) => before.has(key) || now.has(key))).toBe(true);
          before = now;
        }
      }),
      { numRuns: 400 },
    );
    // Most steps are small changes: the keys are told for them.
    expect(told).toBeGreaterThan(100);
  });
});
