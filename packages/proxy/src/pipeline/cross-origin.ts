// Stage 3a, cross-origin checks (after route selection, before authentication): the route's
// cors answers a preflight itself (before authentication, which a preflight never carries,
// and outside every rate limit: the gateway-level ones skip it, the route's come later) and
// decides the Access-Control-* headers of the answer to any other request; then its csrf
// refuses a state-changing request from a page of another origin.
import { ERRORS } from '../errors.js';
import { allowedOrigin, preflightHeaders, PREFLIGHT_VARY, type CompiledCors } from '../policies/cors.js';
import { checkCsrf, type CompiledCsrf } from '../policies/csrf.js';
import { selectRoute, type RouteHit } from '../routing/compile.js';
import { answerDirect, answerError, answerRefusalMessage } from './answer.js';
import type { RequestContext } from './context.js';
import { publish } from './events.js';

/** A CORS preflight (Fetch): OPTIONS with an Origin and the method the page wants to send. */
function isPreflight(ctx: RequestContext): boolean {
  return ctx.method === 'OPTIONS' && ctx.headers.origin !== undefined && ctx.headers['access-control-request-method'] !== undefined;
}

/** A method token, as Access-Control-Request-Method must be. */
const METHOD = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,32}$/;

/**
 * The route whose cors answers a preflight: the route that would serve the request the page
 * asks about (its method is Access-Control-Request-Method, its path and headers the
 * preflight's), when that route has cors. So a route that matches POST only still answers the
 * preflight of its POSTs. null: not a preflight, or that route has no cors (the preflight is
 * then routed as the OPTIONS request it is).
 */
export function preflightRoute(ctx: RequestContext, evaluated?: string[]): RouteHit | null {
  if (!isPreflight(ctx) || ctx.listener === null) return null;
  const method = ctx.headers['access-control-request-method'];
  if (typeof method !== 'string' || !METHOD.test(method)) return null;
  const hit = selectRoute(ctx.listener, ctx.host, { method, path: ctx.path, query: ctx.query, headers: ctx.headers }, evaluated);
  return hit !== null && hit.route.cors !== null ? hit : null;
}

/** Before route selection: the cors of the route the request will get. */
function routeCors(ctx: RequestContext): CompiledCors | null {
  if (ctx.listener === null) return null;
  return selectRoute(ctx.listener, ctx.host, ctx)?.route.cors ?? null;
}

/**
 * Whether the gateway will answer this request as a preflight (its route has cors): the
 * gateway-level rate limits, which run before route selection, let it through uncounted.
 */
export function answersPreflight(ctx: RequestContext): boolean {
  return preflightRoute(ctx) !== null || (isPreflight(ctx) && routeCors(ctx) !== null);
}

/** A gateway-level refusal (before routing) carries the cors of the request's route, so the page can read it. */
export function corsBeforeRouting(ctx: RequestContext): void {
  const origin = ctx.headers.origin;
  if (origin === undefined) return;
  const cors = routeCors(ctx);
  if (cors !== null) ctx.cors = { cors, allowOrigin: allowedOrigin(cors, origin) };
}

/** Returns false when the request was answered here (a preflight, or refused). Synchronous. */
export function checkCrossOrigin(ctx: RequestContext): boolean {
  const route = ctx.route!;
  const cors = route.cors;
  if (cors !== null) {
    // Route selection chose this route for the preflight's requested method (preflightRoute).
    if (isPreflight(ctx)) {
      answerPreflight(ctx, cors);
      return false;
    }
    ctx.cors = { cors, allowOrigin: allowedOrigin(cors, ctx.headers.origin) };
  }
  return route.csrf === null || passesCsrf(ctx, route.csrf);
}

function answerPreflight(ctx: RequestContext, cors: CompiledCors): void {
  const headers = preflightHeaders(cors, ctx.headers);
  ctx.deps.metrics.corsPreflights.count(ctx.route!.ir.name, headers ? 'allowed' : 'refused');
  if (ctx.observed) publish.requestSnapshot(ctx, 'route policies');
  if (headers) return answerDirect(ctx, 204, headers);
  ctx.deps.authLog.debug({ route: ctx.routeName, origin: clip(ctx.headers.origin), source: cors.source }, 'CORS preflight refused: origin not allowed');
  answerError(ctx, ERRORS.corsOriginRefused, { vary: PREFLIGHT_VARY }, `${JSON.stringify(clip(ctx.headers.origin))} is not in allowOrigins`);
}

function passesCsrf(ctx: RequestContext, csrf: CompiledCsrf): boolean {
  const h = ctx.headers;
  const refusal = checkCsrf(csrf, { method: ctx.method, origin: h.origin, referer: h.referer, scheme: ctx.scheme, authority: ctx.authority });
  if (refusal === null) return true;
  ctx.deps.metrics.csrfRefusals.count(ctx.route!.ir.name, refusal.reason);
  ctx.deps.authLog.debug({ route: ctx.routeName, reason: refusal.reason }, 'request refused by the csrf policy');
  if (ctx.observed) publish.requestSnapshot(ctx, 'route policies');
  answerRefusalMessage(ctx, ERRORS.csrfRefused, ERRORS.csrfRefused.status, refusal.detail);
  return false;
}

/** A client's header value for a log line or a message: at most 128 characters. */
function clip(value: string | string[] | undefined): string {
  const v = Array.isArray(value) ? value.join(', ') : (value ?? '');
  return v.length > 128 ? `${v.slice(0, 128)}...` : v;
}
