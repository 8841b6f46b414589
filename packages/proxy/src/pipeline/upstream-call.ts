// Stage 6, upstream call: the request goes to the chosen backend through its undici pool; the
// response streams back through the response policies. A transport failure before anything
// reached the client is answered with its catalog entry.
//
// The attempt loop: a connection that failed before any byte was written goes to another
// endpoint of the same backend (config.connectAttempts); on a route that fails over or retries,
// an answer or a failure before anything of an answer was passed on may go to another backend
// or again to the same (attempt-plan.ts decides where). Each attempt shows in a trace as one
// backendCallStart / backendCallResult pair, and in tollgate_upstream_attempts_total.
import { ERRORS } from '../errors.js';
import { attemptOutcome } from '../metrics/metrics.js';
import { callOutcome } from '../upstream/endpoints.js';
import { forward, type ForwardResult } from '../upstream/forward.js';
import { anotherEndpoint, type UpstreamTarget } from '../routing/backend-picker.js';
import { answerError } from './answer.js';
import type { AttemptPlan, NextAttempt } from './attempt-plan.js';
import { reshapeFor } from './backend-choice.js';
import type { RequestContext } from './context.js';
import { publish } from './events.js';
import { requestLimitMs } from './grpc-deadline.js';
import { ResponsePolicies } from './response-policies.js';

/** config.connectAttempts when unset: the endpoint picked and up to two others. */
export const DEFAULT_CONNECT_ATTEMPTS = 3;

export async function callUpstream(ctx: RequestContext): Promise<void> {
  const plan = ctx.attempts;
  if (!plan) return exchange(ctx, null);
  try {
    await exchange(ctx, plan);
  } finally {
    plan.done();
  }
}

/** Waits `ms` before a retry; false when the client left meanwhile. */
function backoff(ctx: RequestContext, ms: number): Promise<boolean> {
  const res = ctx.res;
  if (res.destroyed) return Promise.resolve(false);
  return new Promise((resolve) => {
    const onClose = () => {
      clearTimeout(timer);
      resolve(false);
    };
    const timer = setTimeout(() => {
      res.off('close', onClose);
      resolve(true);
    }, ms);
    res.once('close', onClose);
  });
}

