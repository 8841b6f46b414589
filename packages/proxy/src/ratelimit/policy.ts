// The rate-limit policy of one attachment point, compiled: its local limiter and its global
// limiter. `Admissions` runs a request through the policies it meets before the upstream
// call, refunds what earlier limits took when a later one (or the gateway) refuses the
// request, and settles the token reservations with the LLM usage after the response.
import type { EvaluationLimits, ListenerIR, PolicyIR } from '@tollgate/api';
import type { GlobalLimiter, GlobalOutcome } from './global/index.js';
import type { RequestFacts } from './global/facts.js';
import type { DecisionResult, ProxyMetrics } from '../metrics/metrics.js';
import { ERRORS, type ErrorSpec } from '../errors.js';
import { leastRemaining, rateLimitHeaders, type LimitStatus } from './headers.js';
import { LimiterStore, LocalLimiter, type LimitLevel, type LocalHold } from './local/limiter.js';
import { tokenReservation, type ReservationInput } from './reservation.js';

export interface CompiledPolicy {
  readonly level: LimitLevel;
  readonly local: LocalLimiter | null;
  readonly global: GlobalLimiter | null;
  /** Counts LLM tokens (a tokens entry or a global Tokens descriptor). */
  readonly countsTokens: boolean;
  /**
   * The LLM body must be read before this policy runs: global descriptors may use the model,
   * and a tokens entry reserves the prompt estimate and max_tokens at admission.
   */
  readonly needsBody: boolean;
}

/**
 * The counters' scope of a listener's gateway-level policy. A GatewayPolicy attached to the
 * whole Gateway is one set of counters per replica, whatever listener or port a request comes
 * in on: a limit of N requests admits N in total, not N per listener. A policy attached to one
 * listener (sectionName), or a standalone listener's own `policies`, counts for that listener.
 * Listener names cannot contain '/', so the two kinds of scope never collide.
 */
export function gatewayPolicyScope(listener: Pick<ListenerIR, 'name' | 'policy'>): string {
  const origin = listener.policy?.origin;
  if (origin?.kind === 'GatewayPolicy' && origin.target.kind === 'Gateway' && origin.target.sectionName === null) {
    return `Gateway ${origin.target.namespace}/${origin.target.name}`;
  }
  return listener.name;
}

/** Builds the global limiter of a policy, its expressions within `limits` (the snapshot's). */
export type GlobalFactory = (ir: NonNullable<PolicyIR['remoteRateLimit']>, scope: string, limits: EvaluationLimits) => GlobalLimiter;

export function compilePolicy(
  level: LimitLevel,
  scope: string,
  ir: PolicyIR | null,
  store: LimiterStore,
  makeGlobal: GlobalFactory | null,
  limits: EvaluationLimits,
): CompiledPolicy | null {
  if (!ir || (!ir.localRateLimit && !ir.remoteRateLimit)) return null;
  const local = ir.localRateLimit ? LocalLimiter.compile(level, scope, ir.localRateLimit, store) : null;
  const global = ir.remoteRateLimit && makeGlobal ? makeGlobal(ir.remoteRateLimit, scope, limits) : null;
  return {
    level,
    local,
    global,
    countsTokens: (local?.hasTokens ?? false) || (global?.hasTokens ?? false),
    needsBody: global !== null || (local?.hasTokens ?? false),
  };
}

/** A refusal: the answer to send instead of calling the backend. */
export interface Refusal {
  readonly spec: ErrorSpec;
  readonly headers: Record<string, string>;
}

const DECISION: Record<GlobalOutcome, DecisionResult> = { ok: 'allowed', overLimit: 'limited', failedOpen: 'failed_open', serviceError: 'error', inputRefused: 'refused' };

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
 * headers, and what the request holds in each limiter until it ends. Created only for requests
 * that meet a policy, and ended exactly once:
 * - `refund()` when the gateway answers the request itself (a later limit refuses it, no route,
 *   no backend, an unreadable body): every local limit that admitted it gives back its request
 *   token and token reservation, so a refused request is never counted. A global limit cannot
 *   give back (the RLS API has no negative hits): its Requests descriptors stay charged.
 * - `settle(tokens)` once the request went upstream: request tokens stay taken; token
 *   reservations are replaced by the usage (`null`: nothing charged, e.g. not a 2xx), and
 *   global Tokens descriptors are charged the usage.
 */
