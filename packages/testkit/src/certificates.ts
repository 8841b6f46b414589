// X.509 certificates made in-process for tests: a P-256 key and a certificate with the names
// and validity a test asks for (an expired one included), self-signed or signed by a test CA.
// Node can parse certificates but not issue them, so the DER is written here: only the few
// ASN.1 types a certificate needs.
import { createPrivateKey, generateKeyPairSync, randomBytes, sign, X509Certificate, type KeyObject } from 'node:crypto';
import { isIP } from 'node:net';

export interface TestCertificate {
  /** PEM certificate. */
  readonly cert: string;
  /** PEM PKCS#8 private key. */
  readonly key: string;
}

export interface CertificateRequest {
  readonly commonName: string;
  /** DNS names and IP addresses of the subjectAltName extension. */
  readonly names?: readonly string[];
  /** URI names of the subjectAltName extension (a SPIFFE ID, say). */
  readonly uris?: readonly string[];
  /** Default: an hour ago. */
  readonly notBefore?: Date;
  /** Default: a day from now. */
  readonly notAfter?: Date;
  /** Signs with this CA instead of self-signing. */
  readonly issuer?: TestCertificate;
  /** A CA certificate (basicConstraints CA:TRUE, keyCertSign). */
  readonly ca?: boolean;
}

function len(n: number): Buffer {
  if (n < 0x80) return Buffer.from([n]);
  const bytes: number[] = [];
  for (let v = n; v > 0; v >>= 8) bytes.unshift(v & 0xff);
  return Buffer.from([0x80 | bytes.length, ...bytes]);
}
const tlv = (tag: number, body: Buffer): Buffer => Buffer.concat([Buffer.from([tag]), len(body.length), body]);
const seq = (...items: Buffer[]) => tlv(0x30, Buffer.concat(items));
const set = (...items: Buffer[]) => tlv(0x31, Buffer.concat(items));
const explicit = (n: number, body: Buffer) => tlv(0xa0 + n, body);
const octets = (b: Buffer) => tlv(0x04, b);
const bits = (b: Buffer) => tlv(0x03, Buffer.concat([Buffer.from([0]), b]));
const bool = (v: boolean) => tlv(0x01, Buffer.from([v ? 0xff : 0]));

function integer(b: Buffer): Buffer {
  let i = 0;
  while (i < b.length - 1 && b[i] === 0) i++;
  const v = b.subarray(i);
  return tlv(0x02, v[0]! & 0x80 ? Buffer.concat([Buffer.from([0]), v]) : v);
}

function oid(text: string): Buffer {
  const parts = text.split('.').map(Number);
  const out = [40 * parts[0]! + parts[1]!];
  for (const p of parts.slice(2)) {
    const chunk: number[] = [];
    for (let v = p; ; v = Math.floor(v / 128)) {
      chunk.unshift((v % 128) | (chunk.length ? 0x80 : 0));
      if (v < 128) break;
    }
    out.push(...chunk);
  }
  return tlv(0x06, Buffer.from(out));
}

function time(d: Date): Buffer {
  const iso = d.toISOString().replace(/[-:T]/g, '').slice(0, 14) + 'Z';
  // UTCTime until 2049, GeneralizedTime after (RFC 5280 §4.1.2.5).
  return d.getUTCFullYear() < 2050 ? tlv(0x17, Buffer.from(iso.slice(2))) : tlv(0x18, Buffer.from(iso));
}

const name = (cn: string) => seq(set(seq(oid('2.5.4.3'), tlv(0x0c, Buffer.from(cn)))));

function ipBytes(ip: string): Buffer {
  if (isIP(ip) === 4) return Buffer.from(ip.split('.').map(Number));
  const [head, tail] = ip.split('::') as [string, string | undefined];
  const h = head ? head.split(':') : [];
  const t = tail ? tail.split(':') : [];
  const groups = [...h, ...Array<string>(8 - h.length - t.length).fill('0'), ...t];
  return Buffer.from(groups.flatMap((g) => [parseInt(g, 16) >> 8, parseInt(g, 16) & 0xff]));
}

const ECDSA_SHA256 = seq(oid('1.2.840.10045.4.3.2'));

export function issueTestCertificate(req: CertificateRequest): TestCertificate {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const signer: KeyObject = req.issuer ? createPrivateKey(req.issuer.key) : privateKey;
  const issuerName = req.issuer ? new X509Certificate(req.issuer.cert).subject.replace(/^CN=/, '') : req.commonName;
  const names = req.names ?? [];
  const uris = req.uris ?? [];
  const extensions: Buffer[] = [];
  if (names.length || uris.length) {
    const general = [...names.map((n) => (isIP(n) ? tlv(0x87, ipBytes(n)) : tlv(0x82, Buffer.from(n)))), ...uris.map((u) => tlv(0x86, Buffer.from(u)))];
    extensions.push(seq(oid('2.5.29.17'), octets(seq(...general))));
  }
  extensions.push(seq(oid('2.5.29.19'), bool(true), octets(req.ca ? seq(bool(true)) : seq())));
  // keyUsage: digitalSignature (and keyCertSign, cRLSign for a CA).
  extensions.push(seq(oid('2.5.29.15'), bool(true), octets(bits(Buffer.from([req.ca ? 0x86 : 0x80])))));
  const tbs = seq(
    explicit(0, integer(Buffer.from([2]))),
    integer(randomBytes(16)),
    ECDSA_SHA256,
    name(issuerName),
    seq(time(req.notBefore ?? new Date(Date.now() - 3_600_000)), time(req.notAfter ?? new Date(Date.now() + 86_400_000))),
    name(req.commonName),
    publicKey.export({ type: 'spki', format: 'der' }),
    explicit(3, seq(...extensions)),
  );
  const der = seq(tbs, ECDSA_SHA256, bits(sign('sha256', tbs, signer)));
  const body = der.toString('base64').replace(/(.{64})/g, '$1\n').replace(/\n$/, '');
  return { cert: `-----BEGIN CERTIFICATE-----\n${body}\n-----END CERTIFICATE-----\n`, key: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString() };
}
