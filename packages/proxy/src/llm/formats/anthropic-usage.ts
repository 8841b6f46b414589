// Where Anthropic's Messages API reports usage and generated text: the message of a
// non-streamed answer, and the events of a stream (message_start carries the input tokens and a
// first output count, message_delta the cumulative output count, and in newer API versions the
// input counts again; content_block_delta the generated text and tool-input JSON). Read by the
// usage meter for clients that speak Anthropic themselves, and by the stream translation.
//
// Input tokens are the prompt as Anthropic bills it: `input_tokens` plus the cache writes and
// reads it reports apart (OpenAI's `prompt_tokens` includes cached tokens too).

type Obj = Record<string, unknown>;

function isObj(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function count(v: unknown): number | null {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0 ? v : null;
}

/** Tokens of an Anthropic usage object, each part null when not reported. */
export interface AnthropicTokens {
  readonly input: number | null;
  readonly cacheRead: number | null;
  readonly output: number | null;
}

/** Receives generated text (content, tool-input JSON, thinking) as it is read. */
export type TextSink = (text: string) => void;

export class AnthropicUsage {
  #input: number | null = null;
  #cacheCreation = 0;
  #cacheRead: number | null = null;
  #output: number | null = null;
  /**
   * The output count is final: a message's, or a stream's message_delta. message_start's count
   * is only the first token's: a stream cut before message_delta has no total (it is estimated).
   */
  #final = false;

  /** Reads one usage object (of a message, a message_start's message or a message_delta). */
  readUsage(usage: unknown): void {
    if (!isObj(usage)) return;
    const input = count(usage.input_tokens);
    if (input !== null) this.#input = input;
    const creation = count(usage.cache_creation_input_tokens);
    if (creation !== null) this.#cacheCreation = creation;
    const read = count(usage.cache_read_input_tokens);
    if (read !== null) this.#cacheRead = read;
    const output = count(usage.output_tokens);
    if (output !== null) this.#output = output;
  }

  /** Reads a non-streamed message or one stream event; the generated text goes to `sink`. */
  read(o: unknown, sink: TextSink): void {
    if (!isObj(o)) return;
    switch (o.type) {
      case 'message':
        this.readUsage(o.usage);
        this.#final = true;
        if (Array.isArray(o.content)) for (const block of o.content) blockText(block, sink);
        return;
      case 'message_start':
        if (isObj(o.message)) this.readUsage(o.message.usage);
        return;
      case 'message_delta':
        this.readUsage(o.usage);
        this.#final = true;
        return;
      case 'content_block_start':
        blockText(o.content_block, sink);
        return;
      case 'content_block_delta':
        deltaText(o.delta, sink);
        return;
    }
  }

  /** Prompt tokens (input plus cache writes and reads), null until reported. */
  get prompt(): number | null {
    return this.#input === null ? null : this.#input + this.#cacheCreation + (this.#cacheRead ?? 0);
  }

  get cacheRead(): number | null {
    return this.#cacheRead;
  }

  get completion(): number | null {
    return this.#output;
  }

  /** Prompt plus completion, null unless both were reported and the output count is final. */
  total(): number | null {
    const prompt = this.prompt;
    return prompt === null || this.#output === null || !this.#final ? null : prompt + this.#output;
  }
}

function str(v: unknown, sink: TextSink): void {
  if (typeof v === 'string' && v) sink(v);
}

function blockText(block: unknown, sink: TextSink): void {
  if (!isObj(block)) return;
  str(block.text, sink);
  str(block.thinking, sink);
  if (block.type === 'tool_use' && isObj(block.input) && Object.keys(block.input).length) sink(JSON.stringify(block.input));
}

function deltaText(delta: unknown, sink: TextSink): void {
  if (!isObj(delta)) return;
  str(delta.text, sink);
  str(delta.partial_json, sink);
  str(delta.thinking, sink);
}
