// The shared key table (src/ratelimit/local/shared-keyed-table.ts) keeps the rules of the Map
// table of local mode: the same checks, on one thread, against a store of each memory must give
// the same answers and list the same budgets, through full tables, sweeps of idle keys (whose
// deletion shifts the open-addressing index), the overflow budget, overrides, window rolls,
// holds across windows, copies, refunds and settlements. The clock is the test's: windows roll
// when it says so.
import { DEFAULT_LIMITS, type LocalRateLimitIR } from '@tollgate/api';
import { describe, expect, it } from 'vitest';
import type { RequestFacts } from '../src/ratelimit/facts.js';
import { keyBudgets, LimiterStore, LocalLimiter, type LocalCheck, type LocalHold } from '../src/ratelimit/local/limiter.js';
import { LeaderLimitMemory } from '../src/ratelimit/local/shared-memory.js';

const MAX_KEYS = 8;
const BY_KEY = { type: 'Header', name: 'x-key' } as const;

/** Key values: the empty key, long ones (128 UTF-16 code units, the most kept), surrogate pairs. */
const KEYS = ['', 'a', 'b', 'c', 'k1', 'é'.repeat(128), `${'x'.repeat(126)}😀`, '😀', ...Array.from({ length: 14 }, (_, i) => `key-${i}`)];

/** A small seeded generator (mulberry32): the same run every time. */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const factsOf = (key: string) => (): RequestFacts => ({ method: 'POST', path: '/', host: 'test', headers: { 'x-key': key }, sourceAddress: '127.0.0.1', model: null, consumer: null });

/** A check's answer, without its hold (each memory's). */
function decision(v: LocalCheck): unknown {
  return v.allowed ? { allowed: true, statuses: v.statuses } : v;
}

function compile(store: LimiterStore, scope: string, configs: readonly LocalRateLimitIR[]): LocalLimiter {
  return LocalLimiter.compile('route', scope, configs.map((config, index) => ({ index, config })), store, DEFAULT_LIMITS);
}

/** Every keyed entry's budgets, by key, sorted (the two tables list keys in different orders). */
function listing(store: LimiterStore, now: number): unknown[] {
  return store.keyedEntries().map((k) => [...keyBudgets(k, now)].sort(([a], [b]) => String(a).localeCompare(String(b))));
}

describe('the shared key table keeps the local table rules', () => {
  it.each([1, 2, 3])('the same decisions and budgets as the Map table (seed %i)', (seed) => {
    const rand = random(seed);
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;
    let now = Date.UTC(2026, 0, 1, 12);
    const clock = () => now;
    const stores = [new LimiterStore(clock, { maxKeys: MAX_KEYS }), new LimiterStore(clock, { maxKeys: MAX_KEYS, memory: new LeaderLimitMemory({ workers: 2 }) })];
    const requests: LocalRateLimitIR = { kind: 'requests', requests: 3, burst: 1, unit: 'Seconds', by: BY_KEY, overrides: [{ key: 'k1', requests: 6, burst: 0 }] };
    const tokens: LocalRateLimitIR = { kind: 'tokens', tokens: 500, unit: 'Seconds', by: BY_KEY, overrides: [{ key: 'a', tokens: 50 }] };
    const limiters = stores.map((s) => ({ requests: compile(s, 'req', [requests]), tokens: compile(s, 'tok', [tokens]) }));
    for (const s of stores) s.commit();
    /** Holds of the same request in each store; requests holds are ended before the clock moves (see below). */
    /** What each store answered and listed, in order. */
    const transcripts: unknown[][] = [[], []];
    const held: { kind: 'requests' | 'tokens'; holds: LocalHold[] }[] = [];

    const end = (i: number) => {
      const [h] = held.splice(i, 1);
      const how = rand();
      const usage = Math.floor(rand() * 300);
      for (const hold of h!.holds) {
        if (how < 0.3) hold.refund();
        else if (how < 0.5) hold.settle(null);
        else hold.settle(usage);
      }
    };

    for (let step = 0; step < 4000; step++) {
      const op = rand();
      if (op < 0.6) {
        const kind = rand() < 0.5 ? 'requests' : 'tokens';
        const key = pick(KEYS);
        const reservation = Math.floor(rand() * 200);
        const [local, shared] = limiters.map((l) => l[kind].check(reservation, factsOf(key))) as [LocalCheck, LocalCheck];
        transcripts.forEach((t, i) => t.push({ step, kind, key, answer: decision(i === 0 ? local : shared) }));
        if (local.allowed && shared.allowed) held.push({ kind, holds: [local.hold, shared.hold] });
      } else if (op < 0.85 && held.length) {
        end(Math.floor(rand() * held.length));
      } else if (op < 0.9 && held.length) {
        const h = pick(held);
        held.push({ kind: h.kind, holds: h.holds.map((x) => x.copy()) });
      } else {
        // A refund of a request bucket's token after its key was swept reaches whatever the
        // key's record holds next in the shared table (an orphaned bucket in the Map table), so
        // the requests holds end first; token windows are never swept while held.
        for (let i = held.length - 1; i >= 0; i--) if (held[i]!.kind === 'requests') end(i);
        now += Math.floor(rand() * 1500);
      }
      if (step % 25 === 0) transcripts.forEach((t, i) => t.push({ step, listing: listing(stores[i]!, now) }));
    }
    while (held.length) end(0);
    transcripts.forEach((t, i) => t.push({ listing: listing(stores[i]!, now) }));
    // The first difference, if any, is where the tables part.
    expect(transcripts[1]).toEqual(transcripts[0]);
  });
});
