// Per-endpoint health as `gwctl config backends` shows it: a request count, a health score
// (exponential moving average of success, 1 = every recent call succeeded) and a latency
// moving average in milliseconds (time to the response headers). Kept across reloads, keyed
// by endpoint address.

/** Weight of the newest sample in the moving averages. */
const ALPHA = 0.1;

export interface EndpointStats {
  requests: number;
  health: number;
  latencyMs: number;
}

export class EndpointStatsTable {
  readonly #byEndpoint = new Map<string, EndpointStats>();

  record(endpoint: string, ok: boolean, latencyMs: number): void {
    let s = this.#byEndpoint.get(endpoint);
    if (!s) this.#byEndpoint.set(endpoint, (s = { requests: 0, health: 1, latencyMs }));
    s.requests++;
    s.health += ALPHA * ((ok ? 1 : 0) - s.health);
    s.latencyMs += ALPHA * (latencyMs - s.latencyMs);
  }

  get(endpoint: string): EndpointStats {
    return this.#byEndpoint.get(endpoint) ?? { requests: 0, health: 1, latencyMs: 0 };
  }
}
