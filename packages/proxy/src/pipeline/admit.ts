// Runs one attachment point's rate-limit policy against the request (both policy stages).
// Synchronous when nothing is to be awaited (the body already read or not needed, local limits
// only): each await on the request path costs a promise and a microtask turn.
import { Admissions, type CompiledPolicy, type Refusal } from '../ratelimit/policy.js';
import type { RequestContext } from './context.js';
import { readBodyOnce, requestFacts } from './llm-body.js';

export function admit(ctx: RequestContext, policy: CompiledPolicy): Refusal | null | Promise<Refusal | null> {
  if (policy.needsBody && !ctx.llm && ctx.hasBody) return readBodyOnce(ctx).then(() => decide(ctx, policy));
  return decide(ctx, policy);
}

function decide(ctx: RequestContext, policy: CompiledPolicy): Refusal | null | Promise<Refusal | null> {
  ctx.admissions ??= new Admissions(ctx.deps.metrics);
  return ctx.admissions.admit(policy, () => requestFacts(ctx), ctx.llm);
}
