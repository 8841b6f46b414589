// Reads what the token meter needs from a JSON response too large to hold (a completion with
// `logprobs` and `top_logprobs`, or a large `n`): the top-level `usage` member, wherever it
// is in the body, and the generated text of `choices` (for the estimate when the backend
// reports no usage). One pass over the bytes as they arrive, chunk by chunk, holding only the
// usage value (at most MAX_USAGE_BYTES) and the generated text the meter keeps; nothing else
// of the body is held, whatever its size.
//
// The same byte-level rules as json-scan.ts: JSON's structural characters are ASCII and UTF-8
// continuation bytes never are, so scanning bytes is exact. Strings are skipped with indexOf
// (native code), not byte by byte.
import { BACKSLASH, CLOSE_ARRAY, CLOSE_OBJECT, COLON, COMMA, isSpace, OPEN_ARRAY, OPEN_OBJECT, QUOTE } from './json-scan.js';

/** A usage object is a few hundred bytes; a larger value is not believed. */
const MAX_USAGE_BYTES = 64 * 1024;
/** Keys longer than this are none of the keys looked for (the longest, escaped, fits). */
const MAX_KEY_BYTES = 128;
/** Deeper than this the body is not read further (no completion nests so far). */
const MAX_DEPTH = 256;

/**
 * Keys of the strings under `choices` that hold generated text: message and delta `content`
 * (and its parts' `text`), `reasoning_content` / `reasoning`, `refusal`, tool-call and
 * function-call `arguments`, and the legacy completions' `text`.
 */
export const GENERATED_KEYS: ReadonlySet<string> = new Set(['content', 'text', 'reasoning_content', 'reasoning', 'refusal', 'arguments']);

/** Where the pieces of one value being kept go, across chunks. */
class Capture {
  readonly parts: Buffer[] = [];
  bytes = 0;
  /** Offset in the current chunk where the kept span begins. */
  from = 0;

  constructor(readonly limit: number) {}

  /** Keeps chunk[from, to); false once the value is over its limit. */
  keep(chunk: Buffer, to: number): boolean {
    const n = to - this.from;
    if (n <= 0) return this.bytes <= this.limit;
    this.bytes += n;
    if (this.bytes > this.limit) return false;
    this.parts.push(chunk.subarray(this.from, to));
    return true;
  }

  text(): string {
    return (this.parts.length === 1 ? this.parts[0]! : Buffer.concat(this.parts)).toString('utf8');
  }
}

export interface JsonUsageSink {
  /** Generated text, decoded; or, when a string was longer than `room()`, null and its byte count. */
  onGenerated(text: string | null, bytes: number): void;
  /** How many more bytes of generated text the sink keeps. */
  room(): number;
}

export class JsonUsageReader {
  #depth = 0;
  /** Per depth, true for an object (strings after '{' and ',' are keys there). */
  readonly #objects = new Uint8Array(MAX_DEPTH + 1);
  #expectKey = false;
  #inString = false;
  /** The byte after a backslash, in the next chunk. */
  #escapePending = false;
  #stringIsKey = false;
  /** The key of the value being read at the current depth (null: none, or not one looked for). */
  #key: string | null = null;
  /** The member of the top-level object being read. */
  #topKey: string | null = null;
  /** Offset of the opening quote of the key being read, in the current chunk (0 once it spans chunks). */
  #keyStart = 0;
  /** The key's bytes from earlier chunks (rare: a key split across two reads), or null. */
  #keyParts: Buffer[] | null = null;
  #keyBytes = 0;
  #textCapture: Capture | null = null;
  #textBytes = 0;
  #usageCapture: Capture | null = null;
  #usageText: string | null = null;
  #broken = false;

  constructor(private readonly sink: JsonUsageSink) {}

