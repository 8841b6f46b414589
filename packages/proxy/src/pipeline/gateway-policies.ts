// Stage 2, gateway policies: the listener's rate limits, before routing (spec §6 order 3).
import { admit } from './admit.js';
import { answerRefusal } from './answer.js';
import type { RequestContext } from './context.js';
import { publish } from './events.js';

/** Returns false when the request was refused (and answered). */
export async function applyGatewayPolicies(ctx: RequestContext): Promise<boolean> {
  const policy = ctx.listener?.policy;
  const refusal = policy ? await admit(ctx, policy) : null;
  if (ctx.observed) publish.requestSnapshot(ctx, 'gateway policies');
  if (!refusal) return true;
  ctx.deps.rateLimitLog.debug({ level: 'gateway', listener: ctx.listener!.ir.name }, 'request refused by a gateway-level rate limit');
  answerRefusal(ctx, refusal);
  return false;
}
