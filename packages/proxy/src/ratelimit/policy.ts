// The rate-limit policy of one attachment point, compiled: its local limiter and its global
// limiter. `Admissions` runs a request through the policies it meets before the upstream
// call, and charges the LLM tokens after the response.
import type { PolicyIR } from '@tollgate/api';
import type { GlobalLimiter } from './global/index.js';
import type { RequestFacts } from './global/facts.js';
import type { ProxyMetrics } from '../metrics/metrics.js';
import { ERRORS, type ErrorSpec } from '../errors.js';
import { leastRemaining, rateLimitHeaders, type LimitStatus } from './headers.js';
import { LimiterStore, LocalLimiter, type LimitLevel } from './local/limiter.js';

export interface CompiledPolicy {
  readonly level: LimitLevel;
  readonly local: LocalLimiter | null;
  readonly global: GlobalLimiter | null;
  /** Counts LLM tokens (a tokens entry or a global Tokens descriptor). */
  readonly countsTokens: boolean;
}

export type GlobalFactory = (ir: NonNullable<PolicyIR['remoteRateLimit']>, scope: string) => GlobalLimiter;

export function compilePolicy(level: LimitLevel, scope: string, ir: PolicyIR | null, store: LimiterStore, makeGlobal: GlobalFactory | null): CompiledPolicy | null {
  if (!ir || (!ir.localRateLimit && !ir.remoteRateLimit)) return null;
  const local = ir.localRateLimit ? LocalLimiter.compile(level, scope, ir.localRateLimit, store) : null;
  const global = ir.remoteRateLimit && makeGlobal ? makeGlobal(ir.remoteRateLimit, scope) : null;
  return { level, local, global, countsTokens: (local?.hasTokens ?? false) || (global?.hasTokens ?? false) };
}

/** A refusal: the answer to send instead of calling the backend. */
export interface Refusal {
  readonly spec: ErrorSpec;
  readonly headers: Record<string, string>;
}

const LIMIT_HEADER_NAMES = new Set(['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset']);

/** The service's headers without the x-ratelimit-* trio: those are chosen across all limits. */
function withoutLimitHeaders(h: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const k in h) if (!LIMIT_HEADER_NAMES.has(k)) out[k] = h[k]!;
  return out;
}

/**
 * The rate-limit state of one request across the policies it passes (gateway level, then
 * route level): the limit statuses for the x-ratelimit-* headers, the rate limit service's
 * headers, and what to charge once the LLM usage is known. Created only for requests that
 * meet a policy.
 */
export class Admissions {
  readonly #statuses: LimitStatus[] = [];
  readonly #responseHeaders: Record<string, string> = {};
  readonly #requestHeaders: Record<string, string> = {};
  readonly #charges: ((tokens: number) => void)[] = [];

  constructor(private readonly metrics: ProxyMetrics) {}

  /** Runs one policy; returns the refusal, or null when the request may go on. */
  async admit(policy: CompiledPolicy, facts: () => RequestFacts): Promise<Refusal | null> {
    const local = policy.local;
    if (local) {
      const verdict = local.check();
      this.#statuses.push(...local.statuses());
      for (const e of local.entries) {
        const limited = !verdict.allowed && verdict.refusedBy === e.kind;
        if (verdict.allowed || limited) this.metrics.decisions.inc({ kind: e.kind, level: policy.level, result: limited ? 'limited' : 'allowed' });
      }
      if (!verdict.allowed) return this.#refusal(ERRORS.rateLimited, {});
      if (local.hasTokens) this.#charges.push((tokens) => local.addTokens(tokens));
    }
    if (policy.global) {
      const g = await policy.global.check(facts());
      const result = g.outcome === 'ok' ? 'allowed' : g.outcome === 'overLimit' ? 'limited' : g.outcome === 'failedOpen' ? 'failed_open' : 'error';
      this.metrics.decisions.inc({ kind: 'global', level: 'global', result });
      if (g.limit) this.#statuses.push(g.limit);
      const headers = withoutLimitHeaders(g.headers);
      if (!g.allowed) {
        const spec = g.outcome === 'overLimit' ? { ...ERRORS.rateLimited, body: g.body } : ERRORS.rateLimitServiceUnavailable;
        return this.#refusal(spec, headers);
      }
      Object.assign(this.#responseHeaders, headers);
      Object.assign(this.#requestHeaders, g.requestHeaders);
      this.#charges.push((tokens) => void g.commitTokens(tokens));
    }
    return null;
  }

  #refusal(spec: ErrorSpec, headers: Record<string, string>): Refusal {
    const least = leastRemaining(this.#statuses);
    const out: Record<string, string> = { ...headers, ...(least ? rateLimitHeaders(least) : {}) };
    if (spec.status === 429) out['retry-after'] = String(Math.max(1, least?.resetSeconds ?? 1));
    return { spec, headers: out };
  }

  /** Headers for the response of an admitted request: the service's, then the x-ratelimit-* trio. */
  responseHeaders(): Record<string, string> {
    const least = leastRemaining(this.#statuses);
    return least ? { ...this.#responseHeaders, ...rateLimitHeaders(least) } : this.#responseHeaders;
  }

  /** Headers the rate limit service adds to the upstream request. */
  get requestHeaders(): Record<string, string> {
    return this.#requestHeaders;
  }

  /** Charges the LLM usage of the response to every token limit that admitted the request. */
  charge(tokens: number): void {
    for (const c of this.#charges) c(tokens);
  }
}

export { LimiterStore, type RequestFacts };
