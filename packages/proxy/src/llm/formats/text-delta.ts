// The common event of an Anthropic stream, a text delta, read without parsing it: most of a
// stream's events are `{"type":"content_block_delta","index":N,"delta":{"type":"text_delta","text":"..."}}`
// in this key order, and the translation only needs the text's JSON string literal, which goes
// into the client's chunk as it came. The literal is checked to be one well-formed JSON string
// (no unescaped quote, backslash or control character), so a backend cannot put members of its
// own into the client's chunk; an event of any other shape or order is parsed as JSON. The
// events that make nothing in the client's stream (ping, content_block_stop) are recognised
// the same way when they have their usual form.

const PREFIX = '{"type":"content_block_delta","index":';
const MIDDLE = ',"delta":{"type":"text_delta","text":';
const SUFFIX = '}}';

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
/** The characters that may follow a backslash in a JSON string (u: four hex digits follow). */
const ESCAPES = new Set([...'"\\/bfnrt'].map((c) => c.charCodeAt(0)));
const HEX = /^[0-9a-fA-F]{4}$/;

/** The JSON string literal of a text delta's text, or null when `data` is not a text delta in the common form. */
export function textDeltaLiteral(data: string): string | null {
  if (!data.startsWith(PREFIX) || !data.endsWith(SUFFIX)) return null;
  const middle = data.indexOf(MIDDLE, PREFIX.length);
  if (middle <= PREFIX.length) return null;
  for (let i = PREFIX.length; i < middle; i++) {
    const c = data.charCodeAt(i);
    if (c < 0x30 || c > 0x39) return null;
  }
  const from = middle + MIDDLE.length;
  const to = data.length - SUFFIX.length;
  return isStringLiteral(data, from, to) ? data.slice(from, to) : null;
}

/** data[from, to) is exactly one JSON string literal, as JSON.parse accepts it. */
function isStringLiteral(data: string, from: number, to: number): boolean {
  if (to - from < 2 || data.charCodeAt(from) !== QUOTE || data.charCodeAt(to - 1) !== QUOTE) return false;
  const last = to - 1;
  for (let i = from + 1; i < last; i++) {
    const c = data.charCodeAt(i);
    if (c === QUOTE || c < 0x20) return false;
    if (c !== BACKSLASH) continue;
    const e = data.charCodeAt(++i);
    if (i >= last || !ESCAPES.has(e)) {
      if (e !== 0x75 || i + 4 >= last || !HEX.test(data.slice(i + 1, i + 5))) return false;
      i += 4;
    }
  }
  return true;
}

const PING = '{"type":"ping"}';
const BLOCK_STOP = '{"type":"content_block_stop","index":';

/** `data` is a ping or a content_block_stop in its usual form: nothing to send, nothing to read. */
export function isSilentEvent(data: string): boolean {
  if (data === PING) return true;
  if (!data.startsWith(BLOCK_STOP) || data.charCodeAt(data.length - 1) !== 0x7d || data.length === BLOCK_STOP.length + 1) return false;
  for (let i = BLOCK_STOP.length; i < data.length - 1; i++) {
    const c = data.charCodeAt(i);
    if (c < 0x30 || c > 0x39) return false;
  }
  return true;
}
