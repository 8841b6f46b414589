// Answers the gateway gives itself instead of the backend's: catalog errors, rate-limit
// refusals and redirects. Each ends the request: the final response is published and the
// request finished.
import type { ErrorSpec } from '../errors.js';
import type { Refusal } from '../ratelimit/policy.js';
import type { AuthDenial } from '../auth/types.js';
import { sendError } from '../upstream/forward.js';
import type { RequestContext } from './context.js';
import { publish, type HeaderValues } from './events.js';

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

/** Answers a request refused by a rate limit; it never reaches the backend. */
export function answerRefusal(ctx: RequestContext, refusal: Refusal): void {
  answerError(ctx, refusal.spec, refusal.headers);
}

/** Answers with a body-less response the gateway makes itself (a redirect). */
export function answerDirect(ctx: RequestContext, status: number, headers: Record<string, string>): void {
  ctx.res.writeHead(status, headers);
  ctx.res.end();
  done(ctx, status, headers);
}

/**
 * Answers a request an authentication or authorization check refused: the catalog entry (or an
 * authorization service's own status and body), with the check's challenge.
 */
export function answerAuthDenial(ctx: RequestContext, denial: AuthDenial): void {
  const headers: Record<string, string> = { ...denial.headers };
  if (denial.challenge) headers['www-authenticate'] = denial.challenge;
  if (denial.status === undefined && !denial.body) {
    answerError(ctx, denial.error, headers, denial.detail);
    return;
  }
  const status = denial.status ?? denial.error.status;
  const text = denial.body?.text ?? `${denial.error.body}: ${denial.detail}`;
  const sent = {
    'content-type': denial.body?.contentType ?? 'text/plain; charset=utf-8',
    'content-length': String(Buffer.byteLength(text)),
    'x-tollgate-error': denial.error.code,
    ...headers,
  };
  if (!ctx.res.headersSent && !ctx.res.destroyed) {
    ctx.res.writeHead(status, sent);
    ctx.res.end(text);
  }
  done(ctx, status, sent);
}
