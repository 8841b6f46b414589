// Stage 4, route policies: the route's rate limits, then its filters: a RequestRedirect
// answers here, then a directResponse; RequestHeaderModifier and URLRewrite shape the upstream
// request (which RequestMirror then copies: pipeline/mirror.ts).
import { applyHeaderModifier } from '../filters/header-modifier.js';
import { rewritePath } from '../filters/path.js';
import { endToEnd } from '../upstream/headers.js';
import { admit } from './admit.js';
import { answerDirectResponse, answerRedirect, answerRefusal } from './answer.js';
import type { RequestContext } from './context.js';
import { publish } from './events.js';
import { readBodyOnce } from './llm-body.js';
import { applyProcessorEdits } from './ext-proc.js';

/**
 * Returns false when the request was answered here (refused or redirected). Synchronous for
 * a route without rate limits or token counting (most requests): nothing to await.
 */
export function applyRoutePolicies(ctx: RequestContext): boolean | Promise<boolean> {
  const route = ctx.route!;
  return route.countsTokens || route.policy || route.parts.mirrors || ctx.listener!.afterAuth ? admitRoute(ctx) : applyFilters(ctx);
}

async function admitRoute(ctx: RequestContext): Promise<boolean> {
  const route = ctx.route!;
  // Mirrors send the body from memory (pipeline/mirror.ts).
  if (route.countsTokens || route.parts.mirrors) await readBodyOnce(ctx);
  // The gateway-level limits that read the consumer, now that authentication has run; then the route's.
  // (The listener the route was selected on: its limits as compiled with the route's snapshot.)
  for (const policy of [ctx.listener!.afterAuth, route.policy]) {
    if (!policy) continue;
    let refusal = admit(ctx, policy);
    if (refusal instanceof Promise) refusal = await refusal;
    if (refusal) {
      ctx.deps.rateLimitLog.debug({ level: policy.level, route: route.ir.name }, `request refused by a ${policy.level}-level rate limit`);
      answerRefusal(ctx, refusal);
      return false;
    }
  }
  return applyFilters(ctx);
}

/** The route's filters: a redirect answers here; the others shape the upstream request. */
function applyFilters(ctx: RequestContext): boolean {
  const route = ctx.route!;
  if (route.parts.redirect) {
    answerRedirect(ctx, route.parts.redirect);
    return false;
  }
  if (route.direct !== null) {
    if (ctx.observed) publish.requestSnapshot(ctx, 'route policies');
    answerDirectResponse(ctx, route.direct);
    return false;
  }
  // The client's credentials go before the route's filters run, so that a filter may set the
  // backend's own (a provider key) and a client cannot pass a header a check set.
  const fx = ctx.authEffects;
  const headers = endToEnd(ctx.headers, fx?.removeHeaders);
  // Node has already answered the client's Expect: 100-continue; the upstream call streams
  // the body as it comes (undici refuses the header). Deleted only when present: a delete
  // turns the object into a slow dictionary for the rest of the request.
  if (headers.expect !== undefined) delete headers.expect;
  // A metered route reads usage from the response: ask for it uncompressed.
  if (route.countsTokens) headers['accept-encoding'] = 'identity';
  if (ctx.rawHost !== undefined && headers.host !== ctx.rawHost) headers.host = ctx.rawHost;
  if (ctx.admissions) Object.assign(headers, ctx.admissions.requestHeaders);
  if (fx) {
    Object.assign(headers, fx.setHeaders);
    if (fx.removeQuery.length) ctx.upstreamQuery = withoutParams(ctx.upstreamQuery, fx.removeQuery);
  }
  // The route's transformation, then its filters (which may still set a header of their own).
  const transformed = ctx.transform?.requestHeaders;
  if (transformed) applyHeaderModifier(headers, transformed);
  applyProcessorEdits(ctx, headers);
  for (const f of route.ir.filters) {
    if (f.type === 'RequestHeaderModifier') applyHeaderModifier(headers, f);
    else if (f.type === 'URLRewrite') {
      if (f.hostname) headers.host = f.hostname;
      if (f.path) ctx.upstreamPath = rewritePath(ctx.path, f.path, ctx.matched!);
    }
  }
  if (Buffer.isBuffer(ctx.llm?.body)) {
    headers['content-length'] = String(ctx.llm.body.length);
    delete headers['transfer-encoding'];
  }
  ctx.upstreamHeaders = headers;
  if (ctx.observed) publish.requestSnapshot(ctx, 'route policies');
  return true;
}

/** The query without the parameters named (a credential); the rest byte for byte. */
function withoutParams(query: string, names: readonly string[]): string {
  return query
    .split('&')
    .filter((pair) => {
      const eq = pair.indexOf('=');
      const raw = eq < 0 ? pair : pair.slice(0, eq);
      let name: string;
      try {
        name = decodeURIComponent(raw.replace(/\+/g, ' '));
      } catch {
        name = raw;
      }
      return !names.includes(name);
    })
    .join('&');
}