  push(chunk: Buffer): void {
    if (this.#broken) return;
    const len = chunk.length;
    let i = 0;
    // The next quote and backslash at or after i (-1: none left in this chunk), each searched
    // again only once passed: a long string full of escapes stays linear.
    let quote = -2;
    let backslash = -2;
    this.#keyStart = 0;
    if (this.#textCapture) this.#textCapture.from = 0;
    if (this.#usageCapture) this.#usageCapture.from = 0;
    while (i < len) {
      if (this.#inString) {
        if (this.#escapePending) {
          this.#escapePending = false;
          i++;
          continue;
        }
        if (quote !== -1 && quote < i) quote = chunk.indexOf(QUOTE, i);
        if (backslash !== -1 && backslash < i) backslash = chunk.indexOf(BACKSLASH, i);
        if (backslash >= 0 && (quote < 0 || backslash < quote)) {
          i = backslash + 2;
          if (i > len) this.#escapePending = true;
          continue;
        }
        if (quote < 0) break;
        this.#endString(chunk, quote);
        i = quote + 1;
        continue;
      }
      const c = chunk[i]!;
      if (c === QUOTE) {
        this.#startString(i);
      } else if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
        if (this.#depth === 1 && this.#topKey === 'usage') this.#startUsage(i);
        if (++this.#depth > MAX_DEPTH) {
          this.#broken = true;
          return;
        }
        this.#objects[this.#depth] = c === OPEN_OBJECT ? 1 : 0;
        this.#expectKey = c === OPEN_OBJECT;
        this.#key = null;
      } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) {
        if (this.#depth === 1) this.#endTopMember(chunk, i);
        this.#depth--;
        this.#expectKey = false;
        this.#key = null;
      } else if (c === COMMA) {
        if (this.#depth === 1) this.#endTopMember(chunk, i);
        this.#expectKey = this.#objects[this.#depth] === 1;
        this.#key = null;
      } else if (c !== COLON && !isSpace(c) && this.#depth === 1 && this.#topKey === 'usage' && !this.#usageCapture) {
        // A number, true, false or null as the usage value.
        this.#startUsage(i);
      }
      i++;
    }
    // What is kept of values still open continues in the next chunk.
    if (this.#inString && this.#stringIsKey) this.#keyContinues(chunk, len);
    if (this.#textCapture) this.#keepText(chunk, len);
    if (this.#usageCapture && !this.#usageCapture.keep(chunk, len)) this.#usageCapture = null;
  }

  /** `usage.total_tokens` of the last top-level `usage` member read whole, or null. */
  totalTokens(): number | null {
    if (this.#usageText === null) return null;
    try {
      const usage = JSON.parse(this.#usageText) as { total_tokens?: unknown } | null;
      const total = usage?.total_tokens;
      return typeof total === 'number' && Number.isFinite(total) && total >= 0 ? total : null;
    } catch {
      return null;
    }
  }

  /** The value of the top-level `usage` member begins at offset i: it is kept. */
  #startUsage(i: number): void {
    this.#usageCapture = new Capture(MAX_USAGE_BYTES);
    this.#usageCapture.from = i;
  }

  /** A member of the top-level object ends at offset i (its ',' or the closing '}'). */
  #endTopMember(chunk: Buffer, i: number): void {
    const capture = this.#usageCapture;
    if (capture) {
      if (capture.keep(chunk, i)) this.#usageText = capture.text();
      this.#usageCapture = null;
    }
    this.#topKey = null;
  }

  #startString(i: number): void {
    this.#inString = true;
    this.#stringIsKey = this.#expectKey;
    if (this.#stringIsKey) {
      this.#keyStart = i;
      this.#keyParts = null;
      this.#keyBytes = 0;
      return;
    }
    if (this.#depth === 1 && this.#topKey === 'usage') this.#startUsage(i);
    if (this.#depth >= 3 && this.#topKey === 'choices' && this.#key !== null && GENERATED_KEYS.has(this.#key)) {
      this.#textCapture = new Capture(Math.max(0, this.sink.room()));
      this.#textCapture.from = i;
      this.#textBytes = 0;
    }
  }

  #endString(chunk: Buffer, quote: number): void {
    this.#inString = false;
    if (this.#stringIsKey) {
      this.#expectKey = false;
      this.#key = this.#readKey(chunk, quote);
      if (this.#depth === 1) this.#topKey = this.#key;
      return;
    }
    if (this.#textCapture) {
      this.#keepText(chunk, quote + 1);
      const capture = this.#textCapture;
      this.#textCapture = null;
      if (capture.bytes <= capture.limit) {
        let text: string | null = null;
        try {
          text = JSON.parse(capture.text()) as string;
        } catch {
          // not a valid string: counted by its bytes
        }
        this.sink.onGenerated(text, this.#textBytes - 2);
      } else this.sink.onGenerated(null, this.#textBytes - 2);
    }
  }

  /** A key goes on past this chunk: its bytes so far are kept, up to MAX_KEY_BYTES. */
  #keyContinues(chunk: Buffer, len: number): void {
    this.#keyBytes += len - this.#keyStart;
    if (this.#keyBytes <= MAX_KEY_BYTES) (this.#keyParts ??= []).push(chunk.subarray(this.#keyStart, len));
  }

  /**
   * The key ending at `quote`, when it is one looked for (the constant string), else null.
   * Keys are compared in place, byte for byte: a body of hundreds of thousands of keys (a
   * logprobs payload) allocates nothing for them.
   */
  #readKey(chunk: Buffer, quote: number): string | null {
    const parts = this.#keyParts;
    if (parts === null) return knownKey(chunk, this.#keyStart, quote + 1);
    this.#keyParts = null;
    if (this.#keyBytes + quote + 1 > MAX_KEY_BYTES) return null;
    parts.push(chunk.subarray(0, quote + 1));
    const raw = Buffer.concat(parts);
    return knownKey(raw, 0, raw.length);
  }

  /** Keeps generated text while the sink has room; past it only its length is counted. */
  #keepText(chunk: Buffer, to: number): void {
    const capture = this.#textCapture!;
    this.#textBytes += to - capture.from;
    if (capture.bytes <= capture.limit) capture.keep(chunk, to);
  }
}

/** Every key the reader acts on: the top-level members and the generated-text fields. */
const KNOWN_KEYS: readonly string[] = ['usage', 'choices', ...GENERATED_KEYS];
const KNOWN_BYTES = KNOWN_KEYS.map((k) => Buffer.from(k, 'latin1'));
const LONGEST_KNOWN = Math.max(...KNOWN_BYTES.map((b) => b.length));

/**
 * The known key spelled by the JSON string raw[from, to) (quotes included), or null. A key
 * with escapes (`"us\u0061ge"`) is decoded as JSON.parse would read it: rare, and bounded
 * by MAX_KEY_BYTES.
 */
function knownKey(raw: Buffer, from: number, to: number): string | null {
  const n = to - from - 2;
  if (n > MAX_KEY_BYTES) return null;
  let escaped = false;
  for (let i = from + 1; i < to - 1 && !escaped; i++) escaped = raw[i] === BACKSLASH;
  if (!escaped) {
    if (n > LONGEST_KNOWN) return null;
    for (let k = 0; k < KNOWN_BYTES.length; k++) {
      const known = KNOWN_BYTES[k]!;
      if (known.length === n && raw.compare(known, 0, n, from + 1, to - 1) === 0) return KNOWN_KEYS[k]!;
    }
    return null;
  }
  try {
    const key = JSON.parse(raw.toString('utf8', from, to)) as string;
    return KNOWN_KEYS.includes(key) ? key : null;
  } catch {
    return null;
  }
}
