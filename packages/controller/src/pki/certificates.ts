// X.509 certificates for the snapshot stream: one fixed profile, ECDSA P-256 with SHA-256,
// for a CA and for the controller's serving certificate.
//
// Why by hand, on node:crypto: node:crypto makes the keys and the signatures and parses and
// verifies certificates (X509Certificate), but has no certificate builder; only the DER
// layout of the to-be-signed part is left, a few fixed fields (der.ts). The npm builders were
// weighed: @peculiar/x509 (engines node >= 20) needs a global `reflect-metadata` polyfill
// loaded into the process for its dependency injection; node-forge signs with RSA only and
// carries its own pure-JavaScript cryptography. Neither is worth a dependency for two
// certificate shapes; every certificate made here is checked by X509Certificate and by
// OpenSSL's own verification in the TLS handshakes of the tests.
import { createHash, generateKeyPairSync, randomBytes, sign, type KeyObject } from 'node:crypto';
import { isIPv4, isIPv6 } from 'node:net';
import { bitString, bool, children, explicit, implicitPrimitive, octetString, oid, readElement, sequence, set, smallInteger, time, unsignedInteger, utf8String } from './der.js';

const OID = {
  commonName: '2.5.4.3',
  organization: '2.5.4.10',
  ecdsaWithSha256: '1.2.840.10045.4.3.2',
  subjectKeyIdentifier: '2.5.29.14',
  keyUsage: '2.5.29.15',
  subjectAltName: '2.5.29.17',
  basicConstraints: '2.5.29.19',
  authorityKeyIdentifier: '2.5.29.35',
  extKeyUsage: '2.5.29.37',
  serverAuth: '1.3.6.1.5.5.7.3.1',
} as const;

/** A new ECDSA P-256 key pair: fast to make, small, accepted by every TLS stack in use. */
export function newKeyPair(): { publicKey: KeyObject; privateKey: KeyObject } {
  return generateKeyPairSync('ec', { namedCurve: 'P-256' });
}

/** True for a P-256 key, the only kind certificates here are signed with. */
export function isP256(key: KeyObject): boolean {
  return key.asymmetricKeyType === 'ec' && key.asymmetricKeyDetails?.namedCurve === 'prime256v1';
}

export interface Issuer {
  /** The issuer's subject Name, DER (the certificate's issuer field must be byte-equal to it). */
  readonly name: Buffer;
  readonly publicKey: KeyObject;
  readonly privateKey: KeyObject;
}

export type CertificateProfile =
  | { readonly kind: 'ca' }
  | { readonly kind: 'server'; readonly dnsNames: readonly string[]; readonly ipAddresses: readonly string[] };

export interface CertificateRequest {
  readonly commonName: string;
  readonly publicKey: KeyObject;
  readonly notBefore: Date;
  readonly notAfter: Date;
  readonly profile: CertificateProfile;
}

export function distinguishedName(commonName: string): Buffer {
  return sequence(set(sequence(oid(OID.organization), utf8String('Tollgate'))), set(sequence(oid(OID.commonName), utf8String(commonName))));
}

/** SHA-1 of the subjectPublicKey bits: RFC 5280's method (1) for a key identifier. */
export function keyIdentifier(publicKey: KeyObject): Buffer {
  const spki = children(readElement(publicKey.export({ type: 'spki', format: 'der' })).content);
  const bits = spki[1]!.content.subarray(1);
  return createHash('sha1').update(bits).digest();
}

function extension(id: string, critical: boolean, value: Buffer): Buffer {
  return sequence(oid(id), ...(critical ? [bool(true)] : []), octetString(value));
}

