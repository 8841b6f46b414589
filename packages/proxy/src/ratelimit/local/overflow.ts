// What a keyed limit whose key table is full reports: each request given the overflow budget
// is counted (tollgate_ratelimit_key_overflow_total), and a warn line names the limit, at most
// once per 30 s (clients choose key values, so this can happen at the request rate).
import type { Logger } from 'pino';
import type { ProxyMetrics } from '../../metrics/metrics.js';
import type { Clock } from '../clock.js';
import { WarnThrottle } from '../warn-throttle.js';
import type { LimiterStoreOptions } from './limiter.js';

const WARN_INTERVAL_MS = 30_000;

export function overflowReporter(metrics: ProxyMetrics, log: Logger, clock: Clock): NonNullable<LimiterStoreOptions['overflowed']> {
  const throttle = new WarnThrottle(WARN_INTERVAL_MS, clock);
  return (entry) => {
    metrics.countKeyOverflow(entry.kind, entry.level);
    const w = throttle.take();
    if (!w.log) return;
    log.warn(
      { level: entry.level, scope: entry.scope, entry: entry.index, kind: entry.kind, suppressed: w.suppressed },
      'a keyed rate limit has as many keys as config.maxRateLimitKeys allows: new keys share its overflow budget until keys no longer in use are dropped at the next window',
    );
  };
}
