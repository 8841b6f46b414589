// The global limiter: asks an Envoy RLS v3 service (envoyproxy/ratelimit or compatible)
// whether a request may pass, and charges its LLM tokens.
//
// One ShouldRateLimit call before the upstream call carries every descriptor that has a
// value for the request: Requests descriptors are charged 1 (the request's hits_addend); Tokens
// descriptors carry a hits_addend of their own (envoyproxy/ratelimit's utils.GetHitsAddends
// takes a per-descriptor hits_addend as is, 0 included, while the request-level 0 counts as 1).
// - `tokenReservation: Estimate` (the default): a Tokens descriptor is charged the request's
//   reservation (prompt estimate plus max_tokens, as local token budgets reserve), less the
//   credit this replica holds for its key (credits.ts). The service compares counter +
//   reservation with the limit, so requests in flight on every replica see each other, and a
//   budget is overspent only by what a request uses beyond its own reservation. When the
//   request ends, the usage beyond the reservation is charged; a reservation larger than the
//   usage (or a request that never reached a backend) becomes credit.
// - `tokenReservation: None`: the descriptor is checked with hits_addend 0 and charged the whole
//   usage after the response: over limit only once the tokens already charged exceed the limit
//   (the request that crosses the budget succeeds), but requests in flight do not see each other.
// A service predating the per-descriptor field (Envoy API before hits_addend on
// RateLimitDescriptor) ignores it and charges each Tokens descriptor the request-level value.
import type { Logger } from 'pino';
import type { EvaluationLimits, GlobalRateLimitIR } from '@tollgate/api';
import type { CompiledKey } from '../key.js';
import { RlsCallError, type RlsClient, type RlsClientPool } from './client.js';
import { celBindings, compileDescriptors, evaluateDescriptor, type CompiledDescriptors } from './descriptors.js';
import type { RequestFacts } from '../facts.js';
import {
  leastRemaining,
  limitStatus,
  RATE_LIMITED_BODY,
  RATE_LIMITED_HEADER,
  SERVICE_ERROR_BODY,
  SERVICE_ERROR_STATUS,
  serviceHeaders,
  windowSeconds,
} from './headers.js';
import type { RlsDescriptor, RlsDescriptorStatus, RlsResponse } from './proto.js';
import { rateLimitHeaders, type LimitStatus } from '../headers.js';
import { WarnThrottle } from '../warn-throttle.js';
import type { AnswerPlace, GlobalAnswers } from './answers.js';
import type { TokenCredits } from './credits.js';

export type GlobalOutcome = 'ok' | 'overLimit' | 'failedOpen' | 'serviceError' | 'inputRefused';

export interface GlobalCheck {
  readonly allowed: boolean;
  /**
   * ok; overLimit (429); serviceError (FailClosed, 500); failedOpen (FailOpen let it through);
   * inputRefused (an input the descriptors read is over its declared bound: refused unevaluated).
   */
  readonly outcome: GlobalOutcome;
  /** 429 over limit, 500 for FailClosed on a service error, 200 when allowed. */
  readonly status: number;
  /** 'rate limit exceeded' or the service's raw_body; 'rate limit service unavailable' for FailClosed. */
  readonly body: string;
  /**
   * Response headers: x-proxy-ratelimited (only on OVER_LIMIT), the service's
   * response_headers_to_add, and x-ratelimit-limit ("<limit>, <limit>;w=<window_seconds>"),
   * -remaining and -reset from the descriptor status with the least remaining.
   */
  readonly headers: Record<string, string>;
  /** The status behind the x-ratelimit-* headers above, null when no descriptor had a limit. */
  readonly limit: LimitStatus | null;
  /** The service's request_headers_to_add, for the upstream request when allowed. */
  readonly requestHeaders: Record<string, string>;
  /**
   * The request is over: `tokens` is its LLM usage, charged to the Tokens descriptors in place
   * of its reservation (null: it used nothing: it never reached a backend, or its answer is not
   * charged). A no-op when no Tokens descriptor was sent or the request was refused; called at
   * most once. Never rejects (errors are logged); settles when the service has answered.
   */
  settle(tokens: number | null): Promise<void>;
  /** A mirrored copy's usage: charged whole to the Tokens descriptors (a copy reserves nothing). */
  charge(tokens: number): Promise<void>;
}

export interface GlobalLimiter {
  /** Whether any descriptor is a Tokens one (the pipeline must then count LLM usage). */
  readonly hasTokens: boolean;
  readonly service: string;
  /**
   * Before the upstream call: charges Requests descriptors 1 and Tokens descriptors
   * `reservation` (tokenReservation Estimate; 0 with None), and asks whether all pass.
   */
  check(facts: RequestFacts, reservation?: number): Promise<GlobalCheck>;
}

