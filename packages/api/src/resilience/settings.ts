// The process settings of retries and failover (config.* of a standalone config, the Gateway's
// parameters in a cluster): their defaults, in one place for the schema, the proxy and its
// config_dump.

/** config.retryBudgetPercent default: extra attempts in flight, as a share of a route's requests in flight. */
export const DEFAULT_RETRY_BUDGET_PERCENT = 20;
/** config.retryBudgetMinConcurrency default: extra attempts a route may always have in flight. */
export const DEFAULT_RETRY_BUDGET_MIN_CONCURRENCY = 10;
/** config.maxRetryBodyBytes default: the largest request body kept for sending again (1 MiB). */
export const DEFAULT_MAX_RETRY_BODY_BYTES = 1024 * 1024;
/** config.coolDown default: how long a backend that answered 429 or 503 without Retry-After is passed over. */
export const DEFAULT_COOL_DOWN_MS = 5_000;
/** config.maxCoolDown default: the longest cool-down a Retry-After may ask for. */
export const DEFAULT_MAX_COOL_DOWN_MS = 300_000;
