// The LLM body is read only when something needs it: the model for global descriptors or
// authorization rules, the token count of a route that counts tokens, the copies for mirrors.
// Read once; later stages reuse it.
import { speaksMessages } from '../llm/formats/format.js';
import { readLlmRequest } from '../llm/request-body.js';
import type { RequestFacts } from '../ratelimit/policy.js';
import type { RequestContext } from './context.js';

export async function readBodyOnce(ctx: RequestContext, translating = false, maxBytes = ctx.deps.maxRequestBodyBytes): Promise<void> {
  if (ctx.llm || !ctx.hasBody) return;
  // Metered: a token limit applies here (at the gateway level, or on the route once selected).
  const metered = (ctx.listener?.policy?.countsTokens ?? false) || (ctx.route?.countsTokens ?? false);
  // Usage is asked for where a meter will take the chunk out again: on a metered route, and
  // before routing (the route, not known yet, may count tokens). Never in Anthropic's Messages
  // API, which always reports usage and refuses fields it does not know.
  const askUsage = (metered || ctx.route === null) && !speaksMessages(ctx.path);
  // A body to translate must be read whole, as one that counts tokens.
  const refuseLarger = metered || translating;
  // A smaller bound only where a larger body goes on streamed: a metered or translated one is read whole.
  ctx.llm = await readLlmRequest(ctx.req, { maxBytes: refuseLarger ? ctx.deps.maxRequestBodyBytes : maxBytes, refuseLarger, askUsage }, ctx);
}

/**
 * On a route that fails over or retries, the body is kept to be sent again: read whole when it
 * is within config.maxRetryBodyBytes. A larger one (declared or found while reading) goes on
 * streamed as usual, and its request is sent once.
 */
export async function readBodyForReplay(ctx: RequestContext): Promise<void> {
  if (ctx.llm || !ctx.hasBody) return;
  const max = ctx.deps.maxRetryBodyBytes;
  if (max === 0 || Number(ctx.headers['content-length']) > max) return;
  await readBodyOnce(ctx, false, max);
}

/** What rate-limit descriptors and keys see of the request: after a transformation, the transformed one. */
export function requestFacts(ctx: RequestContext): RequestFacts {
  return {
    method: ctx.method,
    path: ctx.path,
    host: ctx.host,
    headers: ctx.transform?.headers ?? ctx.req.headers,
    sourceAddress: ctx.req.socket.remoteAddress ?? '',
    model: ctx.llm?.model ?? null,
    consumer: ctx.consumer,
  };
}
