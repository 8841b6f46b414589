// TLS to a backend: the undici connect options of a BackendTLSIR, the identity check it asks
// for, and the key that gives each distinct setting a pool of its own (endpoints.ts), so two
// backends at one address with different TLS never share a connection.
import { createHash } from 'node:crypto';
import { isIP, type LookupFunction } from 'node:net';
import { checkServerIdentity, type ConnectionOptions, type PeerCertificate } from 'node:tls';
import { certificateInfo, type BackendTLSIR, type SubjectAltNameIR } from '@tollgate/api';
import type { buildConnector as BuildConnector } from 'undici';
import { buildConnector } from './undici-pool.js';

type Connector = BuildConnector.connector;

/** Node's TLS certificate verification codes (OpenSSL's X509_V_ERR_* names) and the name check's. */
const CERTIFICATE_CODES: ReadonlySet<string> = new Set([
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'UNABLE_TO_DECRYPT_CERT_SIGNATURE',
  'UNABLE_TO_DECODE_ISSUER_PUBLIC_KEY',
  'CERT_SIGNATURE_FAILURE',
  'CERT_REVOKED',
  'CERT_UNTRUSTED',
  'CERT_REJECTED',
  'CERT_CHAIN_TOO_LONG',
  'INVALID_CA',
  'INVALID_PURPOSE',
  'PATH_LENGTH_EXCEEDED',
  'HOSTNAME_MISMATCH',
  'ERROR_IN_CERT_NOT_BEFORE_FIELD',
  'ERROR_IN_CERT_NOT_AFTER_FIELD',
  'ERR_TLS_CERT_ALTNAME_INVALID',
]);

/** How a failed TLS connection reads: the certificate did not verify, the handshake failed, or neither. */
export function tlsFailureKind(code: string | undefined): 'certificate' | 'handshake' | null {
  if (code === undefined) return null;
  if (CERTIFICATE_CODES.has(code)) return 'certificate';
  if (code.startsWith('ERR_SSL_') || code.startsWith('ERR_TLS_')) return 'handshake';
  return null;
}

/** `TYPE:value` entries of a certificate's subjectaltname text; values with a comma or a quote come JSON-quoted. */
export function altNames(text: string | undefined): { type: string; value: string }[] {
  const out: { type: string; value: string }[] = [];
  if (!text) return out;
  const re = /([A-Za-z ]+):("(?:[^"\\]|\\.)*"|[^,]*)(?:, |$)/y;
  for (let m = re.exec(text); m && m[0].length; m = re.exec(text)) {
    const raw = m[2]!;
    let value = raw;
    if (raw.startsWith('"')) {
      try {
        value = JSON.parse(raw) as string;
      } catch {
        // Left as written: it then matches nothing.
      }
    }
    out.push({ type: m[1]!, value });
  }
  return out;
}

function altNameInvalid(reason: string): Error {
  return Object.assign(new Error(reason), { code: 'ERR_TLS_CERT_ALTNAME_INVALID' });
}

/**
 * The check of the certificate's names (the chain is verified by OpenSSL before this): with
 * no subjectAltNames, `hostname` must be among its names (wildcards as RFC 6125 allows); with
 * some, one of them must be: a Hostname like `hostname` would be, a URI exactly.
 */
export function identityCheck(tls: BackendTLSIR): (servername: string, cert: PeerCertificate) => Error | undefined {
  if (!tls.subjectAltNames.length) return (_servername, cert) => checkServerIdentity(tls.hostname, cert);
  const names = tls.subjectAltNames;
  return (_servername, cert) => {
    const uris = altNames(cert.subjectaltname)
      .filter((n) => n.type === 'URI')
      .map((n) => n.value);
    for (const san of names) {
      if (san.type === 'URI' ? uris.includes(san.uri) : checkServerIdentity(san.hostname, cert) === undefined) return undefined;
    }
    return altNameInvalid(`certificate names [${cert.subjectaltname ?? ''}] include none of the subjectAltNames ${names.map(show).join(', ')}`);
  };
}

function show(san: SubjectAltNameIR): string {
  return san.type === 'URI' ? `URI:${san.uri}` : `DNS:${san.hostname}`;
}

/**
 * undici's connector for a backend's TLS. undici takes the SNI from each request's Host
 * header unless told otherwise (and drops the connection when it changes): the connector sends
 * `hostname` whatever the request says, or no SNI when it is an address, and every request
 * through the pool carries `hostname` as its servername (Endpoint#servername), so requests
 * with different Host headers share the pool's connections.
 */
export function tlsConnector(tls: BackendTLSIR, timeoutMs: number, lookup?: LookupFunction): Connector {
  const connect = buildConnector({ ...connectOptions(tls), timeout: timeoutMs, ...(lookup ? { lookup } : {}) });
  const servername = isIP(tls.hostname) ? undefined : tls.hostname;
  return (opts, callback) => connect({ ...opts, servername }, callback);
}

/** The TLS options of a backend: verification always on; SNI unless the name is an address. */
export function connectOptions(tls: BackendTLSIR): ConnectionOptions {
  const cert = tls.clientCertificate;
  return {
    rejectUnauthorized: true,
    ...(tls.caCertificates !== null ? { ca: tls.caCertificates } : {}),
    ...(isIP(tls.hostname) ? {} : { servername: tls.hostname }),
    ...(cert ? { cert: cert.certificate, key: cert.key.reveal() } : {}),
    minVersion: tls.minVersion,
    checkServerIdentity: identityCheck(tls),
  };
}

/**
 * What tells two TLS settings apart, as a short digest: every field but the client key, which
 * its certificate already determines (and which no key of a map should be derived from).
 */
export function tlsSettingKey(tls: BackendTLSIR): string {
  const { clientCertificate: cert, ...rest } = tls;
  return createHash('sha256')
    .update(JSON.stringify({ ...rest, clientCertificate: cert?.certificate ?? null }))
    .digest('hex')
    .slice(0, 16);
}

/** What /config_dump shows of a backend's TLS: the settings and public facts, never the client key. */
export function tlsView(tls: BackendTLSIR | undefined) {
  if (!tls) return null;
  const cert = tls.clientCertificate;
  return {
    hostname: tls.hostname,
    subjectAltNames: tls.subjectAltNames,
    trust: tls.caCertificates === null ? 'system roots' : `${(tls.caCertificates.match(/-----BEGIN CERTIFICATE-----/g) ?? []).length} CA certificates`,
    clientCertificate: cert ? { origin: cert.origin, ...(certificateInfo(cert.certificate) ?? {}) } : null,
    minVersion: tls.minVersion,
  };
}
