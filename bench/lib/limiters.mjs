// The local limiter as a route's policy builds it, for the in-process limiter benches
// (bench/limiter.mjs, bench/keyed-budget.mjs): one place that knows LocalLimiter's compile
// signature. Run `pnpm build` first (these import the packages' dist/).
import { performance } from 'node:perf_hooks';
import { DEFAULT_LIMITS } from '../../packages/api/dist/index.js';
import { LimiterStore, LocalLimiter } from '../../packages/proxy/dist/ratelimit/local/limiter.js';
import { median } from './stats.mjs';

/** A limit no bench run reaches: every decision is an admission. */
export const NEVER = 2_000_000_000;

/** A store for the limiters of one run; `maxKeys` is config.maxRateLimitKeys. */
export function limiterStore(maxKeys = 100_000) {
  return new LimiterStore(() => Date.now(), { maxKeys });
}

/** The route-level limiter of `configs` (LocalRateLimitIR entries, in policy order); the caller commits the store. */
export function routeLimiter(store, scope, configs) {
  return LocalLimiter.compile('route', scope, configs.map((config, index) => ({ index, config })), store, DEFAULT_LIMITS);
}

/**
 * Operations per second of `fn(n)` (which runs n operations): a warm-up, then the median of
 * `rounds` timed runs of n.
 */
export function opsPerSecond(fn, n, rounds) {
  fn(Math.min(n, 10_000)); // warm-up, lets the JIT settle
  const rates = [];
  for (let r = 0; r < rounds; r++) {
    const t0 = performance.now();
    fn(n);
    rates.push(n / ((performance.now() - t0) / 1000));
  }
  return median(rates);
}
