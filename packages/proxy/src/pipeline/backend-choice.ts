// Stage 5, backend choice: one of the route's backends by weight and, for a Service, one of
// its endpoints by least request (routing/backend-picker.ts); the request gains its
// x-forwarded-* headers on the way out, the chosen backend's own header changes, and its API
// format when it is not the client's (translate.ts).
import { ERRORS } from '../errors.js';
import { applyHeaderModifier } from '../filters/header-modifier.js';
import { INVALID_BACKEND } from '../routing/backend-picker.js';
import { addForwarded } from '../upstream/headers.js';
import { answerError } from './answer.js';
import type { RequestContext } from './context.js';
import { publish } from './events.js';
import { translateRequest } from './translate.js';

/**
 * Returns false when the request has no backend to go to: answered 500 when its backend is
 * invalid or the route has none (as the Gateway API asks), 503 when it has no ready endpoint.
 */
export function chooseBackend(ctx: RequestContext): boolean {
  addForwarded(ctx.upstreamHeaders!, ctx.req.socket.remoteAddress, ctx.scheme, ctx.rawHost);
  const backend = ctx.route!.pickBackend();
  if (backend === null || backend === INVALID_BACKEND) {
    ctx.admissions?.refund();
    answerError(ctx, backend === INVALID_BACKEND ? ERRORS.invalidBackend : ERRORS.noBackend);
    return false;
  }
  ctx.backend = backend;
  // The backendRef's own filters, for the requests sent to it only.
  const b = backend.backend;
  if (b.kind === 'service' && b.filters) for (const f of b.filters) applyHeaderModifier(ctx.upstreamHeaders!, f);
  // A backend of another API gets the request in its format (the trace's final request shows it).
  const translator = translateRequest(ctx);
  if (translator === false) return false;
  ctx.translator = translator;
  ctx.entry.stage = 'upstream';
  ctx.entry.upstream = backend.name;
  if (ctx.observed) publish.requestSnapshot(ctx, 'final request');
  return true;
}
