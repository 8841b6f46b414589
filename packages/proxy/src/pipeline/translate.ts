// The request half of a format translation (llm/formats/): when the picked backend speaks
// another API than the client, the body, path and headers sent upstream are the backend's, and
// the response policies get the translator for the answer. Synchronous: it runs in the backend
// choice, between the pick and the call, where nothing may be awaited.
import { ERRORS } from '../errors.js';
import { AnthropicResponse, type ResponseTranslator } from '../llm/formats/anthropic-response.js';
import { chatToMessages, FormatRefusal } from '../llm/formats/chat-to-messages.js';
import { MESSAGES_PATH, translates } from '../llm/formats/format.js';
import { answerError, answerOpenAiError } from './answer.js';
import type { RequestContext } from './context.js';

function refuse(ctx: RequestContext, param: string, message: string): false {
  ctx.admissions?.refund();
  answerOpenAiError(ctx, ERRORS.formatUnsupported, message, param);
  return false;
}

/**
 * The translator for the response, null when the request goes as it came; false when it was
 * answered here (a body that cannot be translated: 400 naming the field, or too large: 413).
 */
export function translateRequest(ctx: RequestContext): ResponseTranslator | null | false {
  if (!translates(ctx.backend!.backend, ctx.path)) return null;
  const llm = ctx.llm;
  if (llm && !Buffer.isBuffer(llm.body)) {
    ctx.admissions?.refund();
    answerError(ctx, ERRORS.requestBodyTooLarge, { connection: 'close' }, `a body translated for an Anthropic backend is read whole, at most config.maxRequestBodyBytes (${ctx.deps.maxRequestBodyBytes})`);
    return false;
  }
  if (!llm || llm.unparsed) return refuse(ctx, 'messages', `the body must be a JSON object of a chat completion request${llm?.unparsed ? ` (${llm.unparsed})` : ''}`);
  let translated;
  try {
    translated = chatToMessages(JSON.parse((llm.body as Buffer).toString('utf8')) as Record<string, unknown>);
  } catch (err) {
    if (err instanceof FormatRefusal) return refuse(ctx, err.param, err.message);
    throw err;
  }
  // The client asked for the usage chunk unless the gateway added stream_options itself.
  const asked = translated.includeUsage && !llm.injectedUsage;
  // The usage chunk is made when the client asked; a meter takes a stream's usage from the translation.
  const body = Buffer.from(JSON.stringify(translated.body));
  ctx.llm = { ...llm, body, injectedUsage: false };
  const headers = ctx.upstreamHeaders!;
  headers['content-type'] = 'application/json';
  headers['content-length'] = String(body.length);
  headers['accept-encoding'] = 'identity';
  if (headers['transfer-encoding'] !== undefined) delete headers['transfer-encoding'];
  ctx.upstreamPath = MESSAGES_PATH;
  return new AnthropicResponse({ includeUsage: asked, maxEventBytes: ctx.deps.maxSseEventBytes });
}
