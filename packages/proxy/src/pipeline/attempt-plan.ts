// Where the next attempt of a request goes, on a route that fails over or retries: one plan per
// request, made at the backend choice, asked after each attempt that failed before anything of
// its answer reached the client. The order of decisions, for users in docs/retries-failover.md:
//
// - A failure failover handles (a connection error, a backend timeout, a 5xx, a 429, a backend
//   that cannot be called) goes to the next priority level with a backend not cooling down,
//   once per level, without waiting.
// - Otherwise, or with no level left, the route's retry (if any) sends it again within the
//   level it is at, for the failures it lists (its codes; connection errors and backend
//   timeouts always), up to `attempts` times, each after a backoff; never to a backend that
//   asked to be left alone (a 429 or a Retry-After, while its cool-down runs).
// - Never: once anything of an answer was passed on (the response policies saw it), for a body
//   not kept in memory (larger than config.maxRetryBodyBytes) unless nothing of it was sent,
//   past the route's request timeout, when the client left, or when the route's retry budget
//   has no share left (routing/retry-budget.ts).
//
// An attempt that sent nothing (a backend that cannot be called, a connection that failed
// before any byte was written) costs no budget: it adds no load anywhere.
import type { IncomingHttpHeaders } from 'node:http';
import { MAX_BACKOFF_FACTOR, type RetryIR } from '@tollgate/api';
import type { LlmRequest } from '../llm/request-body.js';
import type { ProxyMetrics } from '../metrics/metrics.js';
import { INVALID_BACKEND, type UpstreamTarget } from '../routing/backend-picker.js';
import type { RouteResilience } from '../routing/compile.js';
import type { Choice, Member } from '../routing/priority-levels.js';
import type { RetryBudgetSettings } from '../routing/retry-budget.js';
import type { CoolDowns } from '../upstream/cool-downs.js';

/** How one attempt ended, as the plan weighs it. */
export type AttemptOutcome =
  /** The backend answered with this status (nothing of it passed on yet). */
  | { readonly kind: 'answer'; readonly status: number }
  /** A transport failure before any answer (a catalog code); `unsent`: not one byte of the request was written. */
  | { readonly kind: 'error'; readonly code: string; readonly unsent: boolean };

export interface NextAttempt {
  readonly kind: 'retry' | 'failover';
  readonly level: number;
  readonly member: Member;
  readonly target: UpstreamTarget;
  /** The backoff before it (0 for a failover). */
  readonly waitMs: number;
}

/** Failures after which nothing is tried again: the route's deadline passed, the client left. */
const FINAL_ERRORS: ReadonlySet<string> = new Set(['TG_REQUEST_TIMEOUT', 'TG_CLIENT_GONE']);
/** Failures a retry of the same backend cannot mend (its certificate, its TLS setup, its protocol); failover can. */
const NOT_RETRIED: ReadonlySet<string> = new Set(['TG_UPSTREAM_CERTIFICATE', 'TG_UPSTREAM_TLS', 'TG_UPSTREAM_NO_H2']);

function retriable(retry: RetryIR, outcome: AttemptOutcome): boolean {
  return outcome.kind === 'answer' ? retry.codes.includes(outcome.status) : !NOT_RETRIED.has(outcome.code);
}

function failsOver(outcome: AttemptOutcome): boolean {
  return outcome.kind === 'error' || outcome.status >= 500 || outcome.status === 429;
}

/**
 * The wait before retry `n` (1 for the first): `backoff` doubled each time up to
 * MAX_BACKOFF_FACTOR times it, jittered between half of that and all of it, never below
 * `backoff` (the Gateway API's minimum).
 */
export function backoffMs(backoff: number, n: number): number {
  const ceiling = Math.min(backoff * 2 ** (n - 1), backoff * MAX_BACKOFF_FACTOR);
  return Math.max(backoff, ceiling / 2 + (Math.random() * ceiling) / 2);
}

/** What the backend choice left of the request before shaping it for one backend: restored to shape it for another. */
export interface Unshaped {
  readonly headers: Record<string, string | string[] | undefined>;
  readonly path: string;
  readonly query: string;
  readonly llm: LlmRequest | null;
}

