// Reads the server name (SNI) of a TLS ClientHello from the first bytes of a connection,
// without decrypting anything: the ClientHello is the one plaintext message of a handshake.
// Only a ClientHello that fits in the first TLS record is read: a record holds at most
// 16 KiB (RFC 8446 §5.1) and real ClientHellos, post-quantum key shares included, take a few
// KiB; anything else is not a TLS client and is refused.

/** A TLS record header (5 bytes) and the largest plaintext record body. */
export const MAX_CLIENT_HELLO_BYTES = 5 + 16_384;

export type ClientHello =
  /** More bytes are needed (fewer than the record announces). */
  | { readonly kind: 'incomplete' }
  /** A ClientHello; `serverName` null when it names none (no SNI extension, or an IP literal client). */
  | { readonly kind: 'hello'; readonly serverName: string | null; readonly recordBytes: number }
  | { readonly kind: 'invalid'; readonly reason: string };

const HANDSHAKE = 22;
const CLIENT_HELLO = 1;
const SERVER_NAME = 0;
const HOST_NAME = 0;

const incomplete: ClientHello = { kind: 'incomplete' };
const invalid = (reason: string): ClientHello => ({ kind: 'invalid', reason });

/** Reads the ClientHello at the start of `buf` (the bytes received so far). */
export function readClientHello(buf: Buffer): ClientHello {
  if (buf.length >= 1 && buf[0] !== HANDSHAKE) return invalid('not a TLS handshake record');
  if (buf.length < 5) return incomplete;
  if (buf[1] !== 3) return invalid('not a TLS record version');
  const recordLength = buf.readUInt16BE(3);
  if (recordLength > 16_384) return invalid(`record of ${recordLength} bytes exceeds 16384`);
  if (buf.length < 5 + recordLength) return incomplete;
  const body = buf.subarray(5, 5 + recordLength);
  if (body.length < 4 || body[0] !== CLIENT_HELLO) return invalid('first handshake message is not a ClientHello');
  const helloLength = body.readUIntBE(1, 3);
  if (helloLength > body.length - 4) return invalid('ClientHello spans more than one record');
  const hello = body.subarray(4, 4 + helloLength);
  const name = serverName(hello);
  return name === undefined ? invalid('malformed ClientHello') : { kind: 'hello', serverName: name, recordBytes: 5 + recordLength };
}

/** The host_name of the server_name extension; null: none; undefined: malformed. */
function serverName(hello: Buffer): string | null | undefined {
  let at = 2 + 32; // legacy_version, random
  if (hello.length < at + 1) return undefined;
  at += 1 + hello[at]!; // legacy_session_id
  if (hello.length < at + 2) return undefined;
  at += 2 + hello.readUInt16BE(at); // cipher_suites
  if (hello.length < at + 1) return undefined;
  at += 1 + hello[at]!; // legacy_compression_methods
  if (at === hello.length) return null; // no extensions
  if (hello.length < at + 2) return undefined;
  const end = at + 2 + hello.readUInt16BE(at);
  if (end > hello.length) return undefined;
  at += 2;
  while (at + 4 <= end) {
    const type = hello.readUInt16BE(at);
    const length = hello.readUInt16BE(at + 2);
    at += 4;
    if (at + length > end) return undefined;
    if (type === SERVER_NAME) return hostName(hello.subarray(at, at + length));
    at += length;
  }
  return at === end ? null : undefined;
}

function hostName(ext: Buffer): string | null | undefined {
  if (ext.length < 2 || 2 + ext.readUInt16BE(0) !== ext.length) return undefined;
  let at = 2;
  while (at + 3 <= ext.length) {
    const type = ext[at]!;
    const length = ext.readUInt16BE(at + 1);
    at += 3;
    if (at + length > ext.length) return undefined;
    if (type === HOST_NAME) {
      const name = ext.subarray(at, at + length).toString('latin1').toLowerCase();
      // RFC 6066 §3: a DNS name in ASCII, no trailing dot; anything else routes nowhere.
      return /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/.test(name) && name.length <= 253 ? name : undefined;
    }
    at += length;
  }
  return null;
}
