// An incremental parser of server-sent events (the WHATWG event-stream format) over Buffers.
// - Linear time however the input is chunked: each byte is examined once; a line that spans
//   chunks is kept as a list of slices and joined once when it ends.
// - UTF-8 safe: lines are split on bytes (CR and LF are ASCII) and decoded whole, so a
//   multi-byte character split across chunks is never corrupted.
// - Byte-exact: each event comes with its raw bytes (through its blank line), so a consumer
//   can drop one event and pass the others on unchanged.
// - Bounded: an event still open past `maxLineBytes` is not buffered further; the parser
//   reports the overflow once and from then on hands every byte back unparsed.
const LF = 0x0a;
const CR = 0x0d;

export interface SseEvent {
  readonly type: 'event';
  /** The bytes of the event as received, through the blank line that ends it. */
  readonly raw: Buffer;
  /** The data lines joined with "\n"; null when the event had none (a comment, a keepalive). */
  readonly data: string | null;
  /** The `event:` field; null when absent. */
  readonly event: string | null;
  /** The `id:` field; null when absent. */
  readonly id: string | null;
  /** Comment lines (": ..."), without the colon and one leading space. */
  readonly comments: readonly string[];
  /** False for an unterminated last event handed out by end(). */
  readonly complete: boolean;
}

/** Bytes handed back unparsed after an overflow. */
export interface SsePassthrough {
  readonly type: 'passthrough';
  readonly raw: Buffer;
  /** True on the first one: the event being read grew past the limit here. */
  readonly overflow: boolean;
}

export type SseItem = SseEvent | SsePassthrough;

export interface SseParserOptions {
  /** Most bytes an event may hold before the parser gives up on the stream; default 1 MiB. */
  readonly maxLineBytes?: number;
}

export const DEFAULT_MAX_LINE_BYTES = 1024 * 1024;

function joined(parts: Buffer[], total: number): Buffer {
  return parts.length === 1 ? parts[0]! : Buffer.concat(parts, total);
}

export class SseParser {
  readonly maxLineBytes: number;
  // Raw bytes of the event being read, from earlier chunks.
  #pending: Buffer[] = [];
  #pendingBytes = 0;
  // The line being read, from earlier chunks.
  #line: Buffer[] = [];
  #lineBytes = 0;
  // Fields of the event being read.
  #data: string[] = [];
  #event: string | null = null;
  #id: string | null = null;
  #comments: string[] = [];
  // The last byte seen was a CR: an LF that follows belongs to the same line end.
  #afterCR = false;
  // ...and that CR ended the blank line of an event, which is dispatched once the LF question is settled.
  #dispatchAfterCR = false;
  #firstLine = true;
  #overflowed = false;

  constructor(options: SseParserOptions = {}) {
    this.maxLineBytes = options.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES;
  }

  /** True once an event outgrew the limit; every byte since is passed through unparsed. */
  get overflowed(): boolean {
    return this.#overflowed;
  }

