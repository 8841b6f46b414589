// Stage 6, upstream call: the request goes to the chosen backend through its undici pool; the
// response streams back through the response policies. A transport failure before anything
// reached the client is answered with its catalog entry.
import { ERRORS } from '../errors.js';
import { callOutcome } from '../upstream/endpoints.js';
import { forward } from '../upstream/forward.js';
import { answerError } from './answer.js';
import type { RequestContext } from './context.js';
import { publish } from './events.js';
import { ResponsePolicies } from './response-policies.js';

export async function callUpstream(ctx: RequestContext): Promise<void> {
  const { deps } = ctx;
  const route = ctx.route!.ir;
  const backend = ctx.backend!;
  if (ctx.observed) publish.backendStart(ctx, backend.name);
  const response = new ResponsePolicies(ctx);
  const body = ctx.llm ? ctx.llm.body : ctx.hasBody ? ctx.req : null;
  const callStart = performance.now();
  // In flight on the endpoint until the exchange ends (forward never rejects). No request can
  // pick between chooseBackend and here: nothing is awaited in between.
  backend.endpoint.begin();
  const result = await forward(
    backend.endpoint.pool,
    {
      method: ctx.method,
      path: ctx.upstreamQuery ? `${ctx.upstreamPath}?${ctx.upstreamQuery}` : ctx.upstreamPath,
      headers: ctx.upstreamHeaders!,
      body,
      headersTimeoutMs: route.timeouts.backendRequestMs ?? deps.defaultBackendTimeoutMs,
      bodyTimeoutMs: deps.bodyIdleTimeoutMs,
      requestTimeoutMs: route.timeouts.requestMs,
      servername: backend.endpoint.servername,
    },
    ctx.res,
    response,
  );
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
    ctx.admissions?.settle(null);
    const spec = result.error.spec ?? ERRORS.upstreamReset;
    if (ctx.observed) publish.backendResult(ctx, spec.status, { kind: result.error.kind, message: result.error.message });
    answerError(ctx, spec);
    return;
  }
  ctx.status = result.status;
  // Awaited only while the tokenizer loads: awaiting nothing would still cost a microtask turn.
  const charging = response.chargeTokens();
  if (charging) await charging;
  // Not charged (not 2xx, or no token limit): reservations are released, requests stay counted.
  ctx.admissions?.settle(null);
  if (ctx.observed) publish.finish(ctx);
}