export class Admissions {
  readonly #statuses: LimitStatus[] = [];
  readonly #responseHeaders: Record<string, string> = {};
  readonly #requestHeaders: Record<string, string> = {};
  readonly #holds: LocalHold[] = [];
  readonly #globalCharges: ((tokens: number) => void)[] = [];
  #reservation: number | null = null;
  #ended = false;

  constructor(private readonly metrics: ProxyMetrics) {}

  /**
   * Runs one policy; returns the refusal (after refunding what earlier limits of this request
   * took), or null when the request may go on. `llm` is the parsed LLM body when it was read:
   * its prompt estimate and max_tokens are what a tokens entry reserves.
   */
  admit(policy: CompiledPolicy, facts: () => RequestFacts, llm: ReservationInput | null): Refusal | null | Promise<Refusal | null> {
    const local = policy.local;
    if (local) {
      // One reservation per request, the same at every level: fixed when first needed.
      const verdict = local.check(local.hasTokens ? (this.#reservation ??= tokenReservation(llm)) : 0);
      this.#statuses.push(...local.statuses());
      for (const e of local.entries) {
        const limited = !verdict.allowed && verdict.refusedBy === e.kind;
        if (verdict.allowed || limited) this.metrics.countDecision(e.kind, policy.level, limited ? 'limited' : 'allowed');
      }
      if (!verdict.allowed) {
        this.refund();
        return this.#refusal(ERRORS.rateLimited, {});
      }
      this.#holds.push(verdict.hold);
    }
    // Local limits decide synchronously: a policy without a global limit costs no promise.
    return policy.global ? this.#admitGlobal(policy.global, facts) : null;
  }

  async #admitGlobal(global: GlobalLimiter, facts: () => RequestFacts): Promise<Refusal | null> {
    const g = await global.check(facts());
    const result = DECISION[g.outcome];
    this.metrics.countDecision('global', 'global', result);
    if (g.limit) this.#statuses.push(g.limit);
    const headers = withoutLimitHeaders(g.headers);
    if (!g.allowed) {
      this.refund();
      const spec =
        g.outcome === 'overLimit' ? { ...ERRORS.rateLimited, body: g.body } : g.outcome === 'inputRefused' ? ERRORS.expressionInputTooLarge : ERRORS.rateLimitServiceUnavailable;
      return this.#refusal(spec, headers);
    }
    Object.assign(this.#responseHeaders, headers);
    Object.assign(this.#requestHeaders, g.requestHeaders);
    if (global.hasTokens) this.#globalCharges.push((tokens) => void g.commitTokens(tokens));
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

  /** The gateway answered the request itself: local limits forget it (see the class comment). */
  refund(): void {
    if (this.#ended) return;
    this.#ended = true;
    for (const h of this.#holds) h.refund();
  }

  /**
   * A copy of the request goes to a mirror: it spends tokens too, so it holds the request's
   * reservation again in every local token budget that admitted the request, and its usage is
   * charged to them and to the global Tokens descriptors when it settles (docs/rate-limiting.md,
   * "Mirrors"). A copy is never refused: the request it copies was admitted.
   */
  copy(): CopyHold {
    return new CopyHold(
      this.#holds.map((h) => h.copy()),
      this.#globalCharges,
    );
  }

  /**
   * The request went upstream and is over: `tokens` is its LLM usage (charged to every token
   * limit that admitted it, in place of the reservation), or null when nothing is charged.
   */
  settle(tokens: number | null): void {
    if (this.#ended) return;
    this.#ended = true;
    for (const h of this.#holds) h.settle(tokens);
    if (tokens !== null) for (const c of this.#globalCharges) c(tokens);
  }
}

/** What a mirrored copy of a request holds in the limits that admitted the request; settled once. */
export class CopyHold {
  #ended = false;
  constructor(
    private readonly holds: readonly LocalHold[],
    private readonly globalCharges: readonly ((tokens: number) => void)[],
  ) {}

  /** The copy's usage (null: not charged, e.g. the mirror did not answer 2xx). */
  settle(tokens: number | null): void {
    if (this.#ended) return;
    this.#ended = true;
    for (const h of this.holds) h.settle(tokens);
    if (tokens !== null) for (const c of this.globalCharges) c(tokens);
  }
}

export { LimiterStore, type RequestFacts };
