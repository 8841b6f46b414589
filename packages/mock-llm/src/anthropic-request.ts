// Anthropic's Messages API request (POST /v1/messages), reduced to what the mock needs and
// checked as strictly as Anthropic checks it: unknown top-level fields are refused ("Extra
// inputs are not permitted"), so a gateway translating OpenAI requests cannot leak an OpenAI
// field through unnoticed.
import type { ChatRequest } from './request.js';

export interface MessagesRequest extends ChatRequest {
  readonly stopSequences: readonly string[];
  /** The tool the reply calls (tool_choice any or tool), or null for a text reply. */
  readonly toolCall: string | null;
}

export interface AnthropicError {
  readonly type: string;
  readonly message: string;
}

export type MessagesParse = { ok: true; request: MessagesRequest } | { ok: false; error: AnthropicError };

const FIELDS = new Set(['model', 'messages', 'max_tokens', 'system', 'stream', 'stop_sequences', 'temperature', 'top_p', 'top_k', 'tools', 'tool_choice', 'metadata', 'thinking', 'service_tier']);
const BLOCKS = new Set(['text', 'image', 'document', 'tool_use', 'tool_result', 'thinking', 'redacted_thinking']);

class Bad extends Error {}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Text of a content value: a string or an array of blocks (text, and the text inside tool results). */
function blocksText(content: unknown, where: string): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) throw new Bad(`${where}: Input should be a valid string or list of content blocks`);
  let text = '';
  content.forEach((block: unknown, i) => {
    if (!isRecord(block) || typeof block.type !== 'string' || !BLOCKS.has(block.type)) throw new Bad(`${where}.${i}: unknown content block type`);
    if (block.type === 'text') {
      if (typeof block.text !== 'string') throw new Bad(`${where}.${i}.text: Field required`);
      text += block.text;
    } else if (block.type === 'tool_result') {
      if (typeof block.tool_use_id !== 'string') throw new Bad(`${where}.${i}.tool_use_id: Field required`);
      if (block.content !== undefined) text += blocksText(block.content, `${where}.${i}.content`);
    } else if (block.type === 'tool_use') {
      if (typeof block.id !== 'string' || typeof block.name !== 'string' || !isRecord(block.input)) throw new Bad(`${where}.${i}: tool_use needs id, name and an input object`);
    }
  });
  return text;
}

function toolCall(body: Record<string, unknown>): string | null {
  const { tools, tool_choice: choice } = body;
  if (tools !== undefined) {
    if (!Array.isArray(tools)) throw new Bad('tools: Input should be a valid list');
    tools.forEach((t: unknown, i) => {
      if (!isRecord(t) || typeof t.name !== 'string' || !isRecord(t.input_schema)) throw new Bad(`tools.${i}: a tool needs a name and an input_schema object`);
    });
  }
  if (choice === undefined) return null;
  if (!isRecord(choice) || !['auto', 'any', 'tool', 'none'].includes(choice.type as string)) throw new Bad('tool_choice: type must be auto, any, tool or none');
  const list = (tools ?? []) as { name: string }[];
  if (choice.type === 'tool') {
    if (!list.some((t) => t.name === choice.name)) throw new Bad(`tool_choice.name: no tool named ${String(choice.name)}`);
    return choice.name as string;
  }
  if (choice.type === 'any') {
    if (list.length === 0) throw new Bad('tool_choice: any needs tools');
    return list[0]!.name;
  }
  return null;
}

function parse(body: Record<string, unknown>): MessagesRequest {
  for (const key of Object.keys(body)) if (!FIELDS.has(key)) throw new Bad(`${key}: Extra inputs are not permitted`);
  const { model, messages, max_tokens: maxTokens, system, stream, stop_sequences: stops } = body;
  if (typeof model !== 'string' || model === '') throw new Bad('model: Field required');
  if (typeof maxTokens !== 'number' || !Number.isInteger(maxTokens) || maxTokens < 1) throw new Bad('max_tokens: Field required (an integer of at least 1)');
  if (!Array.isArray(messages) || messages.length === 0) throw new Bad('messages: Field required (at least one message)');
  if (stream !== undefined && typeof stream !== 'boolean') throw new Bad('stream: Input should be a valid boolean');
  if (stops !== undefined && (!Array.isArray(stops) || !stops.every((s) => typeof s === 'string'))) throw new Bad('stop_sequences: Input should be a list of strings');
  let promptChars = system === undefined ? 0 : blocksText(system, 'system').length;
  let lastUserText = '';
  messages.forEach((m: unknown, i) => {
    if (!isRecord(m) || (m.role !== 'user' && m.role !== 'assistant')) throw new Bad(`messages.${i}.role: Input should be 'user' or 'assistant'`);
    const text = blocksText(m.content, `messages.${i}.content`);
    promptChars += text.length;
    if (m.role === 'user') lastUserText = text;
  });
  return {
    model,
    stream: stream === true,
    includeUsage: true,
    maxTokens,
    promptChars,
    lastUserText,
    stopSequences: (stops ?? []),
    toolCall: toolCall(body),
  };
}

export function parseMessagesRequest(raw: Buffer): MessagesParse {
  let body: unknown;
  try {
    body = JSON.parse(raw.toString('utf8'));
  } catch {
    return { ok: false, error: { type: 'invalid_request_error', message: 'There was an issue with your request body: it is not valid JSON.' } };
  }
  if (!isRecord(body)) return { ok: false, error: { type: 'invalid_request_error', message: 'The request body must be a JSON object.' } };
  try {
    return { ok: true, request: parse(body) };
  } catch (err) {
    if (err instanceof Bad) return { ok: false, error: { type: 'invalid_request_error', message: err.message } };
    throw err;
  }
}
