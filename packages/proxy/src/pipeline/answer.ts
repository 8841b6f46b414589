// Answers the gateway gives itself instead of the backend's: catalog errors, rate-limit
// refusals, redirects and direct responses. Each ends the request: the final response is
// published and the request finished. On a route with cors, each carries the route's
// Access-Control-* headers as a backend's answer would (a page can read why it was refused).
import type { FilterIR } from '@tollgate/api';
import type { ErrorSpec } from '../errors.js';
import { applyHeaderModifier } from '../filters/header-modifier.js';
import { redirectLocation } from '../filters/redirect.js';
import { decorateAnswer } from '../policies/cors.js';
import type { CompiledDirectResponse } from '../policies/direct-response.js';
import type { Refusal } from '../ratelimit/policy.js';
import type { AuthDenial } from '../auth/types.js';
import { sendError } from '../upstream/forward.js';
import { isGrpcRequest, sendGrpcError } from '../upstream/grpc.js';
import type { RequestContext } from './context.js';
import { publish, type HeaderValues } from './events.js';
import { openAiErrorBody, wantsJsonError } from './openai-error.js';

type RedirectFilterIR = Extract<FilterIR, { type: 'RequestRedirect' }>;

function done(ctx: RequestContext, status: number, headers: HeaderValues): void {
  ctx.status = status;
  if (ctx.observed) {
    publish.responseSnapshot(ctx, 'final response', status, headers);
    publish.finish(ctx);
  }
}

/** The route's cors on an answer the gateway makes (none without cors). */
function withCors<H extends HeaderValues>(ctx: RequestContext, headers: H): H {
  if (ctx.cors !== null) decorateAnswer(ctx.cors.cors, ctx.cors.allowOrigin, headers);
  return headers;
}

/** Answers with a catalog entry; `detail` (what exactly was wrong) follows its body. */
export function answerError(ctx: RequestContext, spec: ErrorSpec, extraHeaders?: Record<string, string>, detail?: string): void {
  const extra = ctx.cors === null ? extraHeaders : withCors(ctx, { 'x-tollgate-error': spec.code, ...extraHeaders });
  // A gRPC call's answer is a 200 carrying the gRPC status (upstream/grpc.ts).
  done(ctx, isGrpcRequest(ctx.headers) ? 200 : spec.status, sendError(ctx.res, spec, extra, detail));
}

/**
 * Answers with a catalog entry in OpenAI's error shape, `param` naming the field at fault: for
 * requests of OpenAI clients the gateway refuses on their body (a field it cannot translate).
 */
export function answerOpenAiError(ctx: RequestContext, spec: ErrorSpec, message: string, param: string): void {
  const text = JSON.stringify({ error: { message: `${spec.body}: ${message}`, type: 'invalid_request_error', param, code: spec.code } });
  const headers = withCors(ctx, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(text)), 'x-tollgate-error': spec.code });
  if (!ctx.res.headersSent && !ctx.res.destroyed) {
    ctx.res.writeHead(spec.status, headers);
    ctx.res.end(text);
  }
  done(ctx, spec.status, headers);
}

/** Answers a request refused by a rate limit; it never reaches the backend. */
export function answerRefusal(ctx: RequestContext, refusal: Refusal): void {
  answerError(ctx, refusal.spec, refusal.headers);
}

/** Answers with a RequestRedirect filter's redirect (the route's, or the chosen backendRef's). */
export function answerRedirect(ctx: RequestContext, redirect: RedirectFilterIR): void {
  ctx.admissions?.settle(null);
  const location = redirectLocation(redirect, { scheme: ctx.scheme, host: ctx.host, listenerPort: ctx.port, path: ctx.path, query: ctx.query, matched: ctx.matched! });
  answerDirect(ctx, redirect.statusCode, { ...ctx.admissions?.responseHeaders(), location, 'content-length': '0' });
}

/** Answers with a body-less response the gateway makes itself (a redirect). */
export function answerDirect(ctx: RequestContext, status: number, headers: Record<string, string>): void {
  withCors(ctx, headers);
  ctx.res.writeHead(status, headers);
  ctx.res.end();
  done(ctx, status, headers);
}

