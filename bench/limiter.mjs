#!/usr/bin/env node
// Limiter decisions per second, in-process: the local limiter of a route with one requests
// entry and one tokens entry (check with a token reservation, then settle with the usage, as a
// request does), against a baseline
// measured in the same run: one clock read per decision, the least any time-window limiter
// does. Prints ratios; asserts nothing. Run `pnpm build` first.
import { performance } from 'node:perf_hooks';
import { LimiterStore, LocalLimiter } from '../packages/proxy/dist/ratelimit/local/limiter.js';

const N = Number(process.env.BENCH_DECISIONS ?? 2_000_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const clock = () => Date.now();

function measure(label, fn) {
  fn(10_000); // warm-up, lets the JIT settle
  const rates = [];
  for (let r = 0; r < ROUNDS; r++) {
    const t0 = performance.now();
    fn(N);
    rates.push(N / ((performance.now() - t0) / 1000));
  }
  rates.sort((a, b) => a - b);
  return { label, perSecond: rates[Math.floor(rates.length / 2)] };
}

const store = new LimiterStore(clock);
const huge = 2_000_000_000;
const both = LocalLimiter.compile('route', 'bench', [
  { kind: 'requests', requests: huge, burst: 0, unit: 'Seconds' },
  { kind: 'tokens', tokens: huge, unit: 'Hours' },
], store);
const requestsOnly = LocalLimiter.compile('route', 'bench-req', [{ kind: 'requests', requests: huge, burst: 0, unit: 'Seconds' }], store);
store.commit();

let sink = 0;
const results = [
  measure('baseline: one clock read (Date.now)', (n) => {
    for (let i = 0; i < n; i++) sink += Date.now() & 1;
  }),
  measure('requests entry: check', (n) => {
    for (let i = 0; i < n; i++) requestsOnly.check(0);
  }),
  measure('requests + tokens entries: check, reserve 30 + settle 20', (n) => {
    for (let i = 0; i < n; i++) {
      const v = both.check(30);
      if (v.allowed) v.hold.settle(20);
    }
  }),
  measure('requests + tokens entries: check + statuses (headers)', (n) => {
    for (let i = 0; i < n; i++) {
      const v = both.check(30);
      both.statuses();
      if (v.allowed) v.hold.settle(20);
    }
  }),
];

if (sink < 0) console.log(sink); // keeps the baseline loop from being optimised away
const base = results[0].perSecond;
console.log(`Limiter decisions per second (median of ${ROUNDS} rounds of ${N.toLocaleString('en-US')}; node ${process.version})`);
for (const r of results) {
  console.log(`  ${r.label.padEnd(58)} ${Math.round(r.perSecond).toLocaleString('en-US').padStart(14)} /s  ${(r.perSecond / base).toFixed(3)}x baseline`);
}
