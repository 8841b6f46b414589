// The LLM body is read only when something needs it: the model for global descriptors or
// authorization rules, the token count of a route that counts tokens, the copies for mirrors.
// Read once; later stages reuse it.
import { readLlmRequest } from '../llm/request-body.js';
import type { RequestFacts } from '../ratelimit/policy.js';
import type { RequestContext } from './context.js';

export async function readBodyOnce(ctx: RequestContext): Promise<void> {
  if (ctx.llm || !ctx.hasBody) return;
  // Metered: a token limit applies here (at the gateway level, or on the route once selected).
  const metered = (ctx.listener?.policy?.countsTokens ?? false) || (ctx.route?.countsTokens ?? false);
  // Usage is asked for where a meter will take the chunk out again: on a metered route, and
  // before routing (the route, not known yet, may count tokens).
  const askUsage = metered || ctx.route === null;
  ctx.llm = await readLlmRequest(ctx.req, { maxBytes: ctx.deps.maxRequestBodyBytes, refuseLarger: metered, askUsage }, ctx);
}

/** What global rate-limit descriptors see of the request. */
export function requestFacts(ctx: RequestContext): RequestFacts {
  return { method: ctx.method, path: ctx.path, host: ctx.host, headers: ctx.req.headers, sourceAddress: ctx.req.socket.remoteAddress ?? '', model: ctx.llm?.model ?? null };
}
