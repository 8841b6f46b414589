// The retry budget of one route (Envoy's retry_budget): the extra attempts (retries and
// failovers) its requests may have in flight at once are at most config.retryBudgetPercent of
// its requests in flight, and never fewer than config.retryBudgetMinConcurrency. So when a
// backend fails everything, the extra load on the route's other backends (or on the same one)
// stays a share of the traffic, not a multiple of it. Per route: one tenant's failing route
// spends its own budget, not another's. Two counters; a request that could not get a share
// answers with what it has.
export interface RetryBudgetSettings {
  /** config.retryBudgetPercent. */
  readonly percent: number;
  /** config.retryBudgetMinConcurrency. */
  readonly minConcurrency: number;
}

export class RetryBudget {
  /** Requests of the route in their upstream call. */
  active = 0;
  /** Of those, the ones making (or waiting to make) an extra attempt. */
  retrying = 0;

  /** Extra attempts in flight allowed with `active` requests in flight. */
  static cap(active: number, settings: RetryBudgetSettings): number {
    return Math.max(settings.minConcurrency, Math.floor((active * settings.percent) / 100));
  }

  /** A request that holds no share yet asks for one; false when the budget is spent. */
  take(settings: RetryBudgetSettings): boolean {
    if (this.retrying >= RetryBudget.cap(this.active, settings)) return false;
    this.retrying++;
    return true;
  }
}

/** The retry and cool-down settings in force, as config_dump shows them. */
export interface RetrySettingsView {
  readonly retryBudgetPercent: number;
  readonly retryBudgetMinConcurrency: number;
  readonly maxRetryBodyBytes: number;
  readonly coolDownMs: number;
  readonly maxCoolDownMs: number;
}
