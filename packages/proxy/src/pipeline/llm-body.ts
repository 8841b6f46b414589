// The LLM body is read only when something needs it: the model for global descriptors or
// authorization rules, the token count of a route that counts tokens, the copies for mirrors.
// Read once; later stages reuse it.
import { speaksMessages } from '../llm/formats/format.js';
import { readLlmRequest } from '../llm/request-body.js';
import type { RequestFacts } from '../ratelimit/policy.js';
import type { RequestContext } from './context.js';

export async function readBodyOnce(ctx: RequestContext, translating = false): Promise<void> {
  if (ctx.llm || !ctx.hasBody) return;
  // Metered: a token limit applies here (at the gateway level, or on the route once selected).
  const metered = (ctx.listener?.policy?.countsTokens ?? false) || (ctx.route?.countsTokens ?? false);
  // Usage is asked for where a meter will take the chunk out again: on a metered route, and
  // before routing (the route, not known yet, may count tokens). Never in Anthropic's Messages
  // API, which always reports usage and refuses fields it does not know.
  const askUsage = (metered || ctx.route === null) && !speaksMessages(ctx.path);
  // A body to translate must be read whole, as one that counts tokens.
  ctx.llm = await readLlmRequest(ctx.req, { maxBytes: ctx.deps.maxRequestBodyBytes, refuseLarger: metered || translating, askUsage }, ctx);
}

/** What rate-limit descriptors and keys see of the request. */
export function requestFacts(ctx: RequestContext): RequestFacts {
  return {
    method: ctx.method,
    path: ctx.path,
    host: ctx.host,
    headers: ctx.req.headers,
    sourceAddress: ctx.req.socket.remoteAddress ?? '',
    model: ctx.llm?.model ?? null,
    consumer: ctx.consumer,
    clientCertificate: ctx.clientCertificate?.inputs ?? null,
  };
}
