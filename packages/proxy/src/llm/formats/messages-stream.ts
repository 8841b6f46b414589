// Anthropic's Messages stream as OpenAI `chat.completion.chunk`s, event by event as they arrive:
//   message_start              -> the role chunk (id and model kept for every chunk);
//   content_block_start        -> for a tool_use block, the tool call's id and name;
//   content_block_delta        -> text as `content`, input_json_delta as the tool call's arguments;
//   message_delta              -> the chunk with finish_reason; its usage is read;
//   message_stop               -> the usage-only chunk (when wanted), then `data: [DONE]`;
//   ping, content_block_stop, thinking and unknown events -> nothing;
//   error                      -> a final chunk {"error": {...}} (OpenAI's stream error), [DONE].
// What the backend sends that is not an Anthropic stream (data that is not JSON or has no type,
// an event longer than the SSE bound, a stream that ends before message_stop) ends the client's
// stream with a final error chunk naming TG_FORMAT_BAD_RESPONSE; the rest is ignored.
//
// The translation is also the stream's usage reader (a UsageSource): the usage meter takes the
// usage and the generated text from here rather than parsing the chunks made here again. What it
// reports is what the client's stream says: the usage of the usage chunk (made at message_stop),
// none for a stream that ended before it (its tokens are then estimated from the text).
import { SseParser, type SseEvent } from '@tollgate/kit';
import { ERRORS } from '../../errors.js';
import { CompletionLiterals } from '../completion-text.js';
import type { UsageResult, UsageSource } from '../usage-meter.js';
import { AnthropicUsage } from './anthropic-usage.js';
import { chatUsage, finishReason, openAiError } from './messages-to-chat.js';
import { isSilentEvent, textDeltaLiteral } from './text-delta.js';

/** Content blocks one message may open; beyond, the stream is refused as garbage (bounds the tool index map). */
export const MAX_CONTENT_BLOCKS = 4096;

export const BAD_RESPONSE_CODE = ERRORS.formatBadResponse.code;

type Obj = Record<string, unknown>;

