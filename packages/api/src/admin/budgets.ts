// The rows of a proxy's GET /budgets, as the proxy writes them and gwctl reads them
// (docs/admin-api.md, "/budgets"): one shape for both ends of the admin API.

export const LOCAL_BUDGET_SOURCE = 'local';
export const GLOBAL_BUDGET_SOURCE = 'global (last answer)';

export interface BudgetRow {
  readonly source: typeof LOCAL_BUDGET_SOURCE | typeof GLOBAL_BUDGET_SOURCE;
  /** gateway or route for a local entry; null for a global descriptor (its counters are the service's). */
  readonly level: 'gateway' | 'route' | null;
  /** The route, the listener, or `Gateway <ns>/<name>` the entry belongs to. */
  readonly scope: string;
  /** `rateLimit.local[1]` or `rateLimit.global.descriptors[0]`. */
  readonly entry: string;
  /** What the budget is kept per: consumer, consumer_group, claim.<name>, header.<name> or key (an expression). */
  readonly by: string;
  /** The key value (a possible credential shown as a hash); null for a local entry's shared overflow budget. */
  readonly key: string | null;
  /** Every new key beyond config.maxRateLimitKeys shares this budget. */
  readonly overflow: boolean;
  readonly kind: 'requests' | 'tokens';
  readonly limit: number;
  readonly used: number;
  /** LLM tokens held by requests in flight (local tokens entries). */
  readonly reserved: number;
  readonly remaining: number;
  /** The window: Seconds ... Months (local), or the service's unit in seconds (global). */
  readonly window: string;
  readonly resetSeconds: number;
  readonly resetAt: string;
  /** Global: when the service gave this answer; local: null (the numbers are live). */
  readonly answeredAt: string | null;
}
