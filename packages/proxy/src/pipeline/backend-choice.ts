// Stage 5, backend choice: one of the route's backends by weight and, for a Service, one of
// its endpoints by least request (routing/backend-picker.ts); the request gains its
// x-forwarded-* headers on the way out, and the chosen backend's own header changes.
import { ERRORS } from '../errors.js';
import { applyHeaderModifier } from '../filters/header-modifier.js';
import { INVALID_BACKEND } from '../routing/backend-picker.js';
import { addForwarded } from '../upstream/headers.js';
import { providerRequest } from '../upstream/provider.js';
import { answerError } from './answer.js';
import type { RequestContext } from './context.js';
import { publish } from './events.js';

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
  if ((b.kind === 'service' || b.kind === 'external') && b.filters) for (const f of b.filters) applyHeaderModifier(ctx.upstreamHeaders!, f);
  // After every filter: the provider's key and host are the last word.
  if ((b.kind === 'static' || b.kind === 'external') && b.provider) {
    const p = providerRequest(b.provider);
    p.headers(ctx.upstreamHeaders!, backend);
    ctx.upstreamPath = p.path(ctx.upstreamPath);
    ctx.upstreamQuery = p.query(ctx.upstreamQuery);
  }
  ctx.entry.stage = 'upstream';
  ctx.entry.upstream = backend.name;
  if (ctx.observed) publish.requestSnapshot(ctx, 'final request');
  return true;
}