export interface GlobalLimiterDeps {
  readonly log: Logger;
  readonly clients: RlsClientPool;
  /** Seconds between two warn lines about an unavailable service; default 30. */
  readonly warnIntervalSeconds?: number;
  /** Clock in ms (tests). */
  readonly now?: () => number;
  /** Where the service's answers for keyed descriptors are kept for GET /budgets; none: not kept. */
  readonly answers?: GlobalAnswers;
  /** The scope of the policy (route or listener), for those answers. */
  readonly scope?: string;
  /** This replica's token credits (shared by every limiter of the process); none: no reservation is made. */
  readonly credits?: TokenCredits;
}

/** A keyed descriptor sent in one call and the key it was sent with: where its status goes. */
interface SentKey {
  readonly place: AnswerPlace;
  readonly key: string;
}

/** A Tokens descriptor as sent with the check: what its key holds of the request's charges. */
interface SentTokens {
  readonly descriptor: RlsDescriptor;
  /** Its key in the credits; null when no reservation is made for it. */
  readonly creditKey: string | null;
  /** The reservation it stands for (charged, plus credit taken): 0 without one. */
  readonly reserved: number;
  /** Credit taken from the key for this reservation, and the end of its window. */
  readonly credit: { readonly taken: number; readonly until: number };
  /** The policy's limit when the one sent is raised by the credit held (see check()); else null. */
  readonly policyLimit: number | null;
}

const MAX_UINT32 = 0xffff_ffff;
const noCharge = async (): Promise<void> => {};

const throttles = new WeakMap<RlsClient, WarnThrottle>();

function throttleFor(client: RlsClient, intervalMs: number, now: () => number): WarnThrottle {
  let t = throttles.get(client);
  if (!t) {
    t = new WarnThrottle(intervalMs, now);
    throttles.set(client, t);
  }
  return t;
}

/** Compiles once per config (CEL checked and planned once); throws GlobalRateLimitConfigError naming the descriptor. */
export function compileGlobalLimiter(ir: GlobalRateLimitIR, deps: GlobalLimiterDeps, limits: EvaluationLimits): GlobalLimiter {
  return new RlsGlobalLimiter(ir, compileDescriptors(ir.descriptors, limits), deps);
}

class RlsGlobalLimiter implements GlobalLimiter {
  readonly hasTokens: boolean;
  readonly service: string;
  readonly #client: RlsClient;
  readonly #now: () => number;
  readonly #throttle: WarnThrottle;

  constructor(
    private readonly ir: GlobalRateLimitIR,
    private readonly descriptors: CompiledDescriptors,
    private readonly deps: GlobalLimiterDeps,
  ) {
    this.service = ir.service;
    this.hasTokens = descriptors.list.some((d) => d.unit === 'Tokens');
    this.#client = deps.clients.get(ir.service);
    this.#now = deps.now ?? Date.now;
    this.#throttle = throttleFor(this.#client, (deps.warnIntervalSeconds ?? 30) * 1000, this.#now);
  }

