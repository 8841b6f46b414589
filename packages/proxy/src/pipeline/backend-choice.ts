// Stage 5, backend choice: one of the route's backends by weight and, for a Service, one of
// its endpoints by least request (routing/backend-picker.ts); the request gains its
// x-forwarded-* headers on the way out.
import { ERRORS } from '../errors.js';
import { addForwarded } from '../upstream/headers.js';
import { answerError } from './answer.js';
import type { RequestContext } from './context.js';
import { publish } from './events.js';

/** Returns false when the route has no backend to send to (answered 503). */
export function chooseBackend(ctx: RequestContext): boolean {
  addForwarded(ctx.upstreamHeaders!, ctx.req.socket.remoteAddress, ctx.scheme, ctx.rawHost);
  const backend = ctx.route!.pickBackend();
  if (!backend) {
    ctx.admissions?.refund();
    answerError(ctx, ERRORS.noBackend);
    return false;
  }
  ctx.backend = backend;
  ctx.entry.stage = 'upstream';
  ctx.entry.upstream = backend.name;
  if (ctx.observed) publish.requestSnapshot(ctx, 'final request');
  return true;
}
