// Response headers of a global limit decision: the service's response_headers_to_add, the
// x-ratelimit-* trio computed from the descriptor status with the least remaining, and on
// OVER_LIMIT the x-proxy-ratelimited marker (the gateway's x-envoy-ratelimited).
import { ERRORS } from '../../errors.js';
import type { LimitStatus } from '../headers.js';
import type { RlsDescriptorStatus, RlsHeader, RlsUnit } from './proto.js';

export const RATE_LIMITED_HEADER = 'x-proxy-ratelimited';
export const RATE_LIMITED_BODY = ERRORS.rateLimited.body;
/** What FailClosed answers when the service cannot be asked: Envoy's failure_mode_deny status. */
export const SERVICE_ERROR_STATUS = ERRORS.rateLimitServiceUnavailable.status;
export const SERVICE_ERROR_BODY = ERRORS.rateLimitServiceUnavailable.body;

const UNIT_SECONDS: Record<RlsUnit, number> = {
  UNKNOWN: 0,
  SECOND: 1,
  MINUTE: 60,
  HOUR: 3600,
  DAY: 86_400,
  WEEK: 7 * 86_400,
  MONTH: 30 * 86_400,
  YEAR: 365 * 86_400,
};

export function windowSeconds(unit: RlsUnit): number {
  return UNIT_SECONDS[unit] ?? 0;
}

/**
 * The status the x-ratelimit-* headers describe: among statuses that carry a limit (a
 * descriptor no rule matched has none), the least remaining; an OVER_LIMIT one wins a tie.
 */
export function leastRemaining(statuses: readonly RlsDescriptorStatus[]): RlsDescriptorStatus | null {
  let best: RlsDescriptorStatus | null = null;
  for (const s of statuses) {
    if (!s.current_limit || s.current_limit.requests_per_unit === 0) continue;
    if (
      !best ||
      s.limit_remaining < best.limit_remaining ||
      (s.limit_remaining === best.limit_remaining && s.code === 'OVER_LIMIT' && best.code !== 'OVER_LIMIT')
    ) {
      best = s;
    }
  }
  return best;
}

/**
 * The status one descriptor's answer gives the x-ratelimit-* headers; the limit reads
 * "<limit>, <limit>;w=<window_seconds>". `nowSeconds` is only for a missing reset.
 */
export function limitStatus(s: RlsDescriptorStatus, nowSeconds: number, policy: string): LimitStatus {
  const limit = s.current_limit!;
  const window = windowSeconds(limit.unit);
  const value = window > 0 ? `${limit.requests_per_unit}, ${limit.requests_per_unit};w=${window}` : String(limit.requests_per_unit);
  let reset: number;
  if (s.duration_until_reset) reset = s.duration_until_reset.seconds + (s.duration_until_reset.nanos > 0 ? 1 : 0);
  else reset = window > 0 ? window - (Math.floor(nowSeconds) % window) : 0;
  return { limit: value, remaining: s.limit_remaining, resetSeconds: Math.max(0, reset), policy };
}

/** The service's headers, names lower-cased; a repeated name is joined with ", ". */
export function serviceHeaders(headers: readonly RlsHeader[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const h of headers) {
    const name = h.key.toLowerCase();
    if (!name) continue;
    const value = h.value !== '' ? h.value : h.raw_value.toString('latin1');
    out[name] = out[name] === undefined ? value : `${out[name]}, ${value}`;
  }
  return out;
}