  async check(facts: RequestFacts, reservation = 0): Promise<GlobalCheck> {
    const bound = celBindings(facts, this.descriptors);
    if (!bound.ok) {
      // Not evaluated at a size the cost estimate did not allow for; not let through either
      // (the client would escape the limit by padding what the descriptors read).
      this.deps.log.debug({ domain: this.ir.domain, input: bound.input, reason: bound.problem }, 'global rate limit: request input over its declared bound');
      return refusedCheck('inputRefused', 431, '', {}, null);
    }
    const credits = this.ir.tokenReservation === 'None' ? undefined : this.deps.credits;
    const reserve = credits && Number.isFinite(reservation) ? Math.min(Math.max(0, Math.floor(reservation)), MAX_UINT32) : 0;
    const requests: RlsDescriptor[] = [];
    const tokens: SentTokens[] = [];
    // Per Tokens descriptor (by index) sent without a reservation because its budget was spent.
    const spentKeys = new Map<number, string>();
    // What each sent descriptor is called, in the order sent (the service answers in that order).
    const requestsPolicies: string[] = [];
    const tokensPolicies: string[] = [];
    // Per descriptor sent, in the same order: the key it carries, if keyed.
    const requestKeys: (SentKey | null)[] = [];
    const tokenKeys: (SentKey | null)[] = [];
    for (const d of this.descriptors.list) {
      const ev = evaluateDescriptor(d, facts, bound.bindings);
      if (!ev.ok) {
        this.deps.log.debug({ descriptor: d.index, entry: ev.entry, reason: ev.reason }, 'global rate limit descriptor not sent: entry has no value');
        continue;
      }
      const limit = ev.limit ? { limit: ev.limit } : {};
      const sent = this.#sentKey(d.index, d.unit, d.key?.compiled, ev.entries[0]?.value);
      if (d.unit === 'Tokens') {
        const key = credits && reserve > 0 ? `${this.service}\u0000${this.ir.domain}\u0000${JSON.stringify(ev.entries)}` : null;
        // A budget the service last found spent is only checked (see TokenCredits.markSpent).
        const creditKey = key !== null && !credits!.spent(key) ? key : null;
        if (key !== null && creditKey === null) spentKeys.set(tokens.length, key);
        // The counter holds this replica's credit on top of what is used and reserved: a limit the
        // policy sends is raised by it for this replica's check, so credit never refuses anyone
        // (the counter less this replica's credit still counts every other replica's).
        const held = creditKey && ev.limit ? credits!.held(creditKey) : 0;
        const credit = creditKey ? credits!.take(creditKey, reserve) : NO_CREDIT;
        const sentLimit = held > 0 ? { limit: { ...ev.limit!, requests_per_unit: Math.min(MAX_UINT32, ev.limit!.requests_per_unit + held) } } : limit;
        const policyLimit = held > 0 ? ev.limit!.requests_per_unit : null;
        tokens.push({ descriptor: { entries: ev.entries, hits_addend: { value: 0 }, ...sentLimit }, creditKey, reserved: creditKey ? reserve : 0, credit, policyLimit });
        tokensPolicies.push(d.policy);
        tokenKeys.push(sent);
      } else {
        requests.push({ entries: ev.entries, ...limit });
        requestsPolicies.push(d.policy);
        requestKeys.push(sent);
      }
    }
    // No descriptor applies to this request: nothing to ask (Envoy does not call either).
    if (requests.length === 0 && tokens.length === 0) return allowedCheck('ok', {}, null, {}, noCharge, noCharge);

    // A reserving Tokens descriptor is sent twice, first with hits_addend 0, then with the
    // reservation (less credit). The service counts them in order on one counter: the first
    // answer says whether the budget was already spent (admitted at or below it, as a local
    // token budget admits), the second holds the reservation against every later request.
    const charges = tokens.flatMap((t, i) => (t.creditKey ? [{ at: i, descriptor: { ...t.descriptor, hits_addend: { value: t.reserved - t.credit.taken } } }] : []));
    const checkedAt = this.#now();
    let res: RlsResponse;
    try {
      const descriptors = [...requests, ...tokens.map((t) => t.descriptor), ...charges.map((c) => c.descriptor)];
      res = await this.#client.shouldRateLimit({ domain: this.ir.domain, descriptors, hits_addend: 1 }, this.ir.timeoutMs);
    } catch (err) {
      // Nothing was charged: the credit taken is still owed.
      for (const t of tokens) if (t.creditKey) credits!.give(t.creditKey, t.credit.taken, t.credit.until);
      return this.#serviceError(err, tokens, tokenKeys);
    }
    const decided = res.statuses.slice(0, requests.length + tokens.length);
    // Per Tokens descriptor, the answer that describes it best: after its reservation if any.
    const tokenStatuses = tokens.map((_, i) => res.statuses[requests.length + i]);
    charges.forEach((c, j) => (tokenStatuses[c.at] = res.statuses[requests.length + tokens.length + j] ?? tokenStatuses[c.at]));
    // Shown with the policy's limit, not the one raised by this replica's credit.
    tokens.forEach((t, i) => {
      const x = tokenStatuses[i];
      if (t.policyLimit !== null && x?.current_limit) tokenStatuses[i] = { ...x, current_limit: { ...x.current_limit, requests_per_unit: t.policyLimit } };
    });
    const shown = [...decided.slice(0, requests.length), ...tokenStatuses].filter((x): x is RlsDescriptorStatus => x !== undefined);
    this.#rememberStatuses([...requestKeys, ...tokenKeys], [...decided.slice(0, requests.length), ...tokenStatuses]);

    const headers = serviceHeaders(res.response_headers_to_add);
    const least = leastRemaining(shown);
    const policies = [...requestsPolicies, ...tokensPolicies];
    const limit = least ? limitStatus(least, this.#now() / 1000, policies[shown.indexOf(least)] ?? 'global') : null;
    if (limit) Object.assign(headers, rateLimitHeaders(limit));
    const requestHeaders = serviceHeaders(res.request_headers_to_add);

    tokens.forEach((t, i) => {
      const key = t.creditKey ?? spentKeys.get(i);
      const check = decided[requests.length + i];
      if (key === undefined || !check) return;
      if (check.code === 'OVER_LIMIT') credits!.markSpent(key, windowEnd(check, checkedAt));
      else credits!.markWithin(key);
    });
    // Over limit when a Requests descriptor or a Tokens check is (a reservation that does not
    // fit is no refusal: the budget was not spent when the request came).
    // A service that answered fewer statuses than descriptors sent is taken at its overall code.
    const complete = res.statuses.length >= requests.length + tokens.length + charges.length;
    const over = complete ? decided.some((x) => x.code === 'OVER_LIMIT') : res.overall_code === 'OVER_LIMIT';
    if (over) {
      // What the reservations added to the counters is owed back, where the answers show it was
      // counted (envoyproxy/ratelimit counts a refused request's hits unless configured not to).
      charges.forEach((c, j) => {
        const t = tokens[c.at]!;
        const before = res.statuses[requests.length + c.at];
        const after = res.statuses[requests.length + tokens.length + j];
        const hits = c.descriptor.hits_addend.value;
        const counted = before && after && hits > 0 && before.limit_remaining > 0 && after.limit_remaining <= before.limit_remaining - Math.min(hits, before.limit_remaining);
        credits!.give(t.creditKey!, t.credit.taken + (counted ? hits : 0), counted ? windowEnd(after, checkedAt) : t.credit.until);
      });
      headers[RATE_LIMITED_HEADER] = 'true';
      const body = res.raw_body.length > 0 ? res.raw_body.toString('utf8') : RATE_LIMITED_BODY;
      this.deps.log.debug({ domain: this.ir.domain, service: this.service }, 'global rate limit: over limit');
      return refusedCheck('overLimit', 429, body, headers, limit);
    }
    const windows = tokenStatuses.map((x) => windowEnd(x, checkedAt));
    return allowedCheck('ok', headers, limit, requestHeaders, this.#settler(tokens, tokenKeys, windows), this.#charger(tokens, tokenKeys));
  }

  /** Where the answer for a keyed descriptor is kept; null when unkeyed or answers are not kept. */
  #sentKey(index: number, unit: 'Requests' | 'Tokens', by: CompiledKey | undefined, key: string | undefined): SentKey | null {
    if (!this.deps.answers || by === undefined || key === undefined) return null;
    return { place: { scope: this.deps.scope ?? '', domain: this.ir.domain, service: this.service, index, unit, by: by.ir, reads: by.program?.reads ?? null }, key };
  }

  /** Keeps the service's statuses of the keyed descriptors (statuses come in the order sent). */
  #rememberStatuses(sent: readonly (SentKey | null)[], statuses: readonly (RlsDescriptorStatus | undefined)[]): void {
    const answers = this.deps.answers;
    if (!answers) return;
    for (let i = 0; i < sent.length; i++) {
      const s = sent[i];
      const status = statuses[i];
      if (s && status) answers.record(s.place, s.key, status);
    }
  }