function isObj(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

const DONE = 'data: [DONE]\n\n';
/** The end of a chunk that does not finish the choice. */
const OPEN_TAIL = ',"logprobs":null,"finish_reason":null}]}\n\n';
const EMPTY = Buffer.alloc(0);

export interface StreamTranslationOptions {
  /** End with the usage-only chunk (`choices: []`): the client asked for it. */
  readonly includeUsage: boolean;
  /** config.maxSseLineBytes: a longer event is not parsed. */
  readonly maxEventBytes: number;
  /** Chunks' `created`. */
  readonly created: number;
}

export class MessagesStreamTranslator implements UsageSource {
  readonly #parser: SseParser;
  readonly #usage = new AnthropicUsage();
  /** The generated text, for the estimate of a stream whose usage does not come. */
  readonly #text = new CompletionLiterals();
  /** total_tokens of the usage chunk, once message_stop made it. */
  #reported: number | null = null;
  /** The start of every chunk up to its delta: id, object, created, model (set at message_start). */
  #head = '';
  #id = '';
  #model = '';
  /** Anthropic content block index -> OpenAI tool call index, for tool_use blocks. */
  readonly #tools = new Map<number, number>();
  #blocks = 0;
  #state: 'before' | 'open' | 'done' = 'before';
  /** The chunks made since the last drain. */
  #out = '';

  constructor(private readonly options: StreamTranslationOptions) {
    this.#parser = new SseParser({ maxLineBytes: options.maxEventBytes });
  }

  /** The chunks for the backend's bytes (possibly none yet). */
  transform(chunk: Buffer): Buffer {
    if (this.#finished()) return EMPTY;
    for (const item of this.#parser.push(chunk)) {
      if (this.#finished()) break;
      if (item.type === 'passthrough') this.#fail(`an event longer than ${this.options.maxEventBytes} bytes (config.maxSseLineBytes)`);
      else this.#event(item);
    }
    return this.#drain();
  }

  usage(): UsageResult {
    if (this.#reported !== null) return { reported: this.#reported, completionText: '', extraCompletionChars: 0 };
    const text = this.#text.text();
    return { reported: null, completionText: text.text, extraCompletionChars: text.extraChars };
  }

  /** What ends the client's stream when the backend's has ended. */
  flush(): Buffer {
    if (!this.#finished()) {
      for (const item of this.#parser.end()) if (item.type === 'event' && !this.#finished()) this.#event(item);
      if (!this.#finished()) this.#fail('the stream ended before message_stop');
    }
    return this.#drain();
  }

  // A method, not a field test: the state changes inside the calls of a loop.
  #finished(): boolean {
    return this.#state === 'done';
  }

  #drain(): Buffer {
    if (this.#out.length === 0) return EMPTY;
    const text = this.#out;
    this.#out = '';
    return Buffer.from(text);
  }

  #chunk(delta: string, finish: string | null): void {
    this.#out += this.#head + delta + (finish === null ? OPEN_TAIL : `,"logprobs":null,"finish_reason":${JSON.stringify(finish)}}]}\n\n`);
  }

  #end(): void {
    this.#state = 'done';
    this.#out += DONE;
  }

  /** A final error chunk (OpenAI's stream error shape) and the end of the stream. */
  #error(error: { message: string; type: string; param: null; code: string | null }): void {
    this.#out += `data: ${JSON.stringify({ error })}\n\n`;
    this.#end();
  }

  #fail(why: string): void {
    this.#error({ message: `the backend's stream is not a valid Anthropic Messages stream: ${why}`, type: 'server_error', param: null, code: BAD_RESPONSE_CODE });
  }

  #event(event: SseEvent): void {
    if (event.data === null) return; // a comment or keep-alive
    if (this.#state === 'open') {
      // Most events: a text delta, its text's literal passed on unparsed (./text-delta.ts).
      const literal = textDeltaLiteral(event.data);
      if (literal !== null) {
        this.#text.addLiteral(literal);
        this.#chunk(`{"content":${literal}}`, null);
        return;
      }
      if (isSilentEvent(event.data)) return;
    }
    let o: unknown;
    try {
      o = JSON.parse(event.data);
    } catch {
      this.#fail(`an event's data is not JSON (${event.event ?? 'unnamed event'})`);
      return;
    }
    if (!isObj(o) || typeof o.type !== 'string') {
      this.#fail('an event has no type');
      return;
    }
    if (o.type === 'error') {
      this.#error(openAiError(o, 500));
      return;
    }
    if (this.#state === 'before') {
      if (o.type === 'ping') return;
      if (o.type !== 'message_start' || !isObj(o.message)) {
        this.#fail(`${o.type} before message_start`);
        return;
      }
      this.#start(o.message);
      return;
    }
    this.#usage.read(o, this.#text.add);
    switch (o.type) {
      case 'content_block_start':
        this.#blockStart(o);
        return;
      case 'content_block_delta':
        this.#delta(o);
        return;
      case 'message_delta':
        this.#chunk('{}', finishReason(isObj(o.delta) ? o.delta.stop_reason : null));
        return;
      case 'message_stop':
        this.#stop();
        return;
      // ping, content_block_stop, and event types added later: nothing to send
    }
  }

  #start(message: Obj): void {
    this.#state = 'open';
    this.#id = typeof message.id === 'string' ? message.id : 'msg';
    this.#model = typeof message.model === 'string' ? message.model : '';
    this.#usage.readUsage(message.usage);
    this.#head = `data: {"id":${JSON.stringify(this.#id)},"object":"chat.completion.chunk","created":${this.options.created},"model":${JSON.stringify(this.#model)},"choices":[{"index":0,"delta":`;
    this.#chunk('{"role":"assistant","content":""}', null);
  }

  #blockStart(o: Obj): void {
    const block = o.content_block;
    if (typeof o.index !== 'number' || !isObj(block)) {
      this.#fail('content_block_start without an index or a content_block');
      return;
    }
    if (++this.#blocks > MAX_CONTENT_BLOCKS) {
      this.#fail(`more than ${MAX_CONTENT_BLOCKS} content blocks`);
      return;
    }
    if (block.type === 'tool_use') {
      const call = this.#tools.size;
      this.#tools.set(o.index, call);
      const id = typeof block.id === 'string' ? block.id : `call_${call}`;
      const name = typeof block.name === 'string' ? block.name : '';
      this.#chunk(`{"tool_calls":[{"index":${call},"id":${JSON.stringify(id)},"type":"function","function":{"name":${JSON.stringify(name)},"arguments":""}}]}`, null);
    } else if (block.type === 'text' && typeof block.text === 'string' && block.text) {
      this.#chunk(`{"content":${JSON.stringify(block.text)}}`, null);
    }
  }

  #delta(o: Obj): void {
    const d = o.delta;
    if (!isObj(d)) {
      this.#fail('content_block_delta without a delta');
      return;
    }
    if (d.type === 'text_delta' && typeof d.text === 'string') this.#chunk(`{"content":${JSON.stringify(d.text)}}`, null);
    else if (d.type === 'input_json_delta' && typeof d.partial_json === 'string') {
      const call = typeof o.index === 'number' ? this.#tools.get(o.index) : undefined;
      if (call === undefined) {
        this.#fail('input_json_delta for a block that is not a tool_use');
        return;
      }
      this.#chunk(`{"tool_calls":[{"index":${call},"function":{"arguments":${JSON.stringify(d.partial_json)}}}]}`, null);
    }
    // thinking, signature and citations deltas have no place in a chat completion chunk
  }

  #stop(): void {
    const usage = chatUsage(this.#usage);
    this.#reported = usage?.total_tokens ?? null;
    if (this.options.includeUsage && usage) {
      this.#out += `data: ${JSON.stringify({ id: this.#id, object: 'chat.completion.chunk', created: this.options.created, model: this.#model, choices: [], usage })}\n\n`;
    }
    this.#end();
  }
}
