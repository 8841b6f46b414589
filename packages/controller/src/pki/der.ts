// The few DER (ASN.1 Distinguished Encoding Rules) shapes an X.509 certificate is made of,
// written and read by hand: certificates.ts lays out one fixed certificate profile with them.
// Only definite lengths; no general ASN.1 (nothing here parses an arbitrary structure).

function header(tag: number, length: number): Buffer {
  if (length < 0x80) return Buffer.from([tag, length]);
  const bytes: number[] = [];
  for (let n = length; n > 0; n >>= 8) bytes.unshift(n & 0xff);
  return Buffer.from([tag, 0x80 | bytes.length, ...bytes]);
}

export function tlv(tag: number, ...content: Buffer[]): Buffer {
  const body = Buffer.concat(content);
  return Buffer.concat([header(tag, body.length), body]);
}

export const sequence = (...items: Buffer[]) => tlv(0x30, ...items);
export const set = (...items: Buffer[]) => tlv(0x31, ...items);
export const octetString = (b: Buffer) => tlv(0x04, b);
export const utf8String = (s: string) => tlv(0x0c, Buffer.from(s, 'utf8'));
export const bool = (v: boolean) => tlv(0x01, Buffer.from([v ? 0xff : 0x00]));
/** A BIT STRING with no unused bits. */
export const bitString = (b: Buffer) => tlv(0x03, Buffer.from([0]), b);
/** [n] EXPLICIT, constructed. */
export const explicit = (n: number, inner: Buffer) => tlv(0xa0 | n, inner);
/** [n] IMPLICIT on a primitive value (e.g. a GeneralName's dNSName [2] or iPAddress [7]). */
export const implicitPrimitive = (n: number, value: Buffer) => tlv(0x80 | n, value);

/** A non-negative INTEGER from its big-endian magnitude. */
export function unsignedInteger(magnitude: Buffer): Buffer {
  let i = 0;
  while (i < magnitude.length - 1 && magnitude[i] === 0) i++;
  const trimmed = magnitude.subarray(i);
  return tlv(0x02, trimmed[0]! & 0x80 ? Buffer.concat([Buffer.from([0]), trimmed]) : trimmed);
}

export const smallInteger = (n: number) => unsignedInteger(Buffer.from([n]));

export function oid(dotted: string): Buffer {
  const parts = dotted.split('.').map(Number);
  const bytes = [40 * parts[0]! + parts[1]!];
  for (const p of parts.slice(2)) {
    const chunk = [p & 0x7f];
    for (let n = p >>> 7; n > 0; n >>>= 7) chunk.unshift(0x80 | (n & 0x7f));
    bytes.push(...chunk);
  }
  return tlv(0x06, Buffer.from(bytes));
}

/** UTCTime until 2049, GeneralizedTime from 2050 (RFC 5280 4.1.2.5), to the second. */
export function time(d: Date): Buffer {
  const iso = d.toISOString(); // YYYY-MM-DDTHH:MM:SS.sssZ
  const digits = iso.slice(0, 19).replace(/[-:T]/g, '');
  return d.getUTCFullYear() < 2050 ? tlv(0x17, Buffer.from(`${digits.slice(2)}Z`, 'ascii')) : tlv(0x18, Buffer.from(`${digits}Z`, 'ascii'));
}

export interface Element {
  readonly tag: number;
  /** The whole element, header included. */
  readonly raw: Buffer;
  readonly content: Buffer;
}

/** Reads one element at the start of `buf`; throws on a truncated or indefinite length. */
export function readElement(buf: Buffer): Element {
  if (buf.length < 2) throw new Error('DER: truncated element');
  const tag = buf[0]!;
  let length = buf[1]!;
  let offset = 2;
  if (length & 0x80) {
    const n = length & 0x7f;
    if (n === 0 || n > 4 || buf.length < 2 + n) throw new Error('DER: unsupported length');
    length = 0;
    for (let i = 0; i < n; i++) length = length * 256 + buf[2 + i]!;
    offset = 2 + n;
  }
  if (buf.length < offset + length) throw new Error('DER: truncated element');
  return { tag, raw: buf.subarray(0, offset + length), content: buf.subarray(offset, offset + length) };
}

/** The elements of a constructed element's content, in order. */
export function children(content: Buffer): Element[] {
  const out: Element[] = [];
  for (let rest = content; rest.length > 0; ) {
    const e = readElement(rest);
    out.push(e);
    rest = rest.subarray(e.raw.length);
  }
  return out;
}
