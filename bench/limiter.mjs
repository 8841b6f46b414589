#!/usr/bin/env node
// Limiter decisions per second of CPU time, in-process: the local limiter of a route with one requests
// entry and one tokens entry (check with a token reservation, then settle with the usage, as a
// request does), against a baseline
// measured in the same run: one clock read per decision, the least any time-window limiter
// does. The same limiters again in shared mode (state in SharedArrayBuffers, every check and
// settle under the Atomics lock, token windows with a column per worker of 4), on this thread
// alone: what the lock and the shared records cost a check when no other thread contends.
// Prints ratios; asserts nothing. Run `pnpm build` first.
import { limiterStore, NEVER, opsPerSecond, routeLimiter, sharedLeader } from './lib/limiters.mjs';

const N = Number(process.env.BENCH_DECISIONS ?? 2_000_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);

const measure = (label, fn) => ({ label, perSecond: opsPerSecond(fn, N, ROUNDS) });

/** The two limiters of the bench, on a store of the given memory. */
function limiters(memory) {
  const store = limiterStore(100_000, memory);
  const both = routeLimiter(store, 'bench', [
    { kind: 'requests', requests: NEVER, burst: 0, unit: 'Seconds' },
    { kind: 'tokens', tokens: NEVER, unit: 'Hours' },
  ]);
  const requestsOnly = routeLimiter(store, 'bench-req', [{ kind: 'requests', requests: NEVER, burst: 0, unit: 'Seconds' }]);
  store.commit();
  return { both, requestsOnly };
}
const { both, requestsOnly } = limiters(undefined);
const sharedMemory = await sharedLeader(4);
const shared = sharedMemory && limiters(sharedMemory);
const noFacts = () => {
  throw new Error('an unkeyed limiter read the request');
};

let sink = 0;
const results = [
  measure('baseline: one clock read (Date.now)', (n) => {
    for (let i = 0; i < n; i++) sink += Date.now() & 1;
  }),
  measure('requests entry: check', (n) => {
    for (let i = 0; i < n; i++) requestsOnly.check(0, noFacts);
  }),
  measure('requests + tokens entries: check, reserve 30 + settle 20', (n) => {
    for (let i = 0; i < n; i++) {
      const v = both.check(30, noFacts);
      if (v.allowed) v.hold.settle(20);
    }
  }),
  ...(shared
    ? [
        measure('shared: requests entry: check', (n) => {
          for (let i = 0; i < n; i++) shared.requestsOnly.check(0, noFacts);
        }),
        measure('shared: requests + tokens: check, reserve 30 + settle 20', (n) => {
          for (let i = 0; i < n; i++) {
            const v = shared.both.check(30, noFacts);
            if (v.allowed) v.hold.settle(20);
          }
        }),
      ]
    : []),
];

if (sink < 0) console.log(sink); // keeps the baseline loop from being optimised away
const base = results[0].perSecond;
console.log(`Limiter decisions per second (median of ${ROUNDS} rounds of ${N.toLocaleString('en-US')}; node ${process.version})`);
if (!shared) console.log('  (this build has no shared mode: local figures only)');
for (const r of results) {
  console.log(`  ${r.label.padEnd(58)} ${Math.round(r.perSecond).toLocaleString('en-US').padStart(14)} /s  ${(r.perSecond / base).toFixed(3)}x baseline`);
}
