// The local limiter as a route's policy builds it, for the in-process limiter benches
// (bench/limiter.mjs, bench/keyed-budget.mjs): one place that knows LocalLimiter's compile
// signature. Run `pnpm build` first (these import the packages' dist/).
import { DEFAULT_LIMITS } from '../../packages/api/dist/index.js';
import { LimiterStore, LocalLimiter } from '../../packages/proxy/dist/ratelimit/local/limiter.js';
import { median } from './stats.mjs';

/** A limit no bench run reaches: every decision is an admission. */
export const NEVER = 2_000_000_000;

/**
 * A store for the limiters of one run; `maxKeys` is config.maxRateLimitKeys; `memory`, where the
 * state lives (this thread's by default; sharedLeader() for worker threads' shared memory).
 */
export function limiterStore(maxKeys = 100_000, memory = undefined) {
  return new LimiterStore(() => Date.now(), { maxKeys, memory });
}

/**
 * The shared memory of worker 0 of `workers` (SharedArrayBuffers and an Atomics lock); null in a
 * build without shared mode, so the benches still compare with older builds.
 */
export async function sharedLeader(workers = 4) {
  try {
    const { LeaderLimitMemory } = await import('../../packages/proxy/dist/ratelimit/local/shared-memory.js');
    return new LeaderLimitMemory({ workers });
  } catch (e) {
    if (e?.code === 'ERR_MODULE_NOT_FOUND') return null;
    throw e;
  }
}

/** The route-level limiter of `configs` (LocalRateLimitIR entries, in policy order); the caller commits the store. */
export function routeLimiter(store, scope, configs) {
  return LocalLimiter.compile('route', scope, configs.map((config, index) => ({ index, config })), store, DEFAULT_LIMITS);
}

/**
 * Operations per second of the process's CPU time (user + system, every thread: the garbage
 * collector's helpers too) for `fn(n)`, which runs n operations: a warm-up, then the median of
 * `rounds` runs of n. CPU time, not the wall clock, so that time the machine gave to other
 * processes is not counted (on a shared machine the wall clock doubles the figures).
 */
export function opsPerSecond(fn, n, rounds) {
  fn(Math.min(n, 10_000)); // warm-up, lets the JIT settle
  const rates = [];
  for (let r = 0; r < rounds; r++) {
    const c0 = process.cpuUsage();
    fn(n);
    const c = process.cpuUsage(c0);
    rates.push(n / ((c.user + c.system) / 1e6));
  }
  return median(rates);
}
