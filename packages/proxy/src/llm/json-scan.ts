// Byte-level scans of a JSON request body, each one linear pass with no recursion, so that no
// body can exhaust the stack or cost more than its length. JSON's structural characters are
// ASCII and UTF-8 continuation bytes never are, so scanning bytes (not decoded text) is exact
// and byte offsets stay valid for splicing the original buffer.

// JSON's structural bytes (json-usage-reader.ts reads responses by the same rules).
export const QUOTE = 0x22, BACKSLASH = 0x5c, COMMA = 0x2c, COLON = 0x3a;
export const OPEN_OBJECT = 0x7b, CLOSE_OBJECT = 0x7d, OPEN_ARRAY = 0x5b, CLOSE_ARRAY = 0x5d;

/**
 * True when there are at most `limit` opening brackets in the bytes, strings included: then
 * nothing can nest deeper than `limit`. A chat body has a few brackets in kilobytes of text,
 * and indexOf finds each in native code, where the exact scan below steps through every byte
 * in JavaScript (about 25x slower on a 4 KB chat body): this settles almost every request.
 */
function fewOpenings(buf: Uint8Array, limit: number): boolean {
  let n = 0;
  for (const open of [OPEN_OBJECT, OPEN_ARRAY]) {
    for (let i = buf.indexOf(open); i >= 0; i = buf.indexOf(open, i + 1)) if (++n > limit) return false;
  }
  return true;
}

/** True when the bytes nest objects and arrays deeper than `limit` (strings are skipped). */
export function nestsDeeperThan(buf: Uint8Array, limit: number): boolean {
  if (fewOpenings(buf, limit)) return false;
  let depth = 0;
  let inString = false;
  for (let i = 0; i < buf.length; i++) {
    const c = buf[i]!;
    if (inString) {
      if (c === BACKSLASH) i++;
      else if (c === QUOTE) inString = false;
    } else if (c === QUOTE) inString = true;
    else if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
      if (++depth > limit) return true;
    } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) depth--;
  }
  return false;
}

/** Where a member's value lies in the buffer: [start, end). */
export interface Span {
  readonly start: number;
  readonly end: number;
}

export interface TopLevelObject {
  /** The value span of the last member with each key (JSON.parse keeps the last one too). */
  readonly members: ReadonlyMap<string, Span>;
  /** Offset of the closing brace. */
  readonly close: number;
}

export function isSpace(c: number): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}

/** One member of the top-level object: its key, where the member starts (the key's quote) and where its value lies. */
export interface MemberSpan extends Span {
  readonly key: string;
  readonly keyStart: number;
}

/**
 * Every member of a top-level JSON object, in order, duplicates included, and the offset of
 * its closing brace. The caller has already parsed the buffer with JSON.parse (so it is valid
 * JSON and an object); this only finds where things are.
 */
export function scanMembers(buf: Uint8Array): { readonly members: readonly MemberSpan[]; readonly close: number } {
  const members: MemberSpan[] = [];
  let depth = 0;
  let inString = false;
  let stringStart = -1;
  let key: string | null = null;
  let keyStart = -1;
  let valueStart = -1;
  let lastNonSpace = -1;
  let close = -1;
  const endValue = () => {
    if (key !== null && valueStart >= 0) members.push({ key, keyStart, start: valueStart, end: lastNonSpace + 1 });
    key = null;
    valueStart = -1;
  };
  for (let i = 0; i < buf.length; i++) {
    const c = buf[i]!;
    if (inString) {
      if (c === BACKSLASH) i++;
      else if (c === QUOTE) {
        inString = false;
        lastNonSpace = i;
        // A string at depth 1 that is not a value is a key.
        if (depth === 1 && valueStart < 0 && key === null) {
          key = JSON.parse(Buffer.from(buf.subarray(stringStart, i + 1)).toString('utf8')) as string;
          keyStart = stringStart;
        }
      }
      continue;
    }
    if (isSpace(c)) continue;
    if (depth === 1 && key !== null && valueStart < 0 && c !== COLON) valueStart = i;
    if (c === QUOTE) {
      inString = true;
      stringStart = i;
    } else if (c === OPEN_OBJECT || c === OPEN_ARRAY) depth++;
    else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) {
      depth--;
      if (depth === 0) {
        endValue();
        close = i;
        break;
      }
    } else if (c === COMMA && depth === 1) endValue();
    lastNonSpace = i;
  }
  return { members, close };
}

/** The members of a top-level JSON object by key: the last of each (JSON.parse keeps the last one too). */
export function scanTopLevelObject(buf: Uint8Array): TopLevelObject {
  const { members, close } = scanMembers(buf);
  return { members: new Map(members.map((m) => [m.key, { start: m.start, end: m.end }])), close };
}
