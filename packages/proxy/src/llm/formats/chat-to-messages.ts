// An OpenAI Chat Completions request as Anthropic's Messages API request. What has an Anthropic
// counterpart is translated; a field that has none and would change the answer (n > 1,
// logprobs, response_format, ...) is refused with a FormatRefusal naming it, never dropped
// silently; a field that only describes the caller (user, store: false) is dropped or mapped.
// The client's body is already bounded in size and depth (request-body.ts).
//
// - system and developer messages, wherever they are, become `system` (joined by blank lines);
// - user and assistant messages keep their order; consecutive ones of the same role are merged,
//   as Anthropic wants turns to alternate; tool messages become tool_result blocks of a user
//   turn; assistant tool_calls become tool_use blocks (their arguments must be a JSON object);
// - max_completion_tokens or max_tokens become max_tokens, DEFAULT_MAX_TOKENS when neither is
//   given (Anthropic requires it);
// - stop becomes stop_sequences; temperature (Anthropic's range is 0 to 1), top_p, stream;
// - tools of type function become {name, description, input_schema}; tool_choice auto, none,
//   required (any) or a named function (tool); parallel_tool_calls: false becomes
//   disable_parallel_tool_use.

/** Anthropic requires max_tokens; a client that leaves it out gets this many. */
export const DEFAULT_MAX_TOKENS = 4096;

/** A field of the request that cannot be translated: answered 400 in OpenAI's error shape. */
export class FormatRefusal extends Error {
  constructor(
    readonly param: string,
    message: string,
  ) {
    super(message);
    this.name = 'FormatRefusal';
  }
}

type Obj = Record<string, unknown>;

interface Block {
  readonly type: string;
  readonly [key: string]: unknown;
}

interface Turn {
  role: 'user' | 'assistant';
  content: Block[];
}

export interface MessagesRequest {
  /** The Anthropic request body. */
  readonly body: Obj;
  readonly stream: boolean;
  /** stream_options.include_usage as the client sent it. */
  readonly includeUsage: boolean;
}

function isObj(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function describe(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  return typeof v === 'object' ? 'an object' : `a ${typeof v}`;
}

function wrongType(param: string, expected: string, v: unknown): FormatRefusal {
  return new FormatRefusal(param, `'${param}' must be ${expected}, not ${describe(v)}`);
}

function unsupported(param: string, why: string): FormatRefusal {
  return new FormatRefusal(param, `'${param}' is not supported by this route's Anthropic backend: ${why}`);
}

/** Fields passed on or mapped. */
const TRANSLATED = new Set(['model', 'messages', 'max_tokens', 'max_completion_tokens', 'stream', 'stream_options', 'stop', 'temperature', 'top_p', 'tools', 'tool_choice', 'parallel_tool_calls', 'user']);

/**
 * Fields without a counterpart that are accepted at their neutral value only; any other value
 * is refused (the answer would not be what the client asked for).
 */
const NEUTRAL: Record<string, (v: unknown) => boolean> = {
  n: (v) => v === 1,
  logprobs: (v) => v === false,
  top_logprobs: (v) => v === 0,
  presence_penalty: (v) => v === 0,
  frequency_penalty: (v) => v === 0,
  logit_bias: (v) => isObj(v) && Object.keys(v).length === 0,
  response_format: (v) => isObj(v) && v.type === 'text',
  store: (v) => v === false,
  modalities: (v) => Array.isArray(v) && v.length === 1 && v[0] === 'text',
  service_tier: (v) => v === 'auto' || v === 'default',
};

function textOf(content: unknown, param: string): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) throw wrongType(param, 'a string or an array of text parts', content);
  return content
    .map((part: unknown, i) => {
      if (!isObj(part) || part.type !== 'text' || typeof part.text !== 'string') throw unsupported(`${param}[${i}]`, 'only text parts are translated here');
      return part.text;
    })
    .join('\n');
}

