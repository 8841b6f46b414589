// Stage 3c, transformation (after authentication and authorization, before the route's rate
// limits and the Gateway-level ones that read the request): the route's transformation
// (transform/) computed on the request as the checks saw it; the body edited here, so the
// token reservation, keyed budgets and the meter read the transformed body; the header edits
// kept on the context for the route policies stage (the upstream request) and the response
// policies (the response). A transformation that cannot be made refuses the request with its
// catalog entry, counted by result (docs/transformation.md).
import { speaksMessages } from '../llm/formats/format.js';
import { applyHeaderModifier } from '../filters/header-modifier.js';
import { ERRORS, RequestFailure, type ErrorSpec } from '../errors.js';
import { editBody, type ReadBody } from '../transform/body-edit.js';
import type { RouteTransformation } from '../transform/compile.js';
import { evaluateTransformation, type TransformFailure } from '../transform/evaluate.js';
import type { TransformationState, TransformResult } from '@tollgate/api';
import { answerError } from './answer.js';
import { withoutRemoved } from './authenticate.js';
import type { HeaderMap, RequestContext } from './context.js';
import { publish } from './events.js';
import { readBodyOnce } from './llm-body.js';
import { openAiErrorBody, wantsJsonError } from './openai-error.js';

/** Returns false when the request was refused (and answered). Synchronous for a route without a transformation. */
export function transformRequest(ctx: RequestContext): boolean | Promise<boolean> {
  const t = ctx.route!.transformation;
  if (t === null) return true;
  return t.compiled.needsBody && !ctx.llm && ctx.hasBody ? readBodyOnce(ctx).then(() => transform(ctx, t)) : transform(ctx, t);
}

const SPEC: Record<Exclude<TransformResult, 'applied'>, ErrorSpec> = {
  evaluation_error: ERRORS.transformFailed,
  invalid_value: ERRORS.transformFailed,
  input_too_large: ERRORS.expressionInputTooLarge,
  body_not_json: ERRORS.transformBodyNotJson,
  body_too_large: ERRORS.transformBodyTooLarge,
};

function state(t: RouteTransformation, result: TransformResult, note: string | null, fields: { headers?: string[]; body?: string[]; skipped?: readonly string[] } = {}): TransformationState {
  return { source: t.source, result, headers: fields.headers ?? [], body: fields.body ?? [], skipped: [...(fields.skipped ?? [])], note };
}

/** Refuses the request: OpenAI's error shape for an API client, else the catalog's text; the limits that admitted it forget it. */
function refuse(ctx: RequestContext, t: RouteTransformation, failure: Omit<TransformFailure, 'ok'>): false {
  ctx.deps.metrics.countTransformation(ctx.route!.ir.name, failure.result);
  ctx.transform = { state: state(t, failure.result, failure.note), requestHeaders: null, responseHeaders: null, headers: null, redact: new Set() };
  ctx.admissions?.refund();
  if (ctx.observed) publish.requestSnapshot(ctx, 'route policies');
  const spec = SPEC[failure.result];
  // A body left unread (too large) ends the connection.
  const extra = failure.result === 'body_too_large' ? { connection: 'close' } : undefined;
  if (!wantsJsonError(ctx.headers)) {
    answerError(ctx, spec, extra, failure.note);
    return false;
  }
  const text = openAiErrorBody(spec.status, spec.code, `${spec.body}: ${failure.note}`);
  answerError(ctx, { ...spec, body: text }, { ...extra, 'content-type': 'application/json' });
  return false;
}

function transform(ctx: RequestContext, t: RouteTransformation): boolean {
  const c = t.compiled;
  const llm = ctx.llm;
  const max = ctx.deps.maxRequestBodyBytes;
  // A body read but too large to hold went on as a stream: its fields are unknown, and an edit
  // it escaped (a forced model) would not be made.
  if (c.needsBody && llm && !Buffer.isBuffer(llm.body)) return refuse(ctx, t, { result: 'body_too_large', note: `the body is larger than config.maxRequestBodyBytes (${max})` });
  if (c.body && llm?.unparsed) return refuse(ctx, t, { result: 'body_not_json', note: llm.unparsed });
  const out = evaluateTransformation(c, inputs(ctx), ctx.observed);
  if (!out.ok) return refuse(ctx, t, out);
  const skipped = [...out.skipped];
  let bodyFields: string[] = [];
  if (out.body) {
    if (llm && Buffer.isBuffer(llm.body)) {
      const edited = edit(ctx, llm as ReadBody, out.body);
      if (edited.body.length > max) return refuse(ctx, t, { result: 'body_too_large', note: `the transformed body is ${edited.body.length} bytes, more than config.maxRequestBodyBytes (${max})` });
      const grown = edited.body.length - llm.body.length;
      if (grown > 0 && !ctx.takeBodyBytes(grown)) throw new RequestFailure(ERRORS.bodyBudgetFull, 'request-body bytes held by the process are at config.maxBufferedRequestBytes', { headers: { 'retry-after': '1' } });
      ctx.llm = edited;
      bodyFields = out.body.map((e) => e.segments.join('.'));
    } else skipped.push('request.body (the request has no body)');
  }
  const rh = out.requestHeaders;
  let headers: HeaderMap | null = null;
  if (rh) {
    headers = { ...ctx.headers };
    applyHeaderModifier(headers, rh);
  }
  const names = rh ? [...rh.set, ...rh.add].map((h) => h.name).concat(rh.remove) : [];
  ctx.transform = {
    state: state(t, 'applied', null, { headers: names, body: bodyFields, skipped }),
    requestHeaders: rh,
    responseHeaders: out.responseHeaders,
    headers,
    redact: out.redact,
  };
  ctx.deps.metrics.countTransformation(ctx.route!.ir.name, 'applied');
  return true;
}

function edit(ctx: RequestContext, llm: ReadBody, edits: Parameters<typeof editBody>[1]): ReadBody {
  // As readBodyOnce asks: a metered route has a stream report its usage (the meter takes it out again).
  const askUsage = ctx.route!.countsTokens && !speaksMessages(ctx.path);
  return editBody(llm, edits, askUsage);
}

function inputs(ctx: RequestContext) {
  const llm = ctx.llm;
  return {
    method: ctx.method,
    path: ctx.path,
    host: ctx.host,
    headers: withoutRemoved(ctx),
    sourceAddress: ctx.req.socket.remoteAddress ?? '',
    model: llm?.model ?? null,
    maxTokens: llm?.maxTokens ?? null,
    stream: llm?.stream ?? false,
    consumer: ctx.consumer,
  };
}
