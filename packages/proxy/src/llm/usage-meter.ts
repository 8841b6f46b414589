// The response side of a metered LLM route: reads `usage.total_tokens` from a JSON response,
// or from the events of an SSE stream (Anthropic's usage, for a client speaking its Messages
// API: formats/anthropic-usage.ts), while the bytes go on to the client unchanged and
// undelayed. The only change: when the gateway asked for usage on the client's behalf, the
// usage-only chunk (`choices: []`) is removed, event by event. Everything generated (content,
// reasoning, refusals, tool-call arguments) is kept for estimation in case the backend reports
// no usage or the response is cut short. Malformed chunks never break the stream.
//
// The chunks of an OpenAI stream that carry no usage (every one but the last, as a rule) are not
// parsed as they pass: what they hold is generated text, needed only for an estimate, so they
// are kept unparsed (at most MAX_UNPARSED_BYTES a response; past it they are parsed as they
// come) and read at the end only when no usage came. Whether a chunk may carry usage is decided
// on its text: in valid JSON `"usage"` with unescaped quotes is a member name (a string's quotes
// are escaped), so a chunk whose every `"usage"` is followed by `: null` has none to read; any
// other chunk is parsed at once, and the usage chunk the gateway asked for is removed as before.
//
// A response translated from another API's stream (llm/formats/) is not parsed again: the
// translation read the usage and the text from the backend's events as it made the client's, and
// the meter takes them from it (readFrom()).
//
// Bounds, since a backend is an outside input too:
// - SSE is parsed by the shared incremental parser (linear in the bytes, multi-byte UTF-8
//   split across chunks intact); an event longer than `maxEventBytes` stops the parsing for
//   that stream: the rest is passed through as it comes and the tokens are estimated;
// - a JSON body is held up to MAX_HELD_BYTES and parsed at its end; a larger one is read as
//   it passes (json-usage-reader.ts), keeping only its usage and generated text;
// - a compressed response (a backend that ignored `accept-encoding: identity`) is passed
//   through byte for byte and a copy, up to MAX_HELD_BYTES, is decompressed at its end to
//   read the usage (nothing is removed from a compressed stream).
import { brotliDecompressSync, gunzipSync, inflateSync } from 'node:zlib';
import { SseParser, type SseEvent } from '@tollgate/kit';
import { CompletionText } from './completion-text.js';
import { JsonUsageReader, type JsonUsageSink } from './json-usage-reader.js';
import { AnthropicUsage } from './formats/anthropic-usage.js';
import type { UsageFormat } from './formats/format.js';

export const MAX_HELD_BYTES = 4 * 1024 * 1024;
/** Decompressed output of a held compressed body is capped too (a small body can inflate hugely). */
const MAX_INFLATED_BYTES = 16 * 1024 * 1024;

export interface UsageResult {
  /** usage.total_tokens as reported, null when the backend reported none (or it could not be read). */
  readonly reported: number | null;
  /** The generated text, for the estimate: a UsageSource leaves it empty when `reported` is set. */
  readonly completionText: string;
  /** Completion characters beyond the kept text (estimated at about 4 characters a token). */
  readonly extraCompletionChars: number;
}

/** Chunks of a stream held unparsed (for their text, should no usage come), per response, each counted with CHUNK_COST. */
export const MAX_UNPARSED_BYTES = 32 * 1024;
/** What holding one chunk costs beside its characters (a stream of tiny chunks holds few of them). */
const CHUNK_COST = 64;

/** The chunk's text shows no usage to read: no `"usage"` member, or only `"usage": null`. */
export function carriesNoUsage(data: string): boolean {
  for (let at = data.indexOf('"usage"'); at !== -1; at = data.indexOf('"usage"', at + 7)) {
    let i = skipSpace(data, at + 7);
    if (data.charCodeAt(i) !== 0x3a) return false;
    i = skipSpace(data, i + 1);
    if (!data.startsWith('null', i)) return false;
  }
  return true;
}

function skipSpace(data: string, i: number): number {
  for (let c = data.charCodeAt(i); c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d; c = data.charCodeAt(++i));
  return i;
}

/** What a format translation read of a response it translated itself (a stream). */
export interface UsageSource {
  usage(): UsageResult;
}

type Mode = 'json' | 'sse' | 'encoded' | 'source' | 'other';
type Decoder = (buf: Buffer) => Buffer;

const DECODERS: Record<string, Decoder> = {
  gzip: (b) => gunzipSync(b, { maxOutputLength: MAX_INFLATED_BYTES }),
  'x-gzip': (b) => gunzipSync(b, { maxOutputLength: MAX_INFLATED_BYTES }),
  deflate: (b) => inflateSync(b, { maxOutputLength: MAX_INFLATED_BYTES }),
  br: (b) => brotliDecompressSync(b, { maxOutputLength: MAX_INFLATED_BYTES }),
};

interface Chunk {
  usage?: { total_tokens?: unknown } | null;
  choices?: unknown;
}

