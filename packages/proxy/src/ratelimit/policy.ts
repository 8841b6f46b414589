// The rate-limit policy of one attachment point, compiled: its local limiter and its global
// limiter. `admit()` runs a request through it before the upstream call; the returned
// admission charges LLM tokens after the response.
import type { PolicyIR } from '@tollgate/api';
import type { GlobalLimiter } from './global/index.js';
import type { RequestFacts } from './global/facts.js';
import type { ProxyMetrics } from '../metrics/metrics.js';
import { RATE_LIMITED_BODY, type LimitStatus } from './headers.js';
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

export type Admission =
  | {
      readonly allowed: true;
      readonly statuses: LimitStatus[];
      /** Response headers from the rate limit service. */
      readonly extraHeaders: Record<string, string>;
      /** Headers the rate limit service adds to the upstream request. */
      readonly requestHeaders: Record<string, string>;
      readonly charge: (tokens: number) => void;
    }
  | { readonly allowed: false; readonly status: number; readonly body: string; readonly headers: Record<string, string>; readonly statuses: LimitStatus[] };

function globalStatus(h: Record<string, string>): LimitStatus | null {
  const remaining = h['x-ratelimit-remaining'];
  const limit = h['x-ratelimit-limit'];
  if (remaining === undefined || limit === undefined) return null;
  return { limit, remaining: Number(remaining), resetSeconds: Number(h['x-ratelimit-reset'] ?? 0) };
}

export async function admit(policy: CompiledPolicy, facts: () => RequestFacts, metrics: ProxyMetrics): Promise<Admission> {
  const statuses: LimitStatus[] = [];
  const local = policy.local;
  if (local) {
    const verdict = local.check();
    statuses.push(...local.statuses());
    for (const e of local.entries) {
      const limited = !verdict.allowed && verdict.refusedBy === e.kind;
      if (verdict.allowed || limited) metrics.decisions.inc({ kind: e.kind, level: policy.level, result: limited ? 'limited' : 'allowed' });
    }
    if (!verdict.allowed) return { allowed: false, status: 429, body: RATE_LIMITED_BODY, headers: {}, statuses };
  }
  let extraHeaders: Record<string, string> = {};
  let requestHeaders: Record<string, string> = {};
  let commitGlobal: ((tokens: number) => void) | null = null;
  if (policy.global) {
    const g = await policy.global.check(facts());
    const result = g.outcome === 'ok' ? 'allowed' : g.outcome === 'overLimit' ? 'limited' : g.outcome === 'failedOpen' ? 'failed_open' : 'error';
    metrics.decisions.inc({ kind: 'global', level: 'global', result });
    const gs = globalStatus(g.headers);
    if (gs) statuses.push(gs);
    const { ['x-ratelimit-limit']: _l, ['x-ratelimit-remaining']: _r, ['x-ratelimit-reset']: _t, ...rest } = g.headers;
    if (!g.allowed) return { allowed: false, status: g.status, body: g.body, headers: rest, statuses };
    extraHeaders = rest;
    requestHeaders = g.requestHeaders;
    commitGlobal = (tokens) => void g.commitTokens(tokens);
  }
  return {
    allowed: true,
    statuses,
    extraHeaders,
    requestHeaders,
    charge: (tokens) => {
      local?.addTokens(tokens);
      commitGlobal?.(tokens);
    },
  };
}

export { LimiterStore, type RequestFacts };