async function exchange(ctx: RequestContext, plan: AttemptPlan | null): Promise<void> {
  const { deps } = ctx;
  const route = ctx.route!.ir;
  const headersTimeoutMs = route.timeouts.backendRequestMs ?? deps.defaultBackendTimeoutMs;
  const firstStart = plan?.startedAt ?? performance.now();
  const limitMs = requestLimitMs(ctx.headers, route.timeouts.requestMs);
  // An attempt that failed before any byte was written goes to another endpoint of the same
  // backend (a pod going away refuses connections): nothing reached it, so whatever the method
  // this cannot run the request twice, and a streamed body was not read yet. Bounded by
  // config.connectAttempts and by the endpoints the backend has; the route's request timeout
  // covers every attempt.
  let tried: UpstreamTarget[] = [ctx.backend!];
  let backend = ctx.backend!;
  let response: ResponsePolicies;
  let result: ForwardResult;
  let callStart: number;
  for (;;) {
    // One set of response policies per attempt: only the answer passed on meets them (and is charged).
    response = new ResponsePolicies(ctx, ctx.translator);
    if (plan) response.judge = (status, headers) => plan.judge(status, headers);
    const body = ctx.llm ? ctx.llm.body : ctx.hasBody ? (ctx.processedBody ?? ctx.req) : null;
    const path = ctx.upstreamQuery ? `${ctx.upstreamPath}?${ctx.upstreamQuery}` : ctx.upstreamPath;
    if (ctx.observed) publish.backendStart(ctx, backend.name);
    callStart = performance.now();
    const requestTimeoutMs = limitMs === null ? null : Math.max(1, limitMs - (callStart - firstStart));
    // In flight on the endpoint until the exchange ends (forward never rejects). No request can
    // pick between the choice and here: nothing is awaited in between.
    backend.endpoint.begin();
    result = await forward(backend.endpoint.pool, { method: ctx.method, path, headers: ctx.upstreamHeaders!, body, headersTimeoutMs, bodyTimeoutMs: deps.bodyIdleTimeoutMs, requestTimeoutMs, servername: backend.endpoint.servername, upgrade: ctx.upgrade ? 'websocket' : undefined }, ctx.res, response);
    const gone = (ctx.req.destroyed && !ctx.req.complete) || result.error?.kind === 'TG_CLIENT_GONE';
    if (gone) break;
    let next: NextAttempt | null = null;
    if (result.unsent && tried.length < deps.connectAttempts) {
      // The failed endpoint learns of it first (a refused connect ejects it), then another is picked.
      const sibling = limitMs !== null && performance.now() - firstStart >= limitMs ? null : anotherEndpoint(tried);
      if (sibling) {
        endAttempt(ctx, backend, result, 0);
        deps.metrics.countUnsentRetry(route.name, result.error!.kind);
        tried.push(sibling);
        ctx.backend = backend = sibling;
        ctx.entry.upstream = sibling.name;
        continue;
      }
    }
    if (result.discarded) next = plan!.pending;
    // Once the response policies saw an answer (even one held whole for a translation), it is the one.
    else if (plan && result.error && !result.responded && response.headersAt === 0) next = plan.next({ kind: 'error', code: result.error.kind, unsent: result.unsent });
    if (!next) break;
    endAttempt(ctx, backend, result, performance.now() - callStart);
    if (next.waitMs > 0 && !(await backoff(ctx, next.waitMs))) return abandon(ctx);
    if (!reshapeFor(ctx, next.target)) return;
    tried = [next.target];
    backend = next.target;
  }
  const latencyMs = (response.headersAt || performance.now()) - callStart;
  // A client that went away (also while still sending its body) says nothing of the backend.
  const clientGone = result.error?.kind === 'TG_CLIENT_GONE' || (ctx.req.destroyed && !ctx.req.complete);
  // The balancer learns from how the call went.
  backend.endpoint.end(callOutcome(result.error?.kind ?? null, result.status, clientGone), latencyMs);
  deps.metrics.countAttempt(route.name, backend.backend.name, clientGone ? 'TG_CLIENT_GONE' : attemptOutcome(result.upstreamStatus ?? result.status, result.error?.kind ?? null));
  if (response.headersAt) deps.metrics.observeUpstreamLatency(route.name, latencyMs / 1000);
  ctx.error = clientGone ? 'TG_CLIENT_GONE' : (result.error?.kind ?? null);
  if (clientGone) {
    ctx.status = result.upstreamStatus ?? 499;
    ctx.res.destroy();
    // What the backend produced before the client left is still charged.
    const charging = response.chargeTokens();
    if (charging) await charging;
    ctx.admissions?.settle(null);
    if (ctx.observed) publish.finish(ctx);
    return;
  }
  if (result.error && !result.responded) {
    // A held answer (a translated body) that failed mid-body: what the backend produced is charged.
    const charging = response.chargeTokens();
    if (charging) await charging;
    return answerFailure(ctx, result);
  }
  ctx.status = result.status;
  // Awaited only while the tokenizer loads: awaiting nothing would still cost a microtask turn.
  const charging = response.chargeTokens();
  if (charging) await charging;
  // Not charged (not 2xx, or no token limit): reservations are released, requests stay counted.
  ctx.admissions?.settle(null);
  if (ctx.observed) publish.finish(ctx);
}

/**
 * An attempt that another follows is over: its endpoint learns how it went, it is counted, and
 * the trace gets its backendCallResult (a failure's carries its error).
 */
function endAttempt(ctx: RequestContext, backend: UpstreamTarget, result: ForwardResult, latencyMs: number): void {
  const error = result.error;
  backend.endpoint.end(callOutcome(error?.kind ?? null, result.status, false), latencyMs);
  ctx.deps.metrics.countAttempt(ctx.route!.ir.name, backend.backend.name, attemptOutcome(result.upstreamStatus ?? result.status, error?.kind ?? null));
  if (ctx.observed) publish.backendResult(ctx, result.status, error ? { kind: error.kind, message: error.message } : null);
}

/** The client left while a retry waited: nothing more is sent or answered. */
function abandon(ctx: RequestContext): void {
  ctx.status = 499;
  ctx.error = 'TG_CLIENT_GONE';
  ctx.res.destroy();
  ctx.admissions?.settle(null);
  if (ctx.observed) publish.finish(ctx);
}

/** The upstream call failed before anything reached the client: answered with its catalog entry. */
function answerFailure(ctx: RequestContext, result: ForwardResult): void {
  ctx.error = result.error!.kind;
  ctx.admissions?.settle(null);
  const spec = result.error!.spec ?? ERRORS.upstreamReset;
  if (ctx.observed) publish.backendResult(ctx, spec.status, { kind: result.error!.kind, message: result.error!.message });
  answerError(ctx, spec);
}
