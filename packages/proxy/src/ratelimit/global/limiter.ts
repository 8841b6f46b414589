// The global limiter: asks an Envoy RLS v3 service (envoyproxy/ratelimit or compatible)
// whether a request may pass, and after the response charges its LLM tokens.
//
// One ShouldRateLimit call before the upstream call carries every descriptor that has a
// value for the request: Requests descriptors are charged 1 (the request's hits_addend), Tokens
// descriptors carry their own hits_addend of 0, which envoyproxy/ratelimit reads as "check
// without charging" (utils.GetHitsAddends: a per-descriptor hits_addend is taken as is, 0
// included, while the request-level hits_addend 0 counts as 1 for backward compatibility).
// A Tokens descriptor is then over limit only once the tokens already charged exceed its limit
// (the service compares current + 0 > limit), matching the local token budget: the request
// that crosses the budget succeeds, later ones are refused until the window resets.
// After the response one more call charges the Tokens descriptors with hits_addend = tokens,
// both per descriptor and request-wide. A service predating the per-descriptor field (Envoy
// API before hits_addend on RateLimitDescriptor) ignores it and charges each Tokens descriptor
// 1 on the check: an overcount of one token per request, the only approximation.
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
} from './headers.js';
import type { RlsDescriptor, RlsResponse } from './proto.js';
import { rateLimitHeaders, type LimitStatus } from '../headers.js';
import { WarnThrottle } from '../warn-throttle.js';
import type { AnswerPlace, GlobalAnswers } from './answers.js';

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
   * After the response: charges the Tokens descriptors with hits_addend = tokens (no-op when
   * none was sent, when the request was refused, or when tokens is 0). Never rejects; errors
   * are logged. The promise settles when the service has answered; callers may ignore it.
   */
  commitTokens(tokens: number): Promise<void>;
}

export interface GlobalLimiter {
  /** Whether any descriptor is a Tokens one (the pipeline must then count LLM usage). */
  readonly hasTokens: boolean;
  readonly service: string;
  /** Before the upstream call: charges Requests descriptors (hits_addend 1) and checks Tokens descriptors. */
  check(facts: RequestFacts): Promise<GlobalCheck>;
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
}

/** A keyed descriptor sent in one call and the key it was sent with: where its status goes. */
interface SentKey {
  readonly place: AnswerPlace;
  readonly key: string;
}

