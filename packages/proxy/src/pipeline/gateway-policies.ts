// Stage 2, gateway policies: the listener's rate limits, before routing (spec §6 order 3).
import type { CompiledPolicy } from '../ratelimit/policy.js';
import { admit } from './admit.js';
import { answerRefusal } from './answer.js';
import type { RequestContext } from './context.js';
import { answersPreflight, corsBeforeRouting } from './cross-origin.js';
import { publish } from './events.js';

/**
 * Returns false when the request was refused (and answered). Synchronous when the listener
 * has no policy (most requests), so the pipeline awaits nothing for it. A preflight the
 * gateway answers (its route has cors) is not counted: it is the browser's, not the page's.
 */
export function applyGatewayPolicies(ctx: RequestContext): boolean | Promise<boolean> {
  const policy = ctx.listener?.policy;
  if (!policy || answersPreflight(ctx)) {
    if (ctx.observed) publish.requestSnapshot(ctx, 'gateway policies');
    return true;
  }
  return admitGateway(ctx, policy);
}

async function admitGateway(ctx: RequestContext, policy: CompiledPolicy): Promise<boolean> {
  const refusal = await admit(ctx, policy);
  if (ctx.observed) publish.requestSnapshot(ctx, 'gateway policies');
  if (!refusal) return true;
  ctx.deps.rateLimitLog.debug({ level: 'gateway', listener: ctx.listener!.ir.name }, 'request refused by a gateway-level rate limit');
  corsBeforeRouting(ctx);
  answerRefusal(ctx, refusal);
  return false;
}