/** An image_url part as an Anthropic image block: a data: URL (base64) or an http(s) URL. */
function imageBlock(part: Obj, param: string): Block {
  const image = part.image_url;
  const url = isObj(image) ? image.url : undefined;
  if (typeof url !== 'string') throw wrongType(`${param}.image_url.url`, 'a string', url);
  const data = /^data:([a-z]+\/[-+.a-z0-9]+);base64,/i.exec(url);
  if (data) return { type: 'image', source: { type: 'base64', media_type: data[1]!.toLowerCase(), data: url.slice(data[0].length) } };
  if (/^https?:\/\//i.test(url)) return { type: 'image', source: { type: 'url', url } };
  throw unsupported(`${param}.image_url.url`, 'an image is a data: URL (base64) or an http(s) URL');
}

function userBlocks(content: unknown, param: string): Block[] {
  if (typeof content === 'string') return content ? [{ type: 'text', text: content }] : [];
  if (!Array.isArray(content)) throw wrongType(param, 'a string or an array of content parts', content);
  return content.flatMap((part: unknown, i): Block[] => {
    const p = `${param}[${i}]`;
    if (!isObj(part)) throw wrongType(p, 'an object', part);
    if (part.type === 'text') {
      if (typeof part.text !== 'string') throw wrongType(`${p}.text`, 'a string', part.text);
      return part.text ? [{ type: 'text', text: part.text }] : [];
    }
    if (part.type === 'image_url') return [imageBlock(part, p)];
    throw unsupported(`${p}.type`, `content parts of type ${JSON.stringify(part.type)} are not translated (text and image_url are)`);
  });
}

function toolUseBlocks(calls: unknown, param: string): Block[] {
  if (calls === undefined || calls === null) return [];
  if (!Array.isArray(calls)) throw wrongType(param, 'an array', calls);
  return calls.map((call: unknown, i): Block => {
    const p = `${param}[${i}]`;
    if (!isObj(call) || (call.type !== undefined && call.type !== 'function')) throw unsupported(p, 'only tool calls of type function are translated');
    const fn = call.function;
    if (typeof call.id !== 'string' || !isObj(fn) || typeof fn.name !== 'string') throw new FormatRefusal(p, `'${p}' needs an id and function.name`);
    let input: unknown = {};
    if (typeof fn.arguments === 'string' && fn.arguments.trim() !== '') {
      try {
        input = JSON.parse(fn.arguments);
      } catch {
        input = null;
      }
    }
    if (!isObj(input)) throw new FormatRefusal(`${p}.function.arguments`, `'${p}.function.arguments' must be a JSON object encoded as a string`);
    return { type: 'tool_use', id: call.id, name: fn.name, input };
  });
}

function toolResult(m: Obj, param: string): Block {
  if (typeof m.tool_call_id !== 'string') throw wrongType(`${param}.tool_call_id`, 'a string', m.tool_call_id);
  return { type: 'tool_result', tool_use_id: m.tool_call_id, content: textOf(m.content ?? '', `${param}.content`) };
}

function translateMessages(messages: unknown): { system: string[]; turns: Turn[] } {
  if (!Array.isArray(messages) || messages.length === 0) throw new FormatRefusal('messages', "'messages' must be a non-empty array of messages");
  const system: string[] = [];
  const turns: Turn[] = [];
  const add = (role: Turn['role'], blocks: Block[]): void => {
    if (blocks.length === 0) return;
    const last = turns[turns.length - 1];
    if (last?.role === role) last.content.push(...blocks);
    else turns.push({ role, content: blocks });
  };
  messages.forEach((m: unknown, i) => {
    const param = `messages[${i}]`;
    if (!isObj(m)) throw wrongType(param, 'an object', m);
    switch (m.role) {
      case 'system':
      case 'developer':
        system.push(textOf(m.content, `${param}.content`));
        return;
      case 'user':
        add('user', userBlocks(m.content, `${param}.content`));
        return;
      case 'assistant': {
        const text = m.content === undefined || m.content === null ? '' : textOf(m.content, `${param}.content`);
        add('assistant', [...(text ? [{ type: 'text', text }] : []), ...toolUseBlocks(m.tool_calls, `${param}.tool_calls`)]);
        return;
      }
      case 'tool':
        add('user', [toolResult(m, param)]);
        return;
      default:
        throw unsupported(`${param}.role`, `role ${JSON.stringify(m.role)} is not translated (system, developer, user, assistant and tool are)`);
    }
  });
  if (turns.length === 0) throw new FormatRefusal('messages', "'messages' has no user or assistant message with content");
  return { system, turns };
}

function tokens(o: Obj): number {
  for (const key of ['max_completion_tokens', 'max_tokens']) {
    const v = o[key];
    if (v === undefined || v === null) continue;
    if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 1) throw wrongType(key, 'an integer of at least 1', v);
    return v;
  }
  return DEFAULT_MAX_TOKENS;
}