export class UsageMeter {
  #mode: Mode = 'other';
  #sse: SseParser | null = null;
  /** Held bytes of a JSON or compressed body, while within MAX_HELD_BYTES. */
  #held: Buffer[] = [];
  #heldBytes = 0;
  #decode: Decoder | null = null;
  #innerSse = false;
  #reported: number | null = null;
  /** Usage can no longer be read from this response (too large, malformed encoding). */
  #lost = false;
  readonly #completion = new CompletionText();
  #source: UsageSource | null = null;
  /** Chunks without usage not parsed yet (their text is read at the end if no usage came). */
  #unparsedChunks: string[] = [];
  #unparsedBytes = 0;
  /** Past MAX_UNPARSED_BYTES: every chunk is parsed as it comes. */
  #eager = false;
  /** A JSON body past MAX_HELD_BYTES: read as it passes instead of held. */
  #reader: JsonUsageReader | null = null;

  /** Set for a response in Anthropic's format (a client speaking its Messages API). */
  readonly #anthropic: AnthropicUsage | null;

  constructor(
    private readonly stripUsageChunk: boolean,
    private readonly maxEventBytes: number,
    format: UsageFormat = 'openai',
  ) {
    this.#anthropic = format === 'anthropic' ? new AnthropicUsage() : null;
  }

  /** True when the usage is read from the whole body at its end (JSON, compressed), not from events. */
  get readsAtEnd(): boolean {
    return this.#mode === 'json' || this.#mode === 'encoded';
  }

  /** True when the meter may change the body (the content-length must then go). */
  get rewrites(): boolean {
    return this.#mode === 'sse' && this.stripUsageChunk;
  }

  onHeaders(contentType: string | undefined, contentEncoding: string | undefined): void {
    const ct = (contentType ?? '').toLowerCase();
    const sse = ct.includes('text/event-stream');
    const encoding = (contentEncoding ?? '').trim().toLowerCase();
    if (encoding && encoding !== 'identity') {
      this.#decode = DECODERS[encoding] ?? null;
      this.#mode = this.#decode && (sse || ct.includes('json')) ? 'encoded' : 'other';
      this.#innerSse = sse;
      if (!this.#decode) this.#lost = true;
      return;
    }
    this.#mode = sse ? 'sse' : ct.includes('json') ? 'json' : 'other';
    if (sse) this.#sse = new SseParser({ maxLineBytes: this.maxEventBytes });
  }

  /** Instead of onHeaders(): the response is a translation that reads its own usage; its bytes pass unread. */
  readFrom(source: UsageSource): void {
    this.#mode = 'source';
    this.#source = source;
  }

  /** Returns what to forward for this chunk (possibly empty). */
  transform(chunk: Buffer): Buffer {
    if (this.#mode === 'json' || this.#mode === 'encoded') {
      this.#hold(chunk);
      return chunk;
    }
    if (this.#mode !== 'sse') return chunk;
    const items = this.#sse!.push(chunk);
    if (!this.stripUsageChunk) {
      // Nothing is removed: the chunk goes on as it came; the events are only read.
      for (const item of items) {
        if (item.type === 'event') this.#onEvent(item);
        else this.#unparsed(item.raw);
      }
      return chunk;
    }
    const kept: Buffer[] = [];
    for (const item of items) {
      if (item.type === 'passthrough') {
        this.#unparsed(item.raw);
        kept.push(item.raw);
      } else if (this.#onEvent(item)) kept.push(item.raw);
    }
    return kept.length === 1 ? kept[0]! : Buffer.concat(kept);
  }

  /**
   * Bytes of a stream past an event too long to parse: its usage is lost, and everything from
   * there on is counted as generated characters (an over-estimate: framing and JSON count too),
   * so what the backend went on generating is still charged.
   */
  #unparsed(raw: Buffer): void {
    this.#lost = true;
    this.#completion.countExtra(raw.length);
  }

  #hold(chunk: Buffer): void {
    if (this.#reader) {
      this.#reader.push(chunk);
      return;
    }
    this.#heldBytes += chunk.length;
    if (this.#heldBytes <= MAX_HELD_BYTES) this.#held.push(chunk);
    else if (this.#mode === 'json' && !this.#anthropic) {
      // Too large to hold: what was held and the rest are read as they pass.
      this.#reader = new JsonUsageReader(this.#readerSink());
      for (const held of this.#held) this.#reader.push(held);
      this.#reader.push(chunk);
      this.#held = [];
    } else {
      this.#held = [];
      this.#lost = true;
    }
  }

  #readerSink(): JsonUsageSink {
    const completion = this.#completion;
    return {
      room: () => completion.room,
      onGenerated: (text, bytes) => {
        if (text === null) completion.countExtra(bytes);
        else completion.add(text);
      },
    };
  }

  #addString(v: unknown): void {
    if (typeof v === 'string') this.#completion.add(v);
  }

  /**
   * The generated text of one choice of a chunk or a completion: the message (or delta)
   * content (a string or the text of its parts), reasoning, refusal and tool-call arguments,
   * and the legacy completions' `text`. The same fields json-usage-reader.ts reads from a body
   * too large to hold (GENERATED_KEYS).
   */
  #addGenerated(choice: unknown): void {
    if (choice === null || typeof choice !== 'object') return;
    const c = choice as { delta?: unknown; message?: unknown; text?: unknown };
    this.#addString(c.text);
    const m = (c.delta ?? c.message) as Record<string, unknown> | null | undefined;
    if (m === null || typeof m !== 'object') return;
    const content = m.content;
    if (Array.isArray(content)) for (const part of content) this.#addString((part as { text?: unknown } | null)?.text);
    else this.#addString(content);
    this.#addString(m.reasoning_content);
    this.#addString(m.reasoning);
    this.#addString(m.refusal);
    this.#addString((m.function_call as { arguments?: unknown } | null | undefined)?.arguments);
    const calls = m.tool_calls;
    if (Array.isArray(calls)) for (const call of calls) this.#addString((call as { function?: { arguments?: unknown } } | null)?.function?.arguments);
  }

