// Stage 5, backend choice: one of the route's backends by weight (on a route that fails over,
// of its first priority level with a backend not cooling down: routing/priority-levels.ts) and,
// for a Service, one of its endpoints by least request (routing/backend-picker.ts); the request gains its
// x-forwarded-* headers on the way out, the chosen backendRef's own filters, and its API
// format when it is not the client's (translate.ts).
import { ERRORS } from '../errors.js';
import { applyHeaderModifier } from '../filters/header-modifier.js';
import type { BackendFilterIR } from '@tollgate/api';
import { rewritePath } from '../filters/path.js';
import { backendFilters, INVALID_BACKEND, type BackendPicker, type UpstreamTarget } from '../routing/backend-picker.js';
import { addForwarded } from '../upstream/headers.js';
import { providerRequest } from '../upstream/provider.js';
import { answerError, answerRedirect } from './answer.js';
import type { RequestContext } from './context.js';
import { publish } from './events.js';
import { translateRequest } from './translate.js';
import { AttemptPlan, type PlanInputs } from './attempt-plan.js';

/**
 * Returns false when the request has no backend to go to: answered 500 when its backend is
 * invalid or the route has none (as the Gateway API asks), 503 when it has no ready endpoint.
 * On a route that fails over, a backend that cannot be called hands the request to the next
 * priority first (attempt-plan.ts).
 */
export function chooseBackend(ctx: RequestContext): boolean {
  addForwarded(ctx.upstreamHeaders!, ctx.req.socket.remoteAddress, ctx.scheme, ctx.rawHost);
  const resilience = ctx.route!.parts.resilience;
  let backend: ReturnType<BackendPicker>;
  if (resilience) {
    const first = resilience.levels.first();
    const usable = AttemptPlan.usable(resilience.levels, first);
    backend = usable ? usable.target : first.target;
    if (usable) ctx.attempts = new AttemptPlan(resilience, usable.choice, planInputs(ctx));
  } else backend = ctx.route!.parts.pickBackend();
  if (backend === null || backend === INVALID_BACKEND) {
    ctx.admissions?.refund();
    answerError(ctx, backend === INVALID_BACKEND ? ERRORS.invalidBackend : ERRORS.noBackend);
    return false;
  }
  if (!shapeFor(ctx, backend)) {
    ctx.attempts?.done();
    return false;
  }
  ctx.entry.stage = 'upstream';
  if (ctx.observed) publish.requestSnapshot(ctx, 'final request');
  return true;
}

/** What a request's attempt plan reads of it: taken before the request is shaped for its first backend. */
function planInputs(ctx: RequestContext): PlanInputs {
  const { deps, llm } = ctx;
  return {
    route: ctx.route!.ir.name,
    requestTimeoutMs: ctx.route!.ir.timeouts.requestMs,
    replayable: !ctx.hasBody || (llm !== null && Buffer.isBuffer(llm.body) && llm.body.length <= deps.maxRetryBodyBytes),
    unshaped: { headers: { ...ctx.upstreamHeaders }, path: ctx.upstreamPath, query: ctx.upstreamQuery, llm },
    coolDowns: deps.coolDowns,
    budget: deps.retryBudget,
    metrics: deps.metrics,
  };
}

/**
 * Shapes the upstream request for `backend` (ctx.backend from then on): its backendRef's
 * filters, its API format, its provider's key and path. False when that answered the request
 * (a redirect, a body the format cannot carry).
 */
export function shapeFor(ctx: RequestContext, backend: UpstreamTarget): boolean {
  ctx.backend = backend;
  ctx.entry.upstream = backend.name;
  const filters = backendFilters(backend.backend);
  if (filters && !applyBackendFilters(ctx, filters)) return false;
  // A backend of another API gets the request in its format (the trace's final request shows it).
  const translator = translateRequest(ctx);
  if (translator === false) return false;
  ctx.translator = translator;
  // After every filter and the translation (its path is the client API root's): the provider's
  // key, host, base path and api-version are the last word.
  const b = backend.backend;
  if ((b.kind === 'static' || b.kind === 'external') && b.provider) {
    const p = providerRequest(b.provider);
    p.headers(ctx.upstreamHeaders!, backend);
    ctx.upstreamPath = p.path(ctx.upstreamPath);
    ctx.upstreamQuery = p.query(ctx.upstreamQuery);
  }
  return true;
}

/**
 * Shapes the request again for another backend of the route (a failover, or a retry that went
 * to another backend of its level): from what it was before the first backend's filters,
 * format and provider. False when that answered the request.
 */
export function reshapeFor(ctx: RequestContext, backend: UpstreamTarget): boolean {
  const plan = ctx.attempts!;
  if (backend.backend === ctx.backend!.backend) {
    ctx.backend = backend;
    ctx.entry.upstream = backend.name;
    return true;
  }
  const u = plan.unshaped;
  ctx.upstreamHeaders = { ...u.headers };
  ctx.upstreamPath = u.path;
  ctx.upstreamQuery = u.query;
  ctx.llm = u.llm;
  return shapeFor(ctx, backend);
}

/**
 * The backendRef's own filters, for the requests sent to it only, after the route's: header
 * changes and a rewrite shape the upstream request (a rewrite here replaces the route's); a
 * redirect answers instead (returns false). Its ResponseHeaderModifier runs on the response
 * (response-policies.ts).
 */
function applyBackendFilters(ctx: RequestContext, filters: readonly BackendFilterIR[]): boolean {
  const headers = ctx.upstreamHeaders!;
  for (const f of filters) {
    if (f.type === 'RequestHeaderModifier') applyHeaderModifier(headers, f);
    else if (f.type === 'URLRewrite') {
      if (f.hostname) headers.host = f.hostname;
      if (f.path) ctx.upstreamPath = rewritePath(ctx.path, f.path, ctx.matched!);
    } else if (f.type === 'RequestRedirect') {
      answerRedirect(ctx, f);
      return false;
    }
  }
  return true;
}
