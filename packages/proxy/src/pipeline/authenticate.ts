// Stage 3b, authentication and authorization (after route selection, before the route's rate
// limits): the route's checks (auth/effective.ts) in order; the first refusal answers. What
// the checks establish (the consumer, credentials to remove, headers to set) is kept on the
// context for the stages after: the route policies stage applies it to the upstream request,
// the rate limits and the trace read the consumer.
import type { AuthCheck, AuthDenial, AuthPass, AuthRequest, AuthVerdict } from '../auth/types.js';
import { answerAuthDenial } from './answer.js';
import type { AuthOutcome, RequestContext } from './context.js';
import { publish } from './events.js';
import { readBodyOnce } from './llm-body.js';

/** Returns false when the request was refused (and answered). Synchronous without checks. */
export function authenticate(ctx: RequestContext): boolean | Promise<boolean> {
  const checks = ctx.route!.auth;
  return checks === null ? true : runChecks(ctx, checks);
}

/**
 * The checks from `from` on. Synchronous while every check answers at once (an apiKey, a cached
 * basicAuth or jwt verification): awaiting a plain value would still cost a microtask turn per
 * request. A check that needs the body, or answers with a promise, continues asynchronously.
 */
function runChecks(ctx: RequestContext, checks: readonly AuthCheck[], from = 0, bodyRead = false): boolean | Promise<boolean> {
  for (let i = from; i < checks.length; i++) {
    const check = checks[i]!;
    if (check.needsBody && !bodyRead && !ctx.llm && ctx.hasBody) return readBodyOnce(ctx).then(() => runChecks(ctx, checks, i, true));
    if (ctx.res.headersSent) return false; // the body could not be read and was answered
    const verdict = check.run(authRequest(ctx));
    if (verdict instanceof Promise) return verdict.then((v) => conclude(ctx, check, v) && runChecks(ctx, checks, i + 1));
    if (!conclude(ctx, check, verdict)) return false;
  }
  return true;
}

/** Records a check's verdict and applies it: false when it refused the request (answered). */
function conclude(ctx: RequestContext, check: AuthCheck, verdict: AuthVerdict): boolean {
  record(ctx, check, verdict);
  if (!verdict.ok) {
    refuse(ctx, check, verdict);
    return false;
  }
  apply(ctx, verdict);
  return true;
}

function authRequest(ctx: RequestContext): AuthRequest {
  const body = ctx.llm?.body;
  return {
    method: ctx.method,
    path: ctx.path,
    query: ctx.query,
    host: ctx.host,
    authority: ctx.authority,
    scheme: ctx.scheme,
    headers: withoutRemoved(ctx),
    rawHeaders: ctx.req.rawHeaders,
    sourceAddress: ctx.req.socket.remoteAddress ?? '',
    sourcePort: ctx.req.socket.remotePort ?? 0,
    destinationAddress: ctx.req.socket.localAddress ?? '',
    destinationPort: ctx.req.socket.localPort ?? 0,
    protocol: `HTTP/${ctx.req.httpVersion}`,
    consumer: ctx.consumer,
    model: ctx.llm?.model ?? null,
    body: Buffer.isBuffer(body) ? body : null,
    // Read, but a stream: readLlmRequest replays a body over config.maxRequestBodyBytes unread.
    bodyTooLarge: body !== undefined && !Buffer.isBuffer(body),
  };
}

/**
 * The request headers less those an earlier check removed (a credential it consumed), so that a
 * later check neither sends them to an authorization service nor builds on them.
 */
export function withoutRemoved(ctx: RequestContext): RequestContext['headers'] {
  const removed = ctx.authEffects?.removeHeaders;
  if (!removed?.length) return ctx.headers;
  const headers = { ...ctx.headers };
  for (const name of removed) delete headers[name];
  return headers;
}

function record(ctx: RequestContext, check: AuthCheck, v: AuthVerdict): void {
  const outcome: AuthOutcome = v.ok
    ? { kind: check.kind, allowed: true, reason: v.reason ?? 'allowed', note: v.note ?? null }
    : { kind: check.kind, allowed: false, reason: v.reason, note: v.detail };
  (ctx.auth ??= []).push(outcome);
  ctx.deps.metrics.countAuth(check.kind, outcome.allowed, outcome.reason);
}

function refuse(ctx: RequestContext, check: AuthCheck, v: AuthDenial): void {
  ctx.deps.authLog.debug({ kind: check.kind, reason: v.reason, route: ctx.routeName, consumer: ctx.consumer?.name }, 'request refused by authentication or authorization');
  // As the gateway policies stage does for its refusals: the trace shows the request the
  // route's policies refused, with what each check decided (requestState.auth).
  if (ctx.observed) publish.requestSnapshot(ctx, 'route policies');
  answerAuthDenial(ctx, v);
}

function apply(ctx: RequestContext, v: AuthPass): void {
  if (v.consumer && !ctx.consumer) ctx.consumer = v.consumer;
  if (!v.removeHeaders && !v.setHeaders && !v.removeQuery && !v.responseHeaders) return;
  const fx = (ctx.authEffects ??= { removeHeaders: [], setHeaders: {}, removeQuery: [], responseHeaders: {} });
  if (v.removeHeaders) fx.removeHeaders.push(...v.removeHeaders);
  if (v.setHeaders) Object.assign(fx.setHeaders, v.setHeaders);
  if (v.removeQuery) fx.removeQuery.push(...v.removeQuery);
  if (v.responseHeaders) Object.assign(fx.responseHeaders, v.responseHeaders);
}