/** The bytes of an IP address for a subjectAltName iPAddress. */
export function ipBytes(ip: string): Buffer {
  if (isIPv4(ip)) return Buffer.from(ip.split('.').map(Number));
  if (!isIPv6(ip)) throw new Error(`${ip} is not an IP address`);
  const [head, tail] = ip.includes('::') ? ip.split('::') as [string, string] : [ip, undefined];
  const groups = (s: string) => (s ? s.split(':') : []);
  const h = groups(head);
  const t = tail === undefined ? [] : groups(tail);
  const all = tail === undefined ? h : [...h, ...Array<string>(8 - h.length - t.length).fill('0'), ...t];
  const out = Buffer.alloc(16);
  all.forEach((g, i) => out.writeUInt16BE(parseInt(g, 16), i * 2));
  return out;
}

/**
 * Signs a certificate for `req` with `issuer` (PEM). Self-signed when the issuer's public key
 * is the request's: then the issuer name must be distinguishedName(req.commonName).
 */
export function issueCertificate(req: CertificateRequest, issuer: Issuer): string {
  const subject = distinguishedName(req.commonName);
  const selfSigned = issuer.publicKey.equals(req.publicKey);
  const algorithm = sequence(oid(OID.ecdsaWithSha256));
  // 16 random bytes, the top bit cleared: a positive serial of at most 20 octets (RFC 5280).
  const serial = randomBytes(16);
  serial[0] = serial[0]! & 0x7f;
  const extensions: Buffer[] = [extension(OID.subjectKeyIdentifier, false, octetString(keyIdentifier(req.publicKey)))];
  if (!selfSigned) extensions.push(extension(OID.authorityKeyIdentifier, false, sequence(implicitPrimitive(0, keyIdentifier(issuer.publicKey)))));
  if (req.profile.kind === 'ca') {
    // pathLenConstraint 0: the CA signs serving certificates only, never another CA.
    extensions.push(extension(OID.basicConstraints, true, sequence(bool(true), smallInteger(0))));
    // keyCertSign (bit 5) and cRLSign (bit 6): 0x06 with one unused bit.
    extensions.push(extension(OID.keyUsage, true, Buffer.from([0x03, 0x02, 0x01, 0x06])));
  } else {
    extensions.push(extension(OID.basicConstraints, true, sequence()));
    // digitalSignature (bit 0), the only use of an ECDSA TLS server key.
    extensions.push(extension(OID.keyUsage, true, Buffer.from([0x03, 0x02, 0x07, 0x80])));
    extensions.push(extension(OID.extKeyUsage, false, sequence(oid(OID.serverAuth))));
    const names = [...req.profile.dnsNames.map((n) => implicitPrimitive(2, Buffer.from(n, 'ascii'))), ...req.profile.ipAddresses.map((ip) => implicitPrimitive(7, ipBytes(ip)))];
    if (names.length === 0) throw new Error('a serving certificate needs at least one DNS name or IP address');
    extensions.push(extension(OID.subjectAltName, false, sequence(...names)));
  }
  const tbs = sequence(
    explicit(0, smallInteger(2)), // v3
    unsignedInteger(serial),
    algorithm,
    issuer.name,
    sequence(time(req.notBefore), time(req.notAfter)),
    subject,
    req.publicKey.export({ type: 'spki', format: 'der' }),
    explicit(3, sequence(...extensions)),
  );
  const signature = sign('sha256', tbs, { key: issuer.privateKey, dsaEncoding: 'der' });
  return toPem(sequence(tbs, algorithm, bitString(signature)), 'CERTIFICATE');
}

export function toPem(der: Buffer, label: string): string {
  const b64 = der.toString('base64').replace(/.{1,64}/g, '$&\n');
  return `-----BEGIN ${label}-----\n${b64}-----END ${label}-----\n`;
}

/** The subject Name (DER) of a certificate (DER). */
export function subjectName(certificateDer: Buffer): Buffer {
  const tbs = children(children(readElement(certificateDer).content)[0]!.content);
  // version [0] is present in every v3 certificate; without it the fields shift by one.
  const offset = tbs[0]!.tag === 0xa0 ? 1 : 0;
  return tbs[offset + 4]!.raw;
}
