// The snapshot stream's certificate authority: made once (ca-secret.ts keeps it in a Secret),
// it signs each controller replica's serving certificate; proxies trust it through the
// `tollgate-ca` ConfigMap of their namespace (its certificate only).
//
// The private key lives in a private field: JSON.stringify, util.inspect and a logger print
// only what toJSON() returns (subject, fingerprint, validity), never the key.
import { createPrivateKey, X509Certificate, type KeyObject } from 'node:crypto';
import { distinguishedName, isP256, issueCertificate, newKeyPair, subjectName, type Issuer } from './certificates.js';

export const CA_COMMON_NAME = 'tollgate-ca';
const DAY = 86_400_000;
/** Ten years: the CA outlives any cluster upgrade cycle; replacing it is a documented step. */
export const CA_LIFETIME_MS = 3650 * DAY;
/** Certificates start a little in the past: clocks of the nodes differ. */
const BACKDATE_MS = 5 * 60_000;

export interface ServingCertificate {
  readonly certificate: string;
  readonly privateKey: string;
  readonly notAfter: Date;
  readonly serialNumber: string;
}

export class CertificateAuthority {
  readonly certificate: string;
  readonly x509: X509Certificate;
  readonly #issuer: Issuer;

  private constructor(certificate: string, x509: X509Certificate, privateKey: KeyObject) {
    this.certificate = certificate;
    this.x509 = x509;
    this.#issuer = { name: subjectName(x509.raw), publicKey: x509.publicKey, privateKey };
  }

  /** A new CA valid from now (backdated a few minutes) for `lifetimeMs`. */
  static create(now = new Date(), lifetimeMs = CA_LIFETIME_MS): { ca: CertificateAuthority; privateKeyPem: string } {
    const { publicKey, privateKey } = newKeyPair();
    const pem = issueCertificate(
      { commonName: CA_COMMON_NAME, publicKey, notBefore: new Date(now.getTime() - BACKDATE_MS), notAfter: new Date(now.getTime() + lifetimeMs), profile: { kind: 'ca' } },
      { name: distinguishedName(CA_COMMON_NAME), publicKey, privateKey },
    );
    return { ca: new CertificateAuthority(pem, new X509Certificate(pem), privateKey), privateKeyPem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString() };
  }

  /**
   * A stored CA, checked: a CA certificate whose key is the given P-256 key, valid at `now`.
   * Throws an Error saying what is wrong (never quoting the key).
   */
  static load(certificatePem: string, privateKeyPem: string, now = new Date()): CertificateAuthority {
    let x509: X509Certificate;
    try {
      x509 = new X509Certificate(certificatePem);
    } catch (err) {
      throw new Error(`ca.crt is not a PEM certificate (${(err as Error).message})`);
    }
    let key: KeyObject;
    try {
      key = createPrivateKey(privateKeyPem);
    } catch {
      // The parser's message may quote the input: not repeated.
      throw new Error('ca.key is not a PEM private key');
    }
    if (!x509.ca) throw new Error(`ca.crt (${x509.subject.replace(/\n/g, ', ')}) is not a CA certificate (basicConstraints CA:FALSE)`);
    if (!isP256(key)) throw new Error(`ca.key is a ${key.asymmetricKeyType} key; the snapshot stream's CA is ECDSA P-256`);
    if (!x509.checkPrivateKey(key)) throw new Error('ca.key is not the private key of ca.crt');
    if (new Date(x509.validFrom) > now) throw new Error(`ca.crt is not valid before ${new Date(x509.validFrom).toISOString()}`);
    if (new Date(x509.validTo) <= now) throw new Error(`ca.crt expired at ${new Date(x509.validTo).toISOString()}`);
    return new CertificateAuthority(x509.toString(), x509, key);
  }

  get notAfter(): Date {
    return new Date(this.x509.validTo);
  }

  /**
   * A serving certificate for `dnsNames` and `ipAddresses`, valid `lifetimeMs` but never past
   * the CA itself; a fresh key each time (kept in memory by the caller only).
   */
  issueServing(dnsNames: readonly string[], ipAddresses: readonly string[], lifetimeMs: number, now = new Date()): ServingCertificate {
    const { publicKey, privateKey } = newKeyPair();
    const notAfter = new Date(Math.min(now.getTime() + lifetimeMs, this.notAfter.getTime()));
    const certificate = issueCertificate(
      { commonName: dnsNames[0] ?? ipAddresses[0] ?? 'tollgate-controller', publicKey, notBefore: new Date(now.getTime() - BACKDATE_MS), notAfter, profile: { kind: 'server', dnsNames, ipAddresses } },
      this.#issuer,
    );
    return { certificate, privateKey: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(), notAfter, serialNumber: new X509Certificate(certificate).serialNumber };
  }

  toJSON(): { subject: string; fingerprint256: string; notAfter: string } {
    return { subject: this.x509.subject, fingerprint256: this.x509.fingerprint256, notAfter: this.notAfter.toISOString() };
  }
}