  #serviceError(err: unknown, tokens: readonly SentTokens[], tokenKeys: readonly (SentKey | null)[]): GlobalCheck {
    const failOpen = this.ir.failureMode === 'FailOpen';
    const reason = err instanceof RlsCallError ? err.grpcCode : 'ERROR';
    const message = err instanceof Error ? err.message : String(err);
    const w = this.#throttle.take();
    const fields = { service: this.service, domain: this.ir.domain, code: reason, failureMode: this.ir.failureMode };
    if (w.log) {
      this.deps.log.warn(
        { ...fields, suppressed: w.suppressed },
        `rate limit service unavailable (${message}); ${failOpen ? 'failing open: requests pass unlimited' : 'failing closed: requests are refused'}`,
      );
    } else {
      this.deps.log.debug({ ...fields, err: message }, 'rate limit service unavailable');
    }
    // Let through unreserved: its whole usage is charged when it ends.
    const charge = this.#charger(tokens, tokenKeys);
    if (failOpen) return allowedCheck('failedOpen', {}, null, {}, (n) => (n === null ? Promise.resolve() : charge(n)), charge);
    return refusedCheck('serviceError', SERVICE_ERROR_STATUS, SERVICE_ERROR_BODY, {}, null);
  }

  /**
   * Settles an admitted request: each Tokens descriptor is charged the usage beyond what it
   * reserved; what it reserved beyond the usage becomes credit of its key in the window it was
   * counted in (`windows`, per Tokens descriptor in the order sent). Once only.
   */
  #settler(tokens: readonly SentTokens[], tokenKeys: readonly (SentKey | null)[], windows: readonly number[]): (n: number | null) => Promise<void> {
    if (tokens.length === 0) return noCharge;
    let settled = false;
    return (n: number | null) => {
      if (settled) return Promise.resolve();
      settled = true;
      const used = n === null ? 0 : clampTokens(n);
      const hits = tokens.map((t, i) => {
        const beyond = used - t.reserved;
        if (beyond < 0 && t.creditKey) this.deps.credits?.give(t.creditKey, -beyond, windows[i] ?? 0);
        return Math.max(0, beyond);
      });
      return this.#send(tokens, tokenKeys, hits);
    };
  }

  /** Charges `n` whole to every Tokens descriptor sent (a copy, or a request let through unreserved). */
  #charger(tokens: readonly SentTokens[], tokenKeys: readonly (SentKey | null)[]): (n: number) => Promise<void> {
    if (tokens.length === 0) return noCharge;
    return (n: number) => {
      const hits = clampTokens(n);
      return this.#send(
        tokens,
        tokenKeys,
        tokens.map(() => hits),
      );
    };
  }

  /** One call charging each Tokens descriptor its `hits` (those at 0 are left out); never rejects. */
  async #send(tokens: readonly SentTokens[], tokenKeys: readonly (SentKey | null)[], hits: readonly number[]): Promise<void> {
    const charged = tokens.flatMap((t, i) => (hits[i]! > 0 ? [{ descriptor: { ...policyDescriptor(t), hits_addend: { value: hits[i]! } }, key: tokenKeys[i] ?? null }] : []));
    if (charged.length === 0) return;
    // The same descriptors, limit override included: without it the service would find no limit
    // for a descriptor whose budget the policy sets, and charge nothing. The request-wide
    // hits_addend is for services that ignore the per-descriptor one.
    const total = Math.max(...charged.map((c) => c.descriptor.hits_addend.value));
    try {
      const res = await this.#client.shouldRateLimit({ domain: this.ir.domain, descriptors: charged.map((c) => c.descriptor), hits_addend: total }, this.ir.timeoutMs);
      this.#rememberStatuses(
        charged.map((c) => c.key),
        res.statuses,
      );
    } catch (err) {
      const w = this.#throttle.take();
      const fields = { service: this.service, domain: this.ir.domain, tokens: total, err: err instanceof Error ? err.message : String(err) };
      if (w.log) this.deps.log.warn({ ...fields, suppressed: w.suppressed }, 'rate limit service unavailable: LLM tokens not charged');
      else this.deps.log.debug(fields, 'rate limit service unavailable: LLM tokens not charged');
    }
  }
}

