// The response of an Anthropic backend to a translated Chat Completions request, made an OpenAI
// answer on its way to the client. Three cases, chosen by the backend's headers:
// - an SSE stream (2xx, text/event-stream): translated event by event (messages-stream.ts), the
//   status and headers sent at once;
// - any other 2xx: a message, held (at most MAX_HELD_BYTES) with its status and headers until
//   its end, then translated; one that is not an Anthropic message, too large, or compressed is
//   answered 502 TG_FORMAT_BAD_RESPONSE in OpenAI's error shape instead;
// - a non-2xx: the backend's status with its error body (held at most MAX_ERROR_BYTES) in
//   OpenAI's error shape.
// Holding is what lets a garbage body become a clear 502 rather than a 200 with a broken body.
import { MAX_HELD_BYTES, type UsageSource } from '../usage-meter.js';
import { BAD_RESPONSE_CODE, MessagesStreamTranslator } from './messages-stream.js';
import { BadFormat, errorBody, messageToCompletion } from './messages-to-chat.js';

/** An error body beyond this is not read: its status is translated with a generic message. */
export const MAX_ERROR_BYTES = 64 * 1024;

type Headers = Record<string, string | string[] | undefined>;

/** What the response policies ask of a format translation. */
export interface ResponseTranslator {
  /** Rewrites the headers; true when the status and headers must wait for the body's end. */
  onHeaders(status: number, headers: Headers): boolean;
  transform(chunk: Buffer): Buffer;
  flush(): Buffer;
  /** The status to send, once the body ended (a held response may become a 502). */
  finalStatus(): number;
  /** After onHeaders: the reader of the usage when the translation reads it itself (a stream), else null (the meter reads the translated body). */
  usageSource(): UsageSource | null;
}

const EMPTY = Buffer.alloc(0);

function first(v: string | string[] | undefined): string {
  return (Array.isArray(v) ? v[0] : v) ?? '';
}

export interface AnthropicResponseOptions {
  readonly includeUsage: boolean;
  readonly maxEventBytes: number;
}

export class AnthropicResponse implements ResponseTranslator {
  #mode: 'stream' | 'message' | 'error' | 'undecodable' = 'message';
  #status = 0;
  #headers: Headers = {};
  #stream: MessagesStreamTranslator | null = null;
  #held: Buffer[] = [];
  #heldBytes = 0;
  #overflow = false;
  readonly #created = Math.floor(Date.now() / 1000);

  constructor(private readonly options: AnthropicResponseOptions) {}

  onHeaders(status: number, headers: Headers): boolean {
    this.#status = status;
    this.#headers = headers;
    const encoding = first(headers['content-encoding']).trim().toLowerCase();
    const ok = status >= 200 && status < 300;
    delete headers['content-length'];
    if (encoding && encoding !== 'identity') this.#mode = ok ? 'undecodable' : 'error';
    else if (!ok) this.#mode = 'error';
    else if (first(headers['content-type']).toLowerCase().includes('text/event-stream')) {
      this.#mode = 'stream';
      this.#stream = new MessagesStreamTranslator({ includeUsage: this.options.includeUsage, maxEventBytes: this.options.maxEventBytes, created: this.#created });
      headers['content-type'] = 'text/event-stream; charset=utf-8';
      return false;
    }
    delete headers['content-encoding'];
    return true;
  }

  transform(chunk: Buffer): Buffer {
    if (this.#stream) return this.#stream.transform(chunk);
    if (this.#overflow) return EMPTY;
    this.#heldBytes += chunk.length;
    const limit = this.#mode === 'error' ? MAX_ERROR_BYTES : MAX_HELD_BYTES;
    if (this.#heldBytes > limit) {
      this.#overflow = true;
      this.#held = [];
    } else this.#held.push(chunk);
    return EMPTY;
  }

  flush(): Buffer {
    if (this.#stream) return this.#stream.flush();
    const raw = this.#held.length === 1 ? this.#held[0]! : Buffer.concat(this.#held);
    this.#held = [];
    let body: string;
    if (this.#mode === 'error') body = errorBody(this.#overflow ? EMPTY : raw, this.#status);
    else {
      try {
        if (this.#mode === 'undecodable') throw new BadFormat('the backend compressed its body although asked not to (accept-encoding: identity)');
        if (this.#overflow) throw new BadFormat(`the backend's message is larger than ${MAX_HELD_BYTES} bytes`);
        body = messageToCompletion(raw, this.#created);
      } catch (err) {
        if (!(err instanceof BadFormat)) throw err;
        return this.#badResponse(err.message);
      }
    }
    return this.#json(body);
  }

  #json(body: string): Buffer {
    const out = Buffer.from(body);
    this.#headers['content-type'] = 'application/json';
    this.#headers['content-length'] = String(out.length);
    return out;
  }

  #badResponse(why: string): Buffer {
    this.#status = 502;
    this.#headers['x-tollgate-error'] = BAD_RESPONSE_CODE;
    return this.#json(JSON.stringify({ error: { message: `the backend's answer is not a valid Anthropic message: ${why}`, type: 'server_error', param: null, code: BAD_RESPONSE_CODE } }));
  }

  finalStatus(): number {
    return this.#status;
  }

  usageSource(): UsageSource | null {
    return this.#stream;
  }
}
