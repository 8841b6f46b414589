// Stage 3d, external processing (after the transformation, before the route's rate limits, so
// the limits and the token reservation read the processed request): the route's extProc
// (ext-proc/) is sent the request headers and, as its requestBodyMode says, the body (whole
// up to maxBufferedBytes, or chunk by chunk on its way upstream). Its header edits are applied
// to the upstream request by the route policies stage; a replaced body replaces ctx.llm; an
// immediate response answers here. The response's phases run in the upstream call
// (ext-proc/response.ts through ResponsePolicies).
import { Transform, pipeline, type Readable } from 'node:stream';
import type { ExtProcIR } from '@tollgate/api';
import { EXT_PROC_BOUNDS } from '@tollgate/api';
import { ERRORS, RequestFailure } from '../errors.js';
import { applyEdits, type PhaseAnswer } from '../ext-proc/answer.js';
import { ExtProcResponse } from '../ext-proc/response.js';
import { ExtProcSession, type PhaseReport } from '../ext-proc/session.js';
import { ExtProcFailure } from '../ext-proc/stream.js';
import { wireHeaders } from '../ext-proc/wire-headers.js';
import { speaksMessages } from '../llm/formats/format.js';
import { parse } from '../llm/request-body.js';
import { answerError, answerImmediate } from './answer.js';
import { withoutRemoved } from './authenticate.js';
import type { HeaderMap, RequestContext } from './context.js';
import { publish } from './events.js';
import { readBodyOnce } from './llm-body.js';

const EMPTY = Buffer.alloc(0);

/** Returns false when the request was answered here. Synchronous for a route without extProc. */
export function processRequest(ctx: RequestContext): boolean | Promise<boolean> {
  const ir = ctx.route!.extProc;
  if (ir === null) return true;
  return run(ctx, ir).catch((err: unknown) => {
    if (!(err instanceof ExtProcFailure)) throw err;
    ctx.admissions?.refund();
    answerError(ctx, ERRORS.extProcFailed, undefined, err.message);
    return false;
  });
}

/** The metric result of a trace result (the metric's label values are snake_case). */
const METRIC_RESULT = { continued: 'continued', mutated: 'mutated', immediate: 'immediate', failedOpen: 'failed_open', failedClosed: 'failed_closed' } as const;

/** A phase of the request's session: counted by route and result, and traced when observed. */
function reportPhase(ctx: RequestContext, phase: Parameters<PhaseReport>[0]): void {
  ctx.deps.metrics.extProcPhases.count(ctx.route!.ir.name, METRIC_RESULT[phase.result]);
  if (ctx.observed) publish.extProc(ctx, phase);
}

async function run(ctx: RequestContext, ir: ExtProcIR): Promise<boolean> {
  const session = new ExtProcSession(ir, ctx.deps.extProc, (phase) => reportPhase(ctx, phase));
  ctx.extProc = session;
  ctx.res.once('close', () => session.close());
  if (ir.requestHeaderMode === 'SEND') {
    const pseudo = [
      [':method', ctx.method],
      [':path', ctx.query ? `${ctx.path}?${ctx.query}` : ctx.path],
      [':authority', ctx.authority],
      [':scheme', ctx.scheme],
    ] as const;
    const sendsBody = ctx.hasBody;
    const a = await session.send('request_headers', { request_headers: { headers: { headers: wireHeaders(pseudo, withoutRemoved(ctx)) }, end_of_stream: !sendsBody } }, 0);
    if (a && !take(ctx, session, a)) return false;
  }
  if (ir.requestBodyMode === 'NONE' || !ctx.hasBody || session.bypassed) return true;
  if (ir.requestBodyMode === 'STREAMED' && !ctx.llm) {
    ctx.processedBody = streamThrough(ctx.req, session);
    return true;
  }
  return processWholeBody(ctx, session, ir);
}

/** An immediate answer is given (false); header edits are kept for the upstream request. */
function take(ctx: RequestContext, session: ExtProcSession, a: PhaseAnswer): boolean {
  if (a.kind === 'immediate') {
    ctx.admissions?.refund();
    const headers: HeaderMap = { 'content-type': 'text/plain; charset=utf-8' };
    applyEdits(headers, a.headers);
    answerImmediate(ctx, a.status, headers, a.body);
    session.close();
    return false;
  }
  if (a.headers.set.length || a.headers.remove.length) session.requestEdits.push(a.headers);
  return true;
}

/** BUFFERED (or STREAMED over a body already in memory): the body in one message, replaced by the answer's. */
async function processWholeBody(ctx: RequestContext, session: ExtProcSession, ir: ExtProcIR): Promise<boolean> {
  const max = ir.maxBufferedBytes;
  if (!ctx.llm) await readBodyOnce(ctx, false, max);
  const llm = ctx.llm!;
  if (!Buffer.isBuffer(llm.body) || llm.body.length > max) {
    ctx.admissions?.refund();
    answerError(ctx, ERRORS.extProcBodyTooLarge, { connection: 'close' }, `the body is over maxBufferedBytes (${max})`);
    return false;
  }
  const a = await session.send('request_body', { request_body: { body: llm.body, end_of_stream: true } }, max);
  if (!a) return true;
  if (!take(ctx, session, a)) return false;
  if (a.kind === 'continue' && a.body) {
    const grown = a.body.length - llm.body.length;
    if (grown > 0 && !ctx.takeBodyBytes(grown)) throw new RequestFailure(ERRORS.bodyBudgetFull, 'request-body bytes held by the process are at config.maxBufferedRequestBytes', { headers: { 'retry-after': '1' } });
    // Parsed again: the model, the stream flag and the prompt the limits read are the processed body's.
    ctx.llm = parse(a.body, ctx.route!.countsTokens && !speaksMessages(ctx.path));
  }
  return true;
}

/** STREAMED: each chunk of the client's body goes to the processor on its way upstream; what it answers is sent. */
function streamThrough(source: Readable, session: ExtProcSession): Readable {
  const bound = EXT_PROC_BOUNDS.maxStreamedChunkBytes;
  const send = async (chunk: Buffer, end: boolean): Promise<Buffer> => {
    const a = await session.send('request_body', { request_body: { body: chunk, end_of_stream: end } }, bound, true);
    if (end) session.endStreamed('request_body');
    return a?.kind === 'continue' && a.body ? a.body : chunk;
  };
  const through = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      send(chunk, false).then((out) => done(null, out), done);
    },
    flush(done) {
      send(EMPTY, true).then((out) => done(null, out), done);
    },
  });
  return pipeline(source, through, () => {});
}

/** The processor's request header edits, on the upstream request (after the transformation's). */
export function applyProcessorEdits(ctx: RequestContext, headers: HeaderMap): void {
  const session = ctx.extProc;
  if (!session) return;
  for (const e of session.requestEdits) applyEdits(headers, e);
  // A body the processor passes on chunk by chunk has a length nobody knows yet.
  if (ctx.processedBody && headers['content-length'] !== undefined) delete headers['content-length'];
}

/** The response's phases, for ResponsePolicies; undefined without extProc (or once bypassed). */
export function responseProcessor(ctx: RequestContext): ExtProcResponse | undefined {
  const session = ctx.extProc;
  if (!session || session.bypassed) return undefined;
  // Nothing of the response is sent: it passes as without a processor.
  if (session.ir.responseHeaderMode === 'SKIP' && session.ir.responseBodyMode === 'NONE') return undefined;
  return new ExtProcResponse(session, ctx.method === 'HEAD');
}