const NO_CREDIT = { taken: 0, until: 0 } as const;

/** The descriptor with the policy's own limit (the check's may be raised by credit). */
function policyDescriptor(t: SentTokens): RlsDescriptor {
  return t.policyLimit === null || !t.descriptor.limit ? t.descriptor : { ...t.descriptor, limit: { ...t.descriptor.limit, requests_per_unit: t.policyLimit } };
}

/**
 * The pipeline caps a response's charge (config.maxTokensChargedPerResponse, at most 2^32-1);
 * bounded here again so no value can leave the uint32 of the request-wide field.
 */
function clampTokens(n: number): number {
  return Number.isFinite(n) ? Math.min(Math.max(0, Math.floor(n)), MAX_UINT32) : 0;
}

/**
 * When the window a descriptor was counted in ends (ms): the service's windows are fixed, one
 * unit long and aligned to the Unix epoch; 0 when its answer names no limit (nothing to owe).
 */
function windowEnd(s: RlsDescriptorStatus | undefined, at: number): number {
  const seconds = s?.current_limit ? windowSeconds(s.current_limit.unit) : 0;
  if (seconds <= 0) return 0;
  return (Math.floor(at / 1000 / seconds) + 1) * seconds * 1000;
}

function refusedCheck(outcome: Exclude<GlobalOutcome, 'ok' | 'failedOpen'>, status: number, body: string, headers: Record<string, string>, limit: LimitStatus | null): GlobalCheck {
  return { allowed: false, outcome, status, body, headers, limit, requestHeaders: {}, settle: noCharge, charge: noCharge };
}

function allowedCheck(
  outcome: 'ok' | 'failedOpen',
  headers: Record<string, string>,
  limit: LimitStatus | null,
  requestHeaders: Record<string, string>,
  settle: (n: number | null) => Promise<void>,
  charge: (n: number) => Promise<void>,
): GlobalCheck {
  return { allowed: true, outcome, status: 200, body: '', headers, limit, requestHeaders, settle, charge };
}