  /** Reads one chunk object of a response: its completion text and usage; true when it had usage. */
  #read(chunk: Chunk): boolean {
    if (this.#anthropic) {
      // Anthropic's usage comes in parts (input at message_start, output at message_delta);
      // nothing of it is removed from the stream.
      this.#anthropic.read(chunk, this.#completion.add);
      this.#reported = this.#anthropic.total();
      return false;
    }
    if (Array.isArray(chunk.choices)) for (const c of chunk.choices) this.#addGenerated(c);
    const total = chunk.usage?.total_tokens;
    if (typeof total !== 'number' || !Number.isFinite(total) || total < 0) return false;
    this.#reported = total;
    return true;
  }

  /** Reads one SSE event; returns false when it must not reach the client. */
  #onEvent(event: SseEvent): boolean {
    const data = event.data;
    if (data === null || data === '[DONE]' || this.#lost) return true;
    if (!this.#anthropic && !this.#eager && carriesNoUsage(data)) {
      if (this.#unparsedBytes + data.length + CHUNK_COST <= MAX_UNPARSED_BYTES) {
        this.#unparsedChunks.push(data);
        this.#unparsedBytes += data.length + CHUNK_COST;
        return true;
      }
      this.#eager = true;
      this.#readUnparsed();
    }
    return this.#parseEvent(data);
  }

  /** Reads the chunks held unparsed, in their order. */
  #readUnparsed(): void {
    const chunks = this.#unparsedChunks;
    this.#unparsedChunks = [];
    this.#unparsedBytes = 0;
    for (const data of chunks) this.#parseEvent(data);
  }

  #parseEvent(data: string): boolean {
    let chunk: Chunk;
    try {
      chunk = JSON.parse(data) as Chunk;
    } catch {
      return true;
    }
    if (chunk === null || typeof chunk !== 'object') return true;
    const hasUsage = this.#read(chunk);
    return !(this.stripUsageChunk && hasUsage && Array.isArray(chunk.choices) && chunk.choices.length === 0);
  }

  /** What is left to forward when the response ends (an unterminated last event). */
  flush(): Buffer {
    if (this.#mode !== 'sse') return Buffer.alloc(0);
    const kept: Buffer[] = [];
    for (const item of this.#sse!.end()) {
      if (item.type === 'event' && this.#onEvent(item) && this.stripUsageChunk) kept.push(item.raw);
    }
    return Buffer.concat(kept);
  }

  result(): UsageResult {
    if (this.#source) return this.#source.usage();
    if (this.#reader) {
      this.#reported = this.#reader.totalTokens();
      this.#reader = null;
    }
    if (!this.#lost && (this.#mode === 'json' || this.#mode === 'encoded') && this.#held.length) this.#readHeld();
    // The text of the chunks held unparsed counts only when no usage came.
    if (this.#reported === null || this.#lost) this.#readUnparsed();
    else this.#unparsedChunks = [];
    return { reported: this.#lost ? null : this.#reported, completionText: this.#completion.text, extraCompletionChars: this.#completion.extraChars };
  }

  #readHeld(): void {
    // Most JSON completions arrive as one chunk: no copy then.
    let body: Buffer = this.#held.length === 1 ? this.#held[0]! : Buffer.concat(this.#held);
    this.#held = [];
    try {
      if (this.#mode === 'encoded') body = this.#decode!(body);
    } catch {
      this.#lost = true;
      return;
    }
    if (this.#mode === 'encoded' && this.#innerSse) {
      const parser = new SseParser({ maxLineBytes: this.maxEventBytes });
      for (const item of [...parser.push(body), ...parser.end()]) {
        if (item.type === 'passthrough') this.#lost = true;
        else this.#onEvent(item);
      }
      return;
    }
    try {
      const parsed = JSON.parse(body.toString('utf8')) as Chunk;
      if (parsed !== null && typeof parsed === 'object') this.#read(parsed);
    } catch {
      // not JSON after all: estimated
    }
  }
}
