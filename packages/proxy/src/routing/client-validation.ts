// Client certificates on HTTPS listeners (mutual TLS): a listener's validation compiled once per
// content, and what the handshake of a connection established about its client. OpenSSL
// verifies the chain against the CA bundle of the SecureContext the handshake used (the
// listener's, see ./tls-contexts.ts); the data plane reads the result once per connection
// (server/data-plane.ts) and every request on the connection reuses it.
//
// Only a verified certificate is an identity: an AllowInsecureFallback listener lets other
// clients in, and what they present is shown in traces (marked unverified) but never reaches
// authorization rules or keyed budgets.
import { createHash } from 'node:crypto';
import type { TLSSocket } from 'node:tls';
import { caBundleProblem, type ClientCertificateInputs, type ClientValidationIR } from '@tollgate/api';
import { altNames } from '../upstream/backend-tls.js';

export interface CompiledClientValidation {
  readonly ir: ClientValidationIR;
  /**
   * The TLS session id context of the listener's handshakes: a session made under other
   * validation settings (another listener's, or these before its CAs changed) is not resumed
   * here, so a resumed session never carries a verdict of other CAs.
   */
  readonly sessionIdContext: string;
}

/** The content a validation is kept by across snapshots: equal content, the same compiled object. */
export function validationKey(ir: ClientValidationIR): string {
  return `${ir.mode}\0${ir.caCertificates}`;
}

/** Throws an Error naming what is wrong with the CA bundle (node:tls would take a garbage bundle silently). */
export function compileClientValidation(ir: ClientValidationIR): CompiledClientValidation {
  const problem = caBundleProblem(ir.caCertificates);
  if (problem) throw new Error(`the CA bundle (${ir.origins.join(', ')}) ${problem}`);
  // OpenSSL takes at most 32 bytes.
  const sessionIdContext = createHash('sha256').update(validationKey(ir)).digest('hex').slice(0, 32);
  return { ir, sessionIdContext };
}

/** What a connection's handshake established about its client; never the certificate itself. */
export interface ClientCertificateFacts {
  /** The certificate chains to the listener's CAs and is within its validity period. */
  readonly verified: boolean;
  /** Why not, as OpenSSL names it (e.g. CERT_HAS_EXPIRED), or NO_CERTIFICATE; null when verified. */
  readonly error: string | null;
  /** Of the certificate the client presented (verified or not); null when it presented none. */
  readonly subject: string | null;
  readonly issuer: string | null;
  readonly dnsSans: readonly string[];
  readonly uriSans: readonly string[];
  readonly notAfter: string | null;
  /** SHA-256 fingerprint, colon-separated hex. */
  readonly fingerprint: string | null;
  /** What expressions and keyed budgets see: the verified certificate, or null. */
  readonly inputs: ClientCertificateInputs | null;
}

export const NO_CERTIFICATE = 'NO_CERTIFICATE';

function sansOf(text: string | undefined): { dns: string[]; uri: string[] } {
  const names = altNames(text);
  return { dns: names.filter((n) => n.type === 'DNS').map((n) => n.value), uri: names.filter((n) => n.type === 'URI').map((n) => n.value) };
}

const oneLine = (dn: string): string => dn.replace(/\n/g, ', ');

/** OpenSSL's code for why the certificate did not verify (node:tls sets a string, its types say Error). */
function verifyError(socket: TLSSocket): string {
  const why: unknown = socket.authorizationError;
  if (typeof why === 'string') return why;
  if (why instanceof Error) return (why as NodeJS.ErrnoException).code ?? why.message;
  return 'UNVERIFIED';
}

/** The facts of a connection whose handshake asked for a client certificate. */
export function clientCertificateFacts(socket: TLSSocket): ClientCertificateFacts {
  const peer = socket.getPeerX509Certificate();
  const verified = socket.authorized === true && peer !== undefined;
  if (!peer) return { verified: false, error: NO_CERTIFICATE, subject: null, issuer: null, dnsSans: [], uriSans: [], notAfter: null, fingerprint: null, inputs: null };
  const sans = sansOf(peer.subjectAltName);
  const subject = oneLine(peer.subject);
  return {
    verified,
    error: verified ? null : verifyError(socket),
    subject,
    issuer: oneLine(peer.issuer),
    dnsSans: sans.dns,
    uriSans: sans.uri,
    notAfter: new Date(peer.validTo).toISOString(),
    fingerprint: peer.fingerprint256,
    inputs: verified ? { subject, dnsSans: sans.dns, uriSans: sans.uri } : null,
  };
}
