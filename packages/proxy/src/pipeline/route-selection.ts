// Stage 3, route selection: Gateway API precedence within the listener (routing/compile.ts).
import { ERRORS } from '../errors.js';
import { routesServing, selectRoute } from '../routing/compile.js';
import { answerError } from './answer.js';
import type { RequestContext } from './context.js';
import { preflightRoute } from './cross-origin.js';
import { publish } from './events.js';

/**
 * Returns false when no route matches (answered 404). A CORS preflight gets the route of the
 * request it asks about when that route has cors (cross-origin.ts), else its own.
 */
export function selectRouteStage(ctx: RequestContext): boolean {
  if (ctx.observed) ctx.evaluated = [];
  const hit = ctx.listener ? (preflightRoute(ctx, ctx.evaluated ?? undefined) ?? selectRoute(ctx.listener, ctx.host, ctx, ctx.evaluated ?? undefined)) : null;
  ctx.route = hit?.route ?? null;
  ctx.matched = hit?.matched ?? null;
  if (ctx.observed) {
    // Nothing matched: every route serving this host was considered and refused.
    if (!hit && ctx.listener) ctx.evaluated = routesServing(ctx.listener, ctx.host);
    publish.route(ctx);
  }
  if (!hit) {
    ctx.admissions?.refund();
    answerError(ctx, ERRORS.noRoute);
    return false;
  }
  ctx.entry.route = hit.route.ir.name;
  if (ctx.observed) publish.policy(ctx);
  return true;
}
