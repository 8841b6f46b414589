// Stage 1, listener: the request target normalised (request-target.ts), then the bind's
// listener for the request's host (most specific hostname first).
import { ERRORS } from '../errors.js';
import { answerError } from './answer.js';
import type { RequestContext } from './context.js';
import { publish } from './events.js';

/** Returns false when the request target cannot be served (answered 400). */
export function selectListener(ctx: RequestContext): boolean {
  if (ctx.observed) publish.requestSnapshot(ctx, 'initial request');
  if (ctx.targetError) {
    answerError(ctx, ERRORS.badRequestTarget, undefined, ctx.targetError);
    return false;
  }
  ctx.listener = ctx.snapshot.binds.get(ctx.port)?.listeners.first(ctx.host) ?? null;
  return true;
}