function stopSequences(stop: unknown): string[] | undefined {
  if (stop === undefined || stop === null) return undefined;
  const list = typeof stop === 'string' ? [stop] : stop;
  if (!Array.isArray(list) || !list.every((s) => typeof s === 'string')) throw wrongType('stop', 'a string or an array of strings', stop);
  return list.length ? list : undefined;
}

function unit(o: Obj, key: 'temperature' | 'top_p'): number | undefined {
  const v = o[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number' || !Number.isFinite(v)) throw wrongType(key, 'a number', v);
  if (v < 0 || v > 1) throw unsupported(key, `Anthropic takes ${key} from 0 to 1, got ${v}`);
  return v;
}

function translateTools(tools: unknown): Obj[] | undefined {
  if (tools === undefined || tools === null) return undefined;
  if (!Array.isArray(tools)) throw wrongType('tools', 'an array', tools);
  return tools.map((t: unknown, i): Obj => {
    const p = `tools[${i}]`;
    if (!isObj(t) || t.type !== 'function' || !isObj(t.function)) throw unsupported(p, 'only tools of type function are translated');
    const fn = t.function;
    if (typeof fn.name !== 'string') throw wrongType(`${p}.function.name`, 'a string', fn.name);
    if (fn.parameters !== undefined && !isObj(fn.parameters)) throw wrongType(`${p}.function.parameters`, 'a JSON schema object', fn.parameters);
    return {
      name: fn.name,
      ...(typeof fn.description === 'string' ? { description: fn.description } : {}),
      input_schema: fn.parameters ?? { type: 'object', properties: {} },
    };
  });
}

function toolChoice(choice: unknown, parallel: unknown): Obj | undefined {
  if (parallel !== undefined && parallel !== null && typeof parallel !== 'boolean') throw wrongType('parallel_tool_calls', 'a boolean', parallel);
  const single = parallel === false ? { disable_parallel_tool_use: true } : {};
  if (choice === undefined || choice === null) return parallel === false ? { type: 'auto', ...single } : undefined;
  if (choice === 'auto') return { type: 'auto', ...single };
  if (choice === 'required') return { type: 'any', ...single };
  if (choice === 'none') return { type: 'none' };
  if (isObj(choice) && choice.type === 'function' && isObj(choice.function) && typeof choice.function.name === 'string') return { type: 'tool', name: choice.function.name, ...single };
  throw unsupported('tool_choice', 'tool_choice is auto, none, required or {"type": "function", "function": {"name": ...}}');
}

/** Translates a parsed Chat Completions body; throws FormatRefusal naming the first field it cannot translate. */
export function chatToMessages(o: Obj): MessagesRequest {
  for (const key of Object.keys(o)) {
    if (TRANSLATED.has(key)) continue;
    const neutral = NEUTRAL[key];
    const v = o[key];
    if (v === null || (neutral && neutral(v))) continue;
    throw unsupported(key, neutral ? 'only its default value is accepted' : 'the field has no Anthropic counterpart');
  }
  if (typeof o.model !== 'string' || o.model === '') throw wrongType('model', 'a non-empty string', o.model);
  if (o.stream !== undefined && o.stream !== null && typeof o.stream !== 'boolean') throw wrongType('stream', 'a boolean', o.stream);
  const stream = o.stream === true;
  const opts = o.stream_options;
  if (opts !== undefined && opts !== null && !isObj(opts)) throw wrongType('stream_options', 'an object', opts);
  const includeUsage = stream && isObj(opts) && opts.include_usage === true;
  const { system, turns } = translateMessages(o.messages);
  const body: Obj = { model: o.model, max_tokens: tokens(o), messages: turns };
  if (system.length) body.system = system.join('\n\n');
  if (stream) body.stream = true;
  const stops = stopSequences(o.stop);
  if (stops) body.stop_sequences = stops;
  const temperature = unit(o, 'temperature');
  if (temperature !== undefined) body.temperature = temperature;
  const topP = unit(o, 'top_p');
  if (topP !== undefined) body.top_p = topP;
  const tools = translateTools(o.tools);
  if (tools) body.tools = tools;
  const choice = toolChoice(o.tool_choice, o.parallel_tool_calls);
  if (choice) body.tool_choice = choice;
  if (typeof o.user === 'string' && o.user) body.metadata = { user_id: o.user };
  return { body, stream, includeUsage };
}