  /** Parses a chunk; the events it completes, in order. */
  push(chunk: Buffer): SseItem[] {
    if (this.#overflowed) return chunk.length ? [{ type: 'passthrough', raw: chunk, overflow: false }] : [];
    const out: SseItem[] = [];
    const len = chunk.length;
    let pos = 0;
    let eventStart = 0;
    if (this.#afterCR && len > 0) {
      this.#afterCR = false;
      if (chunk[0] === LF) pos = 1;
      if (this.#dispatchAfterCR) {
        this.#dispatchAfterCR = false;
        if (this.#pendingBytes + pos > this.maxLineBytes) return this.#overflow(out, chunk);
        out.push(this.#dispatch(chunk.subarray(0, pos), true));
        eventStart = pos;
      }
    }
    // Next CR and LF at or after pos; -1 once there is none left in the chunk. Each is searched
    // for again only after pos passed it, so no byte is scanned twice.
    let nextLF = -2;
    let nextCR = -2;
    while (pos < len) {
      if (nextLF !== -1 && nextLF < pos) nextLF = chunk.indexOf(LF, pos);
      if (nextCR !== -1 && nextCR < pos) nextCR = chunk.indexOf(CR, pos);
      const end = nextLF < 0 ? nextCR : nextCR < 0 ? nextLF : Math.min(nextLF, nextCR);
      if (end < 0) break;
      let next = end + 1;
      if (chunk[end] === CR) {
        if (next < len) {
          if (chunk[next] === LF) next++;
        } else {
          this.#afterCR = true;
        }
      }
      if (this.#pendingBytes + (next - eventStart) > this.maxLineBytes) return this.#overflow(out, chunk.subarray(eventStart));
      const blank = this.#endLine(chunk.subarray(pos, end));
      pos = next;
      if (!blank) continue;
      if (this.#afterCR) {
        this.#dispatchAfterCR = true;
      } else {
        out.push(this.#dispatch(chunk.subarray(eventStart, pos), true));
        eventStart = pos;
      }
    }
    if (pos < len) {
      this.#line.push(chunk.subarray(pos));
      this.#lineBytes += len - pos;
    }
    if (eventStart < len) {
      this.#pending.push(chunk.subarray(eventStart));
      this.#pendingBytes += len - eventStart;
      if (this.#pendingBytes > this.maxLineBytes) return this.#overflow(out, Buffer.alloc(0), true);
    }
    return out;
  }

  /** The end of the stream: an unterminated last event, if any, with `complete: false`. */
  end(): SseItem[] {
    if (this.#overflowed) return [];
    if (this.#dispatchAfterCR) {
      this.#dispatchAfterCR = false;
      this.#afterCR = false;
      return [this.#dispatch(Buffer.alloc(0), true)];
    }
    if (this.#pendingBytes === 0) return [];
    if (this.#lineBytes > 0) this.#endLine(Buffer.alloc(0));
    return [this.#dispatch(Buffer.alloc(0), false)];
  }

  /** Ends the current line (earlier slices + `tail`); true when it was blank. */
  #endLine(tail: Buffer): boolean {
    let line = tail;
    if (this.#lineBytes > 0) {
      this.#line.push(tail);
      line = joined(this.#line, this.#lineBytes + tail.length);
      this.#line = [];
      this.#lineBytes = 0;
    }
    if (this.#firstLine) {
      this.#firstLine = false;
      if (line.length >= 3 && line[0] === 0xef && line[1] === 0xbb && line[2] === 0xbf) line = line.subarray(3);
    }
    if (line.length === 0) return true;
    const text = line.toString('utf8');
    const colon = text.indexOf(':');
    if (colon === 0) {
      this.#comments.push(text.slice(text.charCodeAt(1) === 0x20 ? 2 : 1));
      return false;
    }
    const field = colon < 0 ? text : text.slice(0, colon);
    const value = colon < 0 ? '' : text.slice(text.charCodeAt(colon + 1) === 0x20 ? colon + 2 : colon + 1);
    if (field === 'data') this.#data.push(value);
    else if (field === 'event') this.#event = value;
    else if (field === 'id' && !value.includes('\0')) this.#id = value;
    return false;
  }

  #dispatch(tail: Buffer, complete: boolean): SseEvent {
    let raw = tail;
    if (this.#pendingBytes > 0) {
      this.#pending.push(tail);
      raw = joined(this.#pending, this.#pendingBytes + tail.length);
    }
    const event: SseEvent = {
      type: 'event',
      raw,
      data: this.#data.length ? this.#data.join('\n') : null,
      event: this.#event,
      id: this.#id,
      comments: this.#comments,
      complete,
    };
    this.#pending = [];
    this.#pendingBytes = 0;
    this.#data = [];
    this.#event = null;
    this.#id = null;
    this.#comments = [];
    return event;
  }

  /** Gives up: everything of the open event so far, then `rest`, goes back unparsed. */
  #overflow(out: SseItem[], rest: Buffer, restIsPending = false): SseItem[] {
    this.#overflowed = true;
    const parts = restIsPending ? this.#pending : [...this.#pending, rest];
    const raw = Buffer.concat(parts);
    this.#pending = [];
    this.#pendingBytes = 0;
    this.#line = [];
    this.#lineBytes = 0;
    this.#data = [];
    this.#comments = [];
    this.#afterCR = false;
    this.#dispatchAfterCR = false;
    out.push({ type: 'passthrough', raw, overflow: true });
    return out;
  }
}
