import { invalidRequest, type OpenAiError } from './errors.js';

/** A chat-completions request reduced to what the mock needs. */
export interface ChatRequest {
  model: string;
  stream: boolean;
  includeUsage: boolean;
  /** `max_completion_tokens` or the older `max_tokens`; caps the default completion length. */
  maxTokens: number | undefined;
  /** Characters of text across all messages; the default prompt token count derives from it. */
  promptChars: number;
  /** Text of the last `user` message; the reply echoes its words. */
  lastUserText: string;
}

export type ParseResult = { ok: true; request: ChatRequest } | { ok: false; error: OpenAiError };

const ROLES = ['system', 'developer', 'user', 'assistant', 'tool', 'function'] as const;

/** Thrown inside the parser and turned into a 400 body; never escapes this module. */
class BadRequest extends Error {
  constructor(
    message: string,
    readonly param: string | null,
  ) {
    super(message);
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'object') return 'an object';
  return `a ${typeof value}`;
}

function wrongType(param: string, expected: string, value: unknown, fix: string): BadRequest {
  return new BadRequest(`Invalid type for '${param}': expected ${expected}, but got ${describe(value)} instead. ${fix}`, param);
}

function missing(param: string, fix: string): BadRequest {
  return new BadRequest(`Missing required parameter: '${param}'. ${fix}`, param);
}

/** Text of a message's `content`: a string, an array of content parts, or null. */
function contentText(content: unknown, param: string): string {
  if (typeof content === 'string') return content;
  if (content === null) return '';
  if (!Array.isArray(content)) {
    throw wrongType(param, 'a string or an array of content parts', content, 'Send the message text as a string.');
  }
  let text = '';
  content.forEach((part: unknown, index) => {
    if (!isRecord(part)) {
      throw wrongType(`${param}[${index}]`, 'an object', part, 'Send content parts like {"type": "text", "text": "..."}.');
    }
    if (part.type === 'text' && typeof part.text === 'string') text += part.text;
  });
  return text;
}

function optionalBoolean(body: Record<string, unknown>, param: string): boolean {
  const value = body[param];
  if (value === undefined || value === null) return false;
  if (typeof value !== 'boolean') throw wrongType(param, 'a boolean', value, `Send ${param}: true or false, or leave it out.`);
  return value;
}

function optionalMaxTokens(body: Record<string, unknown>, param: string): number | undefined {
  const value = body[param];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1) {
    throw new BadRequest(`Invalid '${param}': expected an integer of at least 1. Send a positive integer or leave it out.`, param);
  }
  return value;
}

function parseBody(body: Record<string, unknown>): ChatRequest {
  const { model, messages } = body;
  if (model === undefined || model === null) throw missing('model', 'Send the model name as a string, e.g. "model": "mock-gpt".');
  if (typeof model !== 'string') throw wrongType('model', 'a string', model, 'Send the model name as a string.');
  if (model === '') throw new BadRequest("Invalid 'model': empty string. Send a model name.", 'model');

  if (messages === undefined || messages === null) {
    throw missing('messages', 'Send an array of messages, e.g. "messages": [{"role": "user", "content": "Hello"}].');
  }
  if (!Array.isArray(messages)) {
    throw wrongType('messages', 'an array of objects', messages, 'Send e.g. [{"role": "user", "content": "Hello"}].');
  }
  if (messages.length === 0) {
    throw new BadRequest("Invalid 'messages': empty array. Expected an array with minimum length 1; send at least one message.", 'messages');
  }

  let promptChars = 0;
  let lastUserText = '';
  messages.forEach((message: unknown, index) => {
    const param = `messages[${index}]`;
    if (!isRecord(message)) {
      throw wrongType(param, 'an object', message, 'Send each message as {"role": "user", "content": "..."}.');
    }
    const { role, content } = message;
    if (role === undefined) throw missing(`${param}.role`, `Set role to one of: ${ROLES.join(', ')}.`);
    if (typeof role !== 'string') throw wrongType(`${param}.role`, 'a string', role, `Set role to one of: ${ROLES.join(', ')}.`);
    if (!ROLES.some((known) => known === role)) {
      throw new BadRequest(`Invalid value for '${param}.role': '${role}'. Supported values are: ${ROLES.join(', ')}.`, `${param}.role`);
    }
    // Only assistant messages may leave content out (they carry tool_calls instead), as with OpenAI.
    if (content === undefined && role !== 'assistant') {
      throw missing(`${param}.content`, 'Send the message text as a string.');
    }
    const text = content === undefined ? '' : contentText(content, `${param}.content`);
    promptChars += text.length;
    if (role === 'user') lastUserText = text;
  });

  const stream = optionalBoolean(body, 'stream');
  let includeUsage = false;
  const streamOptions = body.stream_options;
  if (streamOptions !== undefined && streamOptions !== null) {
    if (!isRecord(streamOptions)) {
      throw wrongType('stream_options', 'an object', streamOptions, 'Send e.g. "stream_options": {"include_usage": true}.');
    }
    if (!stream) {
      throw new BadRequest("The 'stream_options' parameter is only allowed when 'stream' is enabled. Set \"stream\": true or leave stream_options out.", 'stream_options');
    }
    const include = streamOptions.include_usage;
    if (include !== undefined && include !== null && typeof include !== 'boolean') {
      throw wrongType('stream_options.include_usage', 'a boolean', include, 'Send true or false.');
    }
    includeUsage = include === true;
  }

  const maxCompletionTokens = optionalMaxTokens(body, 'max_completion_tokens');
  const legacyMaxTokens = optionalMaxTokens(body, 'max_tokens');
  const maxTokens = maxCompletionTokens ?? legacyMaxTokens;
  return { model, stream, includeUsage, maxTokens, promptChars, lastUserText };
}

export function parseChatRequest(raw: Buffer): ParseResult {
  let body: unknown;
  try {
    body = JSON.parse(raw.toString('utf8'));
  } catch {
    return {
      ok: false,
      error: invalidRequest(
        'We could not parse the JSON body of your request. Send a JSON object like {"model": "mock-gpt", "messages": [{"role": "user", "content": "Hello"}]} with content-type: application/json.',
      ),
    };
  }
  if (!isRecord(body)) {
    return { ok: false, error: invalidRequest(`The request body must be a JSON object, but got ${describe(body)}.`) };
  }
  try {
    return { ok: true, request: parseBody(body) };
  } catch (error) {
    if (error instanceof BadRequest) return { ok: false, error: invalidRequest(error.message, error.param) };
    throw error;
  }
}
