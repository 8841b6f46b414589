// The rate-limit policy of one attachment point, compiled: its local limiter and its global
// limiter. `Admissions` runs a request through the policies it meets before the upstream
// call, refunds what earlier limits took when a later one (or the gateway) refuses the
// request, and settles the token reservations with the LLM usage after the response.
import { compileCel, type EvaluationLimits, type GlobalRateLimitIR, type ListenerIR, type PolicyIR, type RateLimitDescriptorIR, type RateLimitKeyIR } from '@tollgate/api';
import type { GlobalCheck, GlobalLimiter, GlobalOutcome } from './global/index.js';
import type { RequestFacts } from './facts.js';
import type { DecisionResult, ProxyMetrics } from '../metrics/metrics.js';
import { ERRORS, type ErrorSpec } from '../errors.js';
import { leastRemaining, rateLimitHeaders, type LimitStatus } from './headers.js';
import { compileKey, readsConsumer } from './key.js';
import { LimiterStore, LocalLimiter, type IndexedConfig, type LimitLevel, type LocalHold } from './local/limiter.js';
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

/** The limits of one policy, as indexed configs and global descriptors; null when it has none. */
interface PolicyLimits {
  readonly local: readonly IndexedConfig[];
  readonly global: GlobalRateLimitIR | null;
}

function compileLimits(level: LimitLevel, scope: string, limitsOf: PolicyLimits, store: LimiterStore, makeGlobal: GlobalFactory | null, limits: EvaluationLimits): CompiledPolicy | null {
  const local = limitsOf.local.length ? LocalLimiter.compile(level, scope, limitsOf.local, store, limits) : null;
  const global = limitsOf.global && makeGlobal ? makeGlobal(limitsOf.global, scope, limits) : null;
  if (!local && !global) return null;
  return {
    level,
    local,
    global,
    countsTokens: (local?.hasTokens ?? false) || (global?.hasTokens ?? false),
    needsBody: global !== null || (local?.hasTokens ?? false),
  };
}

const indexed = (ir: PolicyIR | null): IndexedConfig[] => ir?.localRateLimit?.map((config, index) => ({ index, config })) ?? [];

/** A route's rate limits: they run after authentication, so keys may read the consumer. */
export function compilePolicy(
  level: LimitLevel,
  scope: string,
  ir: PolicyIR | null,
  store: LimiterStore,
  makeGlobal: GlobalFactory | null,
  limits: EvaluationLimits,
): CompiledPolicy | null {
  if (!ir || (!ir.localRateLimit && !ir.remoteRateLimit)) return null;
  return compileLimits(level, scope, { local: indexed(ir), global: named(level, ir.remoteRateLimit) }, store, makeGlobal, limits);
}

/**
 * The descriptors each with a name for x-ratelimit-policy: its own, else its place in the policy
 * (`route.global.descriptors[1]`), given before a gateway-level policy is split in two.
 */
function named(level: LimitLevel, g: GlobalRateLimitIR | null): GlobalRateLimitIR | null {
  if (!g || g.descriptors.every((d) => d.name !== undefined)) return g;
  return { ...g, descriptors: g.descriptors.map((d, i) => (d.name !== undefined ? d : { ...d, name: `${level}.global.descriptors[${i}]` })) };
}

/**
 * A listener's gateway-level limits, in two parts. They run before routing, as the spec says,
 * except the entries and descriptors that read the consumer (keyed by Consumer, ConsumerGroup
 * or Claim, or an expression over `consumer`): nobody is authenticated before routing, so those
 * run after authentication, before the route's limits, on the same counters. On a listener
 * where a transformation changes requests (`transforms`), the entries that read the request
 * (tokens entries, which reserve from its body, and keyed entries) and the global descriptors
 * run there too, after the transformation: the budgets see the transformed request.
 */
export function compileGatewayPolicy(
  scope: string,
  ir: PolicyIR | null,
  store: LimiterStore,
  makeGlobal: GlobalFactory | null,
  limits: EvaluationLimits,
  transforms = false,
): { readonly beforeRouting: CompiledPolicy | null; readonly afterAuth: CompiledPolicy | null } {
  if (!ir || (!ir.localRateLimit && !ir.remoteRateLimit)) return { beforeRouting: null, afterAuth: null };
  const local = indexed(ir);
  const keyReadsConsumer = (by: RateLimitKeyIR | undefined, at: string) => (by ? compileKey(by, limits, at).readsConsumer : false);
  const readsRequest = (c: IndexedConfig) => transforms && (c.config.kind === 'tokens' || c.config.by !== undefined);
  const early = local.filter((c) => !readsRequest(c) && !keyReadsConsumer(c.config.by, `rateLimit.local[${c.index}].by`));
  const late = local.filter((c) => !early.includes(c));
  const g = named('gateway', ir.remoteRateLimit);
  const descriptorReadsConsumer = (d: RateLimitDescriptorIR, i: number) =>
    transforms || keyReadsConsumer(d.by, `rateLimit.global.descriptors[${i}].by`) || d.entries.some((e) => {
      const c = compileCel(e.expression, 'descriptor', limits);
      return c.ok && readsConsumer(c.value.reads);
    });
  const lateDescriptors = g ? g.descriptors.filter(descriptorReadsConsumer) : [];
  const earlyDescriptors = g ? g.descriptors.filter((d) => !lateDescriptors.includes(d)) : [];
  const part = (descriptors: readonly RateLimitDescriptorIR[]) => (g && descriptors.length ? { ...g, descriptors } : null);
  return {
    beforeRouting: compileLimits('gateway', scope, { local: early, global: part(earlyDescriptors) }, store, makeGlobal, limits),
    afterAuth: compileLimits('gateway', scope, { local: late, global: part(lateDescriptors) }, store, makeGlobal, limits),
  };
}

