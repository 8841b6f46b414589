// Stage 1, listener: the bind's listener for the request's host (most specific hostname first).
import type { RequestContext } from './context.js';
import { publish } from './events.js';

export function selectListener(ctx: RequestContext): void {
  ctx.listener = ctx.snapshot.binds.get(ctx.port)?.listeners.first(ctx.host) ?? null;
  if (ctx.observed) publish.requestSnapshot(ctx, 'initial request');
}
