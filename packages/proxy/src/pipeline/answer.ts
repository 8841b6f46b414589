// Answers the gateway gives itself instead of the backend's: catalog errors, rate-limit
// refusals and redirects. Each ends the request: the final response is published and the
// request finished.
import type { FilterIR } from '@tollgate/api';
import type { ErrorSpec } from '../errors.js';
import { redirectLocation } from '../filters/redirect.js';
import type { Refusal } from '../ratelimit/policy.js';
import type { AuthDenial } from '../auth/types.js';
import { sendError } from '../upstream/forward.js';
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

/** Answers with a catalog entry; `detail` (what exactly was wrong) follows its body. */
export function answerError(ctx: RequestContext, spec: ErrorSpec, extraHeaders?: Record<string, string>, detail?: string): void {
  done(ctx, spec.status, sendError(ctx.res, spec, extraHeaders, detail));
}

/**
 * Answers with a catalog entry in OpenAI's error shape, `param` naming the field at fault: for
 * requests of OpenAI clients the gateway refuses on their body (a field it cannot translate).
 */
export function answerOpenAiError(ctx: RequestContext, spec: ErrorSpec, message: string, param: string): void {
  const text = JSON.stringify({ error: { message: `${spec.body}: ${message}`, type: 'invalid_request_error', param, code: spec.code } });
  const headers = { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(text)), 'x-tollgate-error': spec.code };
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
  const message = `${denial.error.body}: ${denial.detail}`;
  const body =
    denial.body ??
    (wantsJsonError(ctx.headers)
      ? { contentType: 'application/json', text: openAiErrorBody(status, denial.error.code, message) }
      : { contentType: 'text/plain; charset=utf-8', text: message });
  // A service's headers come first: the body's own length and type and the code are ours.
  const sent: Record<string, string> = {
    ...denial.headers,
    'content-type': body.contentType,
    'content-length': String(Buffer.byteLength(body.text)),
    'x-tollgate-error': denial.error.code,
  };
  if (denial.challenge) sent['www-authenticate'] = denial.challenge;
  if (!ctx.res.headersSent && !ctx.res.destroyed) {
    ctx.res.writeHead(status, sent);
    ctx.res.end(body.text);
  }
  done(ctx, status, sent);
}