/** What a plan reads of its request and of the running proxy (from the RequestContext, by backend-choice.ts). */
export interface PlanInputs {
  /** The route's name, for metrics. */
  readonly route: string;
  /** The route's timeouts.request, covering every attempt; null: none. */
  readonly requestTimeoutMs: number | null;
  /** The request body is in memory and within config.maxRetryBodyBytes (or there is none). */
  readonly replayable: boolean;
  readonly unshaped: Unshaped;
  readonly coolDowns: CoolDowns;
  readonly budget: RetryBudgetSettings;
  readonly metrics: ProxyMetrics;
}

export class AttemptPlan {
  /** The level and backend of the attempt under way. */
  level: number;
  member: Member;
  /** Retries made (failovers are not counted against retry.attempts). */
  retries = 0;
  /** The next attempt `judge` decided on for the answer it discarded. */
  pending: NextAttempt | null = null;
  /** When the first attempt started (the route's request timeout covers every attempt). */
  readonly startedAt = performance.now();
  #holdsBudget = false;
  #done = false;

  constructor(
    readonly resilience: RouteResilience,
    first: Choice,
    readonly inputs: PlanInputs,
  ) {
    this.level = first.level;
    this.member = first.member;
    resilience.budget.active++;
  }

  get unshaped(): Unshaped {
    return this.inputs.unshaped;
  }

  /** The first usable backend from `first` on: past levels whose backend cannot be called. Null when none can. */
  static usable(levels: RouteResilience['levels'], first: Choice): { choice: Choice; target: UpstreamTarget } | null {
    let c: Choice | null = first;
    while (c !== null) {
      const t = c.target;
      if (t !== null && t !== INVALID_BACKEND) return { choice: c, target: t };
      c = levels.after(c.level);
    }
    return null;
  }

  /**
   * Sees an answer before anything of it reaches the client (ForwardHooks.judge): records a 429
   * or 503 as a cool-down of its backend, and returns true when another attempt will be made
   * instead (kept in `pending`), so the answer is discarded.
   */
  judge(status: number, headers: IncomingHttpHeaders): boolean {
    this.pending = null;
    if (status === 429 || status === 503) {
      const ra = headers['retry-after'];
      this.inputs.coolDowns.record(this.member.key, status, typeof ra === 'string' ? ra : undefined);
    }
    if (status < 500 && status !== 429 && !this.resilience.retry?.codes.includes(status)) return false;
    this.pending = this.next({ kind: 'answer', status });
    return this.pending !== null;
  }

  /** The next attempt after `outcome`, or null: the request gets the answer (or the failure) it has. */
  next(outcome: AttemptOutcome): NextAttempt | null {
    if (outcome.kind === 'error' && FINAL_ERRORS.has(outcome.code)) return null;
    const sentNothing = outcome.kind === 'error' && outcome.unsent;
    if (!this.inputs.replayable && !sentNothing) return null;
    const { levels, retry } = this.resilience;
    let next: NextAttempt | null = null;
    if (failsOver(outcome) && levels.failsOver) {
      const found = levels.after(this.level);
      const usable = found && AttemptPlan.usable(levels, found);
      if (usable) next = { kind: 'failover', level: usable.choice.level, member: usable.choice.member, target: usable.target, waitMs: 0 };
    }
    if (!next && retry && this.retries < retry.attempts && retriable(retry, outcome)) {
      const c = levels.within(this.level);
      const t = c?.target;
      if (c && t && t !== INVALID_BACKEND) next = { kind: 'retry', level: c.level, member: c.member, target: t, waitMs: backoffMs(retry.backoffMs, this.retries + 1) };
    }
    if (!next) return null;
    const { requestTimeoutMs: limit, metrics, route } = this.inputs;
    if (limit !== null && performance.now() - this.startedAt + next.waitMs >= limit) return null;
    if (!sentNothing && !this.#holdsBudget) {
      if (!this.resilience.budget.take(this.inputs.budget)) {
        metrics.countRetryBudgetExhausted(route);
        return null;
      }
      this.#holdsBudget = true;
    }
    if (next.kind === 'retry') this.retries++;
    metrics.countRetry(route, next.kind);
    this.level = next.level;
    this.member = next.member;
    return next;
  }

  /** The request's upstream call is over: its place in the budget goes back. */
  done(): void {
    if (this.#done) return;
    this.#done = true;
    this.resilience.budget.active--;
    if (this.#holdsBudget) this.resilience.budget.retrying--;
  }
}
