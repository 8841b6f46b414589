// The most one response is charged to token limits (config.maxTokensChargedPerResponse).
// Usage is what the backend reports, and the backend is whoever the route sends to: a tenant's
// Service behind a gateway-level token limit could report 2^32-1 tokens and exhaust in one
// response a budget every route of the Gateway shares. The cap bounds that; a real completion
// stays below it (the largest context windows are about 2 million tokens).
import type { Logger } from 'pino';
import { WarnThrottle } from './warn-throttle.js';

export const DEFAULT_MAX_TOKENS_CHARGED_PER_RESPONSE = 2_000_000;

/** Seconds between two warn lines about over-reporting backends. */
const WARN_INTERVAL_MS = 30_000;

export class ChargeCap {
  readonly #throttle: WarnThrottle;

  constructor(
    readonly max: number,
    private readonly log: Logger,
    now: () => number = Date.now,
  ) {
    this.#throttle = new WarnThrottle(WARN_INTERVAL_MS, now);
  }

  /** The tokens to charge for a response that used `tokens` (reported or estimated) on `route`. */
  charge(tokens: number, route: string): number {
    if (tokens <= this.max) return tokens;
    const w = this.#throttle.take();
    const fields = { route, reported: tokens, charged: this.max };
    const msg = `backend reported more LLM tokens than one response may be charged (config.maxTokensChargedPerResponse ${this.max}); charged ${this.max}`;
    if (w.log) this.log.warn({ ...fields, suppressed: w.suppressed }, msg);
    else this.log.debug(fields, msg);
    return this.max;
  }
}
