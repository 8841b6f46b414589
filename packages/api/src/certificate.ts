// Checking a certificate and its private key, shared by the config loader (files), the
// controller (Secrets) and the proxy's config dump. Only public facts leave this module: the
// key is parsed to check that it belongs to the certificate and is never copied anywhere.
import { createPrivateKey, X509Certificate } from 'node:crypto';

/** What a config dump may show of a certificate: nothing secret. */
export interface CertificateInfo {
  readonly subject: string;
  readonly issuer: string;
  /** DNS names and IP addresses of the subjectAltName extension. */
  readonly sans: readonly string[];
  readonly notBefore: string;
  readonly notAfter: string;
  /** SHA-256 fingerprint of the leaf, colon-separated hex (as openssl prints it). */
  readonly fingerprint: string;
  /** Certificates in the PEM, the leaf included. */
  readonly chainLength: number;
}

export type CertificateCheck =
  | { readonly ok: true; readonly info: CertificateInfo }
  | { readonly ok: false; readonly field: 'certificate' | 'key'; readonly problem: string };

const PEM_CERT = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g;

function sansOf(x: X509Certificate): string[] {
  const text = x.subjectAltName;
  if (!text) return [];
  return text
    .split(', ')
    .map((s) => s.replace(/^(DNS|IP Address):/, ''))
    .filter((s) => s.length > 0);
}

/** Public facts of the leaf of a PEM chain, or null when it does not parse. */
export function certificateInfo(pem: string): CertificateInfo | null {
  const blocks = pem.match(PEM_CERT) ?? [];
  if (!blocks.length) return null;
  try {
    const leaf = new X509Certificate(blocks[0]!);
    return {
      subject: leaf.subject.replace(/\n/g, ', '),
      issuer: leaf.issuer.replace(/\n/g, ', '),
      sans: sansOf(leaf),
      notBefore: new Date(leaf.validFrom).toISOString(),
      notAfter: new Date(leaf.validTo).toISOString(),
      fingerprint: leaf.fingerprint256,
      chainLength: blocks.length,
    };
  } catch {
    return null;
  }
}

/**
 * Checks that `certificate` is a PEM chain (leaf first) and `key` an unencrypted PEM private
 * key of the leaf. The problem phrases say what is wrong and what to give instead; they never
 * quote the key.
 */
export function checkCertificate(certificate: string, key: string): CertificateCheck {
  const blocks = certificate.match(PEM_CERT) ?? [];
  if (!blocks.length) return { ok: false, field: 'certificate', problem: 'holds no PEM certificate ("-----BEGIN CERTIFICATE-----"); give the certificate chain in PEM, leaf first' };
  let leaf: X509Certificate;
  try {
    leaf = new X509Certificate(blocks[0]!);
    for (const b of blocks.slice(1)) new X509Certificate(b);
  } catch (err) {
    return { ok: false, field: 'certificate', problem: `is not a valid PEM certificate (${(err as Error).message}); give the certificate chain in PEM, leaf first` };
  }
  if (!/-----BEGIN ([A-Z]+ )?PRIVATE KEY-----/.test(key)) {
    return { ok: false, field: 'key', problem: 'holds no PEM private key ("-----BEGIN PRIVATE KEY-----"); give the unencrypted private key of the certificate in PEM' };
  }
  let keyObject;
  try {
    keyObject = createPrivateKey({ key, format: 'pem' });
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    // The message of a parse failure describes the parser, not the key: safe to show.
    const why = /passphrase|encrypted/i.test(e.message) ? 'it is encrypted; give the key without a passphrase' : `it does not parse (${e.code ?? e.message})`;
    return { ok: false, field: 'key', problem: `is not a usable private key: ${why}` };
  }
  if (!leaf.checkPrivateKey(keyObject)) {
    return { ok: false, field: 'key', problem: `does not belong to the certificate (subject ${leaf.subject.replace(/\n/g, ', ')}); give the key the certificate was issued for` };
  }
  return { ok: true, info: certificateInfo(certificate)! };
}

/** Largest PEM CA bundle a policy may name (a system bundle is about 200 KiB). */
export const MAX_CA_BUNDLE_BYTES = 1_048_576;

/**
 * Checks a PEM bundle of CA certificates that an outbound TLS connection trusts (a JWKS
 * server's, an authorization service's): null when usable, else what is wrong.
 */
export function caBundleProblem(pem: string): string | null {
  if (Buffer.byteLength(pem) > MAX_CA_BUNDLE_BYTES) return `is ${Buffer.byteLength(pem)} bytes, more than the ${MAX_CA_BUNDLE_BYTES} a CA bundle may have`;
  const blocks = pem.match(PEM_CERT) ?? [];
  if (!blocks.length) return 'holds no PEM certificate ("-----BEGIN CERTIFICATE-----"); give the CA certificates in PEM';
  for (let i = 0; i < blocks.length; i++) {
    try {
      new X509Certificate(blocks[i]!);
    } catch (err) {
      return `certificate ${i + 1} of the bundle is not a valid PEM certificate (${(err as Error).message})`;
    }
  }
  return null;
}

/** Public facts of each certificate of a CA bundle (a config dump's view of it); an unparsable one shows as such. */
export function caBundleInfo(pem: string): { readonly subject: string; readonly notAfter: string | null; readonly fingerprint: string | null }[] {
  return (pem.match(PEM_CERT) ?? []).map((block) => {
    const info = certificateInfo(block);
    return info ? { subject: info.subject, notAfter: info.notAfter, fingerprint: info.fingerprint } : { subject: '(unparsable certificate)', notAfter: null, fingerprint: null };
  });
}

/** A warning when the leaf is outside its validity period at `now`, else null. */
export function validityWarning(info: CertificateInfo, now: number): string | null {
  if (Date.parse(info.notAfter) <= now) return `certificate ${info.subject} expired at ${info.notAfter}; clients will refuse it until it is renewed`;
  if (Date.parse(info.notBefore) > now) return `certificate ${info.subject} is not valid before ${info.notBefore}; clients will refuse it until then`;
  return null;
}
