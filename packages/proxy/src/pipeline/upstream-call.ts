// Stage 6, upstream call: the request goes to the chosen backend through its undici pool; the
// response streams back through the response policies. A transport failure before anything
// reached the client is answered with its catalog entry.
import { ERRORS } from '../errors.js';
import { callOutcome } from '../upstream/endpoints.js';
import { forward, type ForwardResult } from '../upstream/forward.js';
import { anotherEndpoint } from '../routing/backend-picker.js';
import { answerError } from './answer.js';
import type { RequestContext } from './context.js';
import { publish } from './events.js';
import { ResponsePolicies } from './response-policies.js';

/** config.connectAttempts when unset: the endpoint picked and up to two others. */
export const DEFAULT_CONNECT_ATTEMPTS = 3;

export async function callUpstream(ctx: RequestContext): Promise<void> {
  const { deps } = ctx;
  const route = ctx.route!.ir;
  const response = new ResponsePolicies(ctx, ctx.translator);
  const body = ctx.llm ? ctx.llm.body : ctx.hasBody ? ctx.req : null;
  const path = ctx.upstreamQuery ? `${ctx.upstreamPath}?${ctx.upstreamQuery}` : ctx.upstreamPath;
  const headersTimeoutMs = route.timeouts.backendRequestMs ?? deps.defaultBackendTimeoutMs;
  const firstStart = performance.now();
  // An attempt that failed before any byte was written goes to another endpoint of the same
  // backend (a pod going away refuses connections): nothing reached it, so whatever the method
  // this cannot run the request twice, and a streamed body was not read yet. Bounded by
  // config.connectAttempts and by the endpoints the backend has; the route's request timeout
  // covers every attempt.
  const tried = [ctx.backend!];
  let backend = ctx.backend!;
  let result: ForwardResult;
  let callStart: number;
  for (;;) {
    if (ctx.observed) publish.backendStart(ctx, backend.name);
    callStart = performance.now();
    const requestTimeoutMs = route.timeouts.requestMs === null ? null : Math.max(1, route.timeouts.requestMs - (callStart - firstStart));
    // In flight on the endpoint until the exchange ends (forward never rejects). No request can
    // pick between chooseBackend and here: nothing is awaited in between.
    backend.endpoint.begin();
    result = await forward(backend.endpoint.pool, { method: ctx.method, path, headers: ctx.upstreamHeaders!, body, headersTimeoutMs, bodyTimeoutMs: deps.bodyIdleTimeoutMs, requestTimeoutMs, servername: backend.endpoint.servername, upgrade: ctx.upgrade ? 'websocket' : undefined }, ctx.res, response);
    const gone = ctx.req.destroyed && !ctx.req.complete;
    if (!result.unsent || gone || tried.length >= deps.connectAttempts) break;
    // The failed endpoint learns of it first (a refused connect ejects it), then another is picked.
    backend.endpoint.end(callOutcome(result.error!.kind, result.status, false), 0);
    const next = route.timeouts.requestMs !== null && performance.now() - firstStart >= route.timeouts.requestMs ? null : anotherEndpoint(tried);
    if (!next) return answerFailure(ctx, result);
    deps.metrics.countUnsentRetry(route.name, result.error!.kind);
    if (ctx.observed) publish.backendResult(ctx, result.status, { kind: result.error!.kind, message: result.error!.message });
    tried.push(next);
    ctx.backend = backend = next;
    ctx.entry.upstream = next.name;
  }
  const latencyMs = (response.headersAt || performance.now()) - callStart;
  // A client that went away (also while still sending its body) says nothing of the backend.
  const clientGone = result.error?.kind === 'TG_CLIENT_GONE' || (ctx.req.destroyed && !ctx.req.complete);
  // The balancer learns from how the call went.
  backend.endpoint.end(callOutcome(result.error?.kind ?? null, result.status, clientGone), latencyMs);
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

/** The upstream call failed before anything reached the client: answered with its catalog entry. */
function answerFailure(ctx: RequestContext, result: ForwardResult): void {
  ctx.error = result.error!.kind;
  ctx.admissions?.settle(null);
  const spec = result.error!.spec ?? ERRORS.upstreamReset;
  if (ctx.observed) publish.backendResult(ctx, spec.status, { kind: result.error!.kind, message: result.error!.message });
  answerError(ctx, spec);
}
