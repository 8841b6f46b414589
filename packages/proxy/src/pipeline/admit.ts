// Runs one attachment point's rate-limit policy against the request (both policy stages).
import { Admissions, type CompiledPolicy, type Refusal } from '../ratelimit/policy.js';
import type { RequestContext } from './context.js';
import { readBodyOnce, requestFacts } from './llm-body.js';

export async function admit(ctx: RequestContext, policy: CompiledPolicy): Promise<Refusal | null> {
  if (policy.needsBody) await readBodyOnce(ctx);
  ctx.admissions ??= new Admissions(ctx.deps.metrics);
  return ctx.admissions.admit(policy, () => requestFacts(ctx), ctx.llm);
}