const MAX_UINT32 = 0xffff_ffff;
const noCommit = async (): Promise<void> => {};

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

  async check(facts: RequestFacts): Promise<GlobalCheck> {
    const bound = celBindings(facts, this.descriptors);
    if (!bound.ok) {
      // Not evaluated at a size the cost estimate did not allow for; not let through either
      // (the client would escape the limit by padding what the descriptors read).
      this.deps.log.debug({ domain: this.ir.domain, input: bound.input, reason: bound.problem }, 'global rate limit: request input over its declared bound');
      return { allowed: false, outcome: 'inputRefused', status: 431, body: '', headers: {}, limit: null, requestHeaders: {}, commitTokens: noCommit };
    }
    const requests: RlsDescriptor[] = [];
    const tokens: RlsDescriptor[] = [];
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
        tokens.push({ entries: ev.entries, hits_addend: { value: 0 }, ...limit });
        tokensPolicies.push(d.policy);
        tokenKeys.push(sent);
      } else {
        requests.push({ entries: ev.entries, ...limit });
        requestsPolicies.push(d.policy);
        requestKeys.push(sent);
      }
    }
    // No descriptor applies to this request: nothing to ask (Envoy does not call either).
    if (requests.length === 0 && tokens.length === 0) return allowedCheck('ok', {}, null, {}, noCommit);

    let res: RlsResponse;
    try {
      res = await this.#client.shouldRateLimit({ domain: this.ir.domain, descriptors: [...requests, ...tokens], hits_addend: 1 }, this.ir.timeoutMs);
    } catch (err) {
      return this.#serviceError(err, tokens, tokenKeys);
    }
    this.#remember([...requestKeys, ...tokenKeys], res);

    const headers = serviceHeaders(res.response_headers_to_add);
    const least = leastRemaining(res.statuses);
    const policies = [...requestsPolicies, ...tokensPolicies];
    const limit = least ? limitStatus(least, this.#now() / 1000, policies[res.statuses.indexOf(least)] ?? 'global') : null;
    if (limit) Object.assign(headers, rateLimitHeaders(limit));
    const requestHeaders = serviceHeaders(res.request_headers_to_add);

    if (res.overall_code === 'OVER_LIMIT') {
      headers[RATE_LIMITED_HEADER] = 'true';
      const body = res.raw_body.length > 0 ? res.raw_body.toString('utf8') : RATE_LIMITED_BODY;
      this.deps.log.debug({ domain: this.ir.domain, service: this.service }, 'global rate limit: over limit');
      return { allowed: false, outcome: 'overLimit', status: 429, body, headers, limit, requestHeaders: {}, commitTokens: noCommit };
    }
    return allowedCheck('ok', headers, limit, requestHeaders, this.#committer(tokens, tokenKeys));
  }

  /** Where the answer for a keyed descriptor is kept; null when unkeyed or answers are not kept. */
  #sentKey(index: number, unit: 'Requests' | 'Tokens', by: CompiledKey | undefined, key: string | undefined): SentKey | null {
    if (!this.deps.answers || by === undefined || key === undefined) return null;
    return { place: { scope: this.deps.scope ?? '', domain: this.ir.domain, service: this.service, index, unit, by: by.ir, reads: by.program?.reads ?? null }, key };
  }

  /** Keeps the service's statuses of the keyed descriptors (statuses come in the order sent). */
  #remember(sent: readonly (SentKey | null)[], res: RlsResponse): void {
    const answers = this.deps.answers;
    if (!answers) return;
    for (let i = 0; i < sent.length; i++) {
      const s = sent[i];
      const status = res.statuses[i];
      if (s && status) answers.record(s.place, s.key, status);
    }
  }

  #serviceError(err: unknown, tokens: readonly RlsDescriptor[], tokenKeys: readonly (SentKey | null)[]): GlobalCheck {
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
    if (failOpen) return allowedCheck('failedOpen', {}, null, {}, this.#committer(tokens, tokenKeys));
    return {
      allowed: false,
      outcome: 'serviceError',
      status: SERVICE_ERROR_STATUS,
      body: SERVICE_ERROR_BODY,
      headers: {},
      limit: null,
      requestHeaders: {},
      commitTokens: noCommit,
    };
  }

  #committer(tokens: readonly RlsDescriptor[], tokenKeys: readonly (SentKey | null)[]): (n: number) => Promise<void> {
    if (tokens.length === 0) return noCommit;
    return async (n: number) => {
      // The pipeline caps a response's charge (config.maxTokensChargedPerResponse, at most
      // 2^32-1); bounded here again so no value can leave the uint32 of the request-wide field.
      const hits = Number.isFinite(n) ? Math.min(Math.floor(n), MAX_UINT32) : 0;
      if (hits <= 0) return;
      // The same descriptors, limit override included: without it the service would find no
      // limit for a descriptor whose budget the policy sets, and charge nothing.
      const descriptors = tokens.map((d) => ({ ...d, hits_addend: { value: hits } }));
      try {
        const res = await this.#client.shouldRateLimit({ domain: this.ir.domain, descriptors, hits_addend: hits }, this.ir.timeoutMs);
        this.#remember(tokenKeys, res);
      } catch (err) {
        const w = this.#throttle.take();
        const fields = { service: this.service, domain: this.ir.domain, tokens: hits, err: err instanceof Error ? err.message : String(err) };
        if (w.log) this.deps.log.warn({ ...fields, suppressed: w.suppressed }, 'rate limit service unavailable: LLM tokens not charged');
        else this.deps.log.debug(fields, 'rate limit service unavailable: LLM tokens not charged');
      }
    };
  }
}

function allowedCheck(
  outcome: 'ok' | 'failedOpen',
  headers: Record<string, string>,
  limit: LimitStatus | null,
  requestHeaders: Record<string, string>,
  commitTokens: (n: number) => Promise<void>,
): GlobalCheck {
  return { allowed: true, outcome, status: 200, body: '', headers, limit, requestHeaders, commitTokens };
}