/**
 * Answers a request an authentication or authorization check refused: the catalog entry (or an
 * authorization service's own status), with the check's challenge. The body is the service's
 * own when it sent one; otherwise OpenAI's error shape for an OpenAI-style call (a JSON body,
 * or Accept: application/json), so the official clients raise their AuthenticationError or
 * PermissionDeniedError with the message; otherwise the catalog's plain text.
 */
export function answerAuthDenial(ctx: RequestContext, denial: AuthDenial): void {
  const status = denial.status ?? denial.error.status;
  const extra: Record<string, string | string[]> = { ...denial.headers };
  if (status >= 300 && status < 400) {
    // A redirect a check answers with (oidc's login, callback and logout): not an error, no body.
    const sent = withCors(ctx, { ...extra, 'content-length': '0' });
    if (!ctx.res.headersSent && !ctx.res.destroyed) ctx.res.writeHead(status, sent).end();
    done(ctx, status, sent);
    return;
  }
  if (denial.challenge) extra['www-authenticate'] = denial.challenge;
  answerRefusalMessage(ctx, denial.error, status, denial.detail, extra, denial.body);
}

/**
 * A refusal with its reason in the body: OpenAI's error shape for an OpenAI-style call (a JSON
 * body, or Accept: application/json), so the official clients raise their exception for the
 * status with the message; the catalog's plain text otherwise. `body` replaces both (an
 * authorization service's own). `extra` headers come first: the body's length and type and the
 * code are ours.
 */
export function answerRefusalMessage(
  ctx: RequestContext,
  spec: ErrorSpec,
  status: number,
  detail: string,
  extra: Record<string, string | string[]> = {},
  own?: { readonly contentType: string; readonly text: string },
): void {
  const message = `${spec.body}: ${detail}`;
  if (isGrpcRequest(ctx.headers)) {
    done(ctx, 200, sendGrpcError(ctx.res, status, message, withCors(ctx, { ...extra, 'x-tollgate-error': spec.code })));
    return;
  }
  const body =
    own ??
    (wantsJsonError(ctx.headers)
      ? { contentType: 'application/json', text: openAiErrorBody(status, spec.code, message) }
      : { contentType: 'text/plain; charset=utf-8', text: message });
  const sent: Record<string, string | string[]> = withCors(ctx, {
    ...extra,
    'content-type': body.contentType,
    'content-length': String(Buffer.byteLength(body.text)),
    'x-tollgate-error': spec.code,
  });
  if (!ctx.res.headersSent && !ctx.res.destroyed) {
    ctx.res.writeHead(status, sent);
    ctx.res.end(body.text);
  }
  done(ctx, status, sent);
}

/**
 * The route's directResponse, in place of a backend's answer: after the route's checks and
 * limits, with the route's ResponseHeaderModifier filters, the x-ratelimit-* headers and cors
 * applied as to a backend's answer. Counted by route and status.
 */
export function answerDirectResponse(ctx: RequestContext, direct: CompiledDirectResponse): void {
  ctx.admissions?.settle(null);
  const headers: HeaderValues = { ...direct.headers };
  for (const m of ctx.route!.parts.responseModifiers) applyHeaderModifier(headers, m);
  if (ctx.admissions) Object.assign(headers, ctx.admissions.responseHeaders());
  if (ctx.authEffects) Object.assign(headers, ctx.authEffects.responseHeaders);
  withCors(ctx, headers);
  ctx.deps.metrics.directResponses.count(ctx.route!.ir.name, direct.status);
  if (!ctx.res.headersSent && !ctx.res.destroyed) {
    ctx.res.writeHead(direct.status, headers);
    ctx.res.end(direct.body);
  }
  done(ctx, direct.status, headers);
}

/**
 * An external processor's immediate response (ext-proc/), in place of the backend's: its
 * status, headers and body, with the route's cors. The limits that admitted the request are
 * settled uncharged.
 */
export function answerImmediate(ctx: RequestContext, status: number, headers: HeaderValues, body: Buffer): void {
  ctx.admissions?.settle(null);
  withCors(ctx, headers);
  headers['content-length'] = String(body.length);
  if (!ctx.res.headersSent && !ctx.res.destroyed) {
    ctx.res.writeHead(status, headers);
    ctx.res.end(body);
  }
  done(ctx, status, headers);
}
