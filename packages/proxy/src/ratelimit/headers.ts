// The x-ratelimit-* headers describe the limit with the least remaining among every local and
// global limit that applies to the request (spec §8.7), and x-ratelimit-policy names it.

export interface LimitStatus {
  /** x-ratelimit-limit value: an integer, or for global limits "<limit>, <limit>;w=<window>". */
  readonly limit: string;
  readonly remaining: number;
  readonly resetSeconds: number;
  /**
   * x-ratelimit-policy value: which limit this is, by its name or its place and its key type
   * (e.g. `team-daily;by=ConsumerGroup`, `route.local[1]`); never a key value.
   */
  readonly policy: string;
}

export function leastRemaining(statuses: readonly LimitStatus[]): LimitStatus | null {
  let best: LimitStatus | null = null;
  for (const s of statuses) if (!best || s.remaining < best.remaining) best = s;
  return best;
}

export function rateLimitHeaders(s: LimitStatus): Record<string, string> {
  return {
    'x-ratelimit-limit': s.limit,
    'x-ratelimit-remaining': String(s.remaining),
    'x-ratelimit-reset': String(s.resetSeconds),
    'x-ratelimit-policy': s.policy,
  };
}
