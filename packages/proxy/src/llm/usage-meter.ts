// The response side of a metered LLM route: reads `usage.total_tokens` from a JSON response,
// or from the chunks of an SSE stream, while the bytes go on to the client unchanged and
// undelayed. The only change: when the gateway asked for usage on the client's behalf, the
// usage-only chunk (`choices: []`) is removed, event by event. Completion text is kept for
// estimation in case the backend reports no usage. Malformed chunks never break the stream.

const MAX_JSON_BYTES = 4 * 1024 * 1024;

export interface UsageResult {
  /** usage.total_tokens as reported, null when the backend reported none. */
  readonly reported: number | null;
  readonly completionText: string;
}

type Mode = 'json' | 'sse' | 'other';

export class UsageMeter {
  #mode: Mode = 'other';
  #json: Buffer[] = [];
  #jsonSize = 0;
  #sse = '';
  #reported: number | null = null;
  #completion = '';

  constructor(private readonly stripUsageChunk: boolean) {}

  /** True when the meter may change the body (the content-length must then go). */
  get rewrites(): boolean {
    return this.#mode === 'sse' && this.stripUsageChunk;
  }

  onHeaders(contentType: string | undefined): void {
    const ct = (contentType ?? '').toLowerCase();
    this.#mode = ct.includes('text/event-stream') ? 'sse' : ct.includes('json') ? 'json' : 'other';
  }

  /** Returns what to forward for this chunk (possibly empty). */
  transform(chunk: Buffer): Buffer {
    if (this.#mode === 'json') {
      if (this.#jsonSize + chunk.length <= MAX_JSON_BYTES) this.#json.push(chunk);
      this.#jsonSize += chunk.length;
      return chunk;
    }
    if (this.#mode !== 'sse') return chunk;
    this.#sse += chunk.toString('utf8');
    let out = '';
    let sep: number;
    while ((sep = this.#eventEnd()) >= 0) {
      const end = this.#sse.startsWith('\r\n\r\n', sep) ? sep + 4 : sep + 2;
      const event = this.#sse.slice(0, end);
      this.#sse = this.#sse.slice(end);
      if (this.#onEvent(event)) out += event;
    }
    if (!this.stripUsageChunk) return chunk;
    return Buffer.from(out, 'utf8');
  }

  #eventEnd(): number {
    const a = this.#sse.indexOf('\n\n');
    const b = this.#sse.indexOf('\r\n\r\n');
    if (a < 0) return b;
    if (b < 0) return a;
    return Math.min(a, b);
  }

  /** Reads one SSE event; returns false when it must not reach the client. */
  #onEvent(event: string): boolean {
    const data = event
      .split(/\r?\n/)
      .filter((l) => l.startsWith('data:'))
      .map((l) => l.slice(5).trimStart())
      .join('\n');
    if (!data || data === '[DONE]') return true;
    let chunk: { usage?: { total_tokens?: unknown } | null; choices?: { delta?: { content?: unknown } }[] };
    try {
      chunk = JSON.parse(data) as typeof chunk;
    } catch {
      return true;
    }
    if (Array.isArray(chunk.choices)) {
      for (const c of chunk.choices) if (typeof c?.delta?.content === 'string') this.#completion += c.delta.content;
    }
    const total = chunk.usage?.total_tokens;
    if (typeof total === 'number' && Number.isFinite(total) && total >= 0) {
      this.#reported = total;
      if (this.stripUsageChunk && Array.isArray(chunk.choices) && chunk.choices.length === 0) return false;
    }
    return true;
  }

  /** What is left to forward when the response ends (an unterminated last event). */
  flush(): Buffer {
    if (this.#mode !== 'sse' || !this.stripUsageChunk || !this.#sse) return Buffer.alloc(0);
    const rest = this.#sse;
    this.#sse = '';
    return this.#onEvent(rest) ? Buffer.from(rest, 'utf8') : Buffer.alloc(0);
  }

  result(): UsageResult {
    if (this.#mode === 'json' && this.#jsonSize <= MAX_JSON_BYTES) {
      try {
        const body = JSON.parse(Buffer.concat(this.#json).toString('utf8')) as { usage?: { total_tokens?: unknown }; choices?: { message?: { content?: unknown } }[] };
        const total = body.usage?.total_tokens;
        if (typeof total === 'number' && Number.isFinite(total) && total >= 0) this.#reported = total;
        if (Array.isArray(body.choices)) {
          for (const c of body.choices) if (typeof c?.message?.content === 'string') this.#completion += c.message.content;
        }
      } catch {
        // not JSON after all: estimated
      }
    }
    return { reported: this.#reported, completionText: this.#completion };
  }
}