/** A refusal: the answer to send instead of calling the backend. */
export interface Refusal {
  readonly spec: ErrorSpec;
  readonly headers: Record<string, string>;
}

const DECISION: Record<GlobalOutcome, DecisionResult> = { ok: 'allowed', overLimit: 'limited', failedOpen: 'failed_open', serviceError: 'error', inputRefused: 'refused' };

const LIMIT_HEADER_NAMES = new Set(['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset', 'x-ratelimit-policy']);

/** The service's headers without the x-ratelimit-* ones: those are chosen across all limits. */
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
 *   give back (the RLS API has no negative hits): its Requests descriptors stay charged, and
 *   what its Tokens descriptors reserved becomes this replica's credit for their keys, spent
 *   by the next reservations of those keys (global/credits.ts).
 * - `settle(tokens)` once the request went upstream: request tokens stay taken; token
 *   reservations are replaced by the usage (`null`: nothing charged, e.g. not a 2xx), and
 *   global Tokens descriptors are charged the usage beyond their reservation.
 */
export class Admissions {
  readonly #statuses: LimitStatus[] = [];
  readonly #responseHeaders: Record<string, string> = {};
  readonly #requestHeaders: Record<string, string> = {};
  readonly #holds: LocalHold[] = [];
  /** The global limits with Tokens descriptors that admitted the request: its usage is charged to them. */
  readonly #globalCharges: GlobalCheck[] = [];
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
      const verdict = local.check(local.hasTokens ? (this.#reservation ??= tokenReservation(llm)) : 0, facts);
      if (!verdict.allowed && verdict.refusedBy === 'input') {
        // A key expression's input over its bound: not evaluated, not let through (431).
        for (const e of local.entries) if (e.budget.keyed) this.metrics.countDecision(e.kind, policy.level, 'refused');
        this.refund();
        return this.#refusal(ERRORS.expressionInputTooLarge, {});
      }
      this.#statuses.push(...verdict.statuses);
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
    if (!policy.global) return null;
    return this.#admitGlobal(policy.global, facts, policy.global.hasTokens ? (this.#reservation ??= tokenReservation(llm)) : 0);
  }

  async #admitGlobal(global: GlobalLimiter, facts: () => RequestFacts, reservation: number): Promise<Refusal | null> {
    const g = await global.check(facts(), reservation);
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
    if (global.hasTokens) this.#globalCharges.push(g);
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

  /**
   * The gateway answered the request itself: local limits forget it, and what global Tokens
   * descriptors reserved for it becomes this replica's credit (see the class comment).
   */
  refund(): void {
    if (this.#ended) return;
    this.#ended = true;
    for (const h of this.#holds) h.refund();
    for (const g of this.#globalCharges) void g.settle(null);
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

  /** Whether a global Tokens descriptor admitted the request: its usage is charged to the service. */
  get chargesGlobalTokens(): boolean {
    return this.#globalCharges.length > 0;
  }

  /**
   * The request went upstream and is over: `tokens` is its LLM usage (charged to every token
   * limit that admitted it, in place of the reservation), or null when nothing is charged.
   * Returns, when global Tokens descriptors are charged, the promise of the service's answers
   * (it never rejects): the response's last bytes wait for it, so that the client's next
   * request, on whichever replica, meets a budget that counts this one.
   */
  settle(tokens: null): undefined;
  settle(tokens: number | null): Promise<void> | undefined;
  settle(tokens: number | null): Promise<void> | undefined {
    if (this.#ended) return undefined;
    this.#ended = true;
    for (const h of this.#holds) h.settle(tokens);
    if (this.#globalCharges.length === 0) return undefined;
    const charges = this.#globalCharges.map((g) => g.settle(tokens));
    // Nothing used: reservations become credit, and no call is made to wait for.
    if (tokens === null) return undefined;
    return Promise.all(charges).then(() => undefined);
  }
}

/** What a mirrored copy of a request holds in the limits that admitted the request; settled once. */
export class CopyHold {
  #ended = false;
  constructor(
    private readonly holds: readonly LocalHold[],
    private readonly globalCharges: readonly GlobalCheck[],
  ) {}

  /** The copy's usage (null: not charged, e.g. the mirror did not answer 2xx). */
  settle(tokens: number | null): void {
    if (this.#ended) return;
    this.#ended = true;
    for (const h of this.holds) h.settle(tokens);
    // Nobody waits for a copy's answer: its charges go out on their own.
    if (tokens !== null) for (const g of this.globalCharges) void g.charge(tokens);
  }
}

export { LimiterStore, type RequestFacts };
