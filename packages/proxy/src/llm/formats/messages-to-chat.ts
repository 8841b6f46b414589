// Anthropic's Messages API answers as OpenAI Chat Completions answers: a message as a
// `chat.completion`, an error body as OpenAI's error shape. The stream's events are translated
// in messages-stream.ts with the same mappings (finish reasons, usage).
import { AnthropicUsage } from './anthropic-usage.js';

type Obj = Record<string, unknown>;

function isObj(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** A backend answer that is not what Anthropic's API sends: answered 502 (TG_FORMAT_BAD_RESPONSE). */
export class BadFormat extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BadFormat';
  }
}

/** Anthropic's stop_reason as OpenAI's finish_reason. */
export function finishReason(stop: unknown): string {
  switch (stop) {
    case 'max_tokens':
    case 'model_context_window_exceeded':
      return 'length';
    case 'tool_use':
      return 'tool_calls';
    case 'refusal':
      return 'content_filter';
    default:
      // end_turn, stop_sequence, pause_turn
      return 'stop';
  }
}

export interface ChatUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  prompt_tokens_details?: { cached_tokens: number };
}

/** OpenAI's usage object from what Anthropic reported; null unless input and output both were. */
export function chatUsage(usage: AnthropicUsage): ChatUsage | null {
  const prompt = usage.prompt;
  const completion = usage.completion;
  if (prompt === null || completion === null) return null;
  const out: ChatUsage = { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
  if (usage.cacheRead !== null) out.prompt_tokens_details = { cached_tokens: usage.cacheRead };
  return out;
}

interface ToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

/** A non-streamed Anthropic message as a `chat.completion` body. Throws BadFormat when it is not a message. */
export function messageToCompletion(raw: Buffer, created: number): string {
  let m: unknown;
  try {
    m = JSON.parse(raw.toString('utf8'));
  } catch {
    throw new BadFormat(`the backend's body is not JSON (${raw.length} bytes)`);
  }
  if (!isObj(m) || m.type !== 'message' || !Array.isArray(m.content)) throw new BadFormat('the backend\'s body is not an Anthropic message (type "message" with a content array)');
  let text = '';
  const calls: ToolCall[] = [];
  for (const block of m.content) {
    if (!isObj(block)) throw new BadFormat('a content block of the message is not an object');
    if (block.type === 'text' && typeof block.text === 'string') text += block.text;
    else if (block.type === 'tool_use') {
      if (typeof block.id !== 'string' || typeof block.name !== 'string') throw new BadFormat('a tool_use block has no id or name');
      calls.push({ id: block.id, type: 'function', function: { name: block.name, arguments: JSON.stringify(block.input ?? {}) } });
    }
    // thinking and other blocks have no place in a chat completion's message
  }
  const usage = new AnthropicUsage();
  usage.readUsage(m.usage);
  const counted = chatUsage(usage);
  return JSON.stringify({
    id: typeof m.id === 'string' ? m.id : 'msg',
    object: 'chat.completion',
    created,
    model: typeof m.model === 'string' ? m.model : '',
    choices: [
      {
        index: 0,
        message: { role: 'assistant', content: text || (calls.length ? null : ''), refusal: null, ...(calls.length ? { tool_calls: calls } : {}) },
        logprobs: null,
        finish_reason: finishReason(m.stop_reason),
      },
    ],
    ...(counted ? { usage: counted } : {}),
  });
}

/** OpenAI's `error.type` for an Anthropic error type (their names mostly agree). */
function errorType(type: unknown, status: number): string {
  if (typeof type === 'string' && /^[a-z_]{1,64}$/.test(type)) return type;
  return status >= 500 ? 'server_error' : 'invalid_request_error';
}

/** The OpenAI `error` object of an Anthropic error ({type: "error", error: {type, message}}). */
export function openAiError(e: unknown, status: number): { message: string; type: string; param: null; code: string | null } {
  const inner = isObj(e) && isObj(e.error) ? e.error : null;
  const message = inner && typeof inner.message === 'string' ? inner.message : `the backend answered ${status}`;
  return { message, type: errorType(inner?.type, status), param: null, code: inner && typeof inner.type === 'string' ? errorType(inner.type, status) : null };
}

/** An Anthropic error body (or whatever the backend sent with its status) in OpenAI's shape. */
export function errorBody(raw: Buffer, status: number): string {
  let parsed: unknown = null;
  try {
    parsed = JSON.parse(raw.toString('utf8'));
  } catch {
    // not JSON: the status speaks for itself
  }
  return JSON.stringify({ error: openAiError(parsed, status) });
}
