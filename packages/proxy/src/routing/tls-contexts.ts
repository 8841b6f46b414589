// The TLS side of an HTTPS bind, compiled once per snapshot: one SecureContext per listener
// (its certificates), looked up by the SNI name of a ClientHello the way requests look up
// listeners by host (exact name, then the longest wildcard, then the catch-all). A ClientHello
// without SNI, or naming no listener, gets the default: the catch-all listener's certificates
// if there is one, else the first listener's (a client that sends no name still gets a
// handshake, as the Gateway API expects of a listener without hostname).
//
// A listener with client validation has its CA bundle in its context (OpenSSL verifies a client
// certificate against the context the handshake used) and its own TLS session id context. The
// server asks for a client certificate when any listener of the bind validates; whether a
// connection may go on is the data plane's decision, per listener (server/data-plane.ts).
import { createSecureContext, type SecureContext, type SecureContextOptions } from 'node:tls';
import type { BindIR, CertificateIR, HttpsListenerIR } from '@tollgate/api';
import { TollgateError } from '../errors.js';
import { compileClientValidation, validationKey, type CompiledClientValidation } from './client-validation.js';
import { HostTable } from './host-table.js';

export interface BindTls {
  /** Listener name -> context. */
  readonly byListener: ReadonlyMap<string, SecureContext>;
  /** Listener by SNI name (most specific first). */
  readonly bySni: HostTable<HttpsListenerIR>;
  readonly fallback: SecureContext;
  /** The listener whose certificates the fallback is, and those certificates. */
  readonly fallbackListener: string;
  readonly fallbackCertificates: readonly CertificateIR[];
  /** Client validation by listener name (absent: the listener asks for no certificate); the same object while its content is. */
  readonly validation: ReadonlyMap<string, CompiledClientValidation>;
  /** Some listener of the bind validates: every handshake asks for a client certificate. */
  readonly requestCert: boolean;
}

/** Objects kept by content across snapshots, committed when the snapshot is applied and dropped when it is refused. */
class KeptByContent<T> {
  #kept = new Map<string, T>();
  #building = new Map<string, T>();

  get(key: string, make: () => T): T {
    let value = this.#building.get(key) ?? this.#kept.get(key);
    value ??= make();
    this.#building.set(key, value);
    return value;
  }

  commit(): void {
    this.#kept = this.#building;
    this.#building = new Map();
  }

  discard(): void {
    this.#building = new Map();
  }
}

/**
 * SecureContexts kept by content across snapshots: a snapshot that changes only routes or
 * endpoints (most of them) reuses the parsed keys instead of building them again. Like the
 * limiter store, what a compile builds is committed when the snapshot is applied and dropped
 * when it is refused. Client validations are kept the same way: a connection verified under a
 * validation stays valid for its listener while the listener keeps that object.
 */
export class TlsContextCache {
  readonly #contexts = new KeptByContent<SecureContext>();
  readonly #validations = new KeptByContent<CompiledClientValidation>();

  get(key: string, make: () => SecureContext): SecureContext {
    return this.#contexts.get(key, make);
  }

  validation(key: string, make: () => CompiledClientValidation): CompiledClientValidation {
    return this.#validations.get(key, make);
  }

  commit(): void {
    this.#contexts.commit();
    this.#validations.commit();
  }

  discard(): void {
    this.#contexts.discard();
    this.#validations.discard();
  }
}

/** The options of a listener's context: its certificates, and its CAs when it checks client certificates. */
export function contextOptions(certs: readonly CertificateIR[], validation: CompiledClientValidation | undefined): SecureContextOptions & { minVersion: 'TLSv1.2' } {
  return {
    cert: certs.map((c) => c.certificate),
    key: certs.map((c) => ({ pem: c.key.reveal() })),
    minVersion: 'TLSv1.2',
    ...(validation ? { ca: validation.ir.caCertificates, sessionIdContext: validation.sessionIdContext } : {}),
  };
}

function contextFor(l: HttpsListenerIR, validation: CompiledClientValidation | undefined, cache: TlsContextCache): SecureContext {
  const certs = l.tls.certificates;
  const key = certs.map((c) => `${c.certificate}\0${c.key.reveal()}`).join('\0\0') + (validation ? `\0\0\0${validationKey(validation.ir)}` : '');
  return cache.get(key, () => createSecureContext(contextOptions(certs, validation)));
}

function validationFor(l: HttpsListenerIR, cache: TlsContextCache): CompiledClientValidation | undefined {
  const ir = l.tls.clientValidation;
  if (!ir) return undefined;
  try {
    return cache.validation(validationKey(ir), () => compileClientValidation(ir));
  } catch (err) {
    throw new TollgateError('TG_TLS_CLIENT_CA', `listener ${l.name}: the client CA certificates cannot be used: ${(err as Error).message}`, { cause: err });
  }
}

/** Throws (node:tls's error) when a key or certificate cannot be used: the snapshot is refused. */
export function compileBindTls(bind: BindIR, cache: TlsContextCache): BindTls | null {
  const https = bind.listeners.filter((l): l is HttpsListenerIR => l.protocol === 'HTTPS');
  if (!https.length) return null;
  const byListener = new Map<string, SecureContext>();
  const bySni = new HostTable<HttpsListenerIR>();
  const validation = new Map<string, CompiledClientValidation>();
  for (const l of https) {
    const v = validationFor(l, cache);
    if (v) validation.set(l.name, v);
    try {
      byListener.set(l.name, contextFor(l, v, cache));
    } catch (err) {
      // node:tls names the parser's complaint, never the key's bytes.
      throw new TollgateError('TG_TLS_CERTIFICATE', `listener ${l.name}: the certificate cannot be used: ${(err as Error).message}`, { cause: err });
    }
    bySni.upsert(l.hostname, () => l);
  }
  const fallback = https.find((l) => l.hostname === null) ?? https[0]!;
  return {
    byListener,
    bySni,
    fallback: byListener.get(fallback.name)!,
    fallbackListener: fallback.name,
    fallbackCertificates: fallback.tls.certificates,
    validation,
    requestCert: validation.size > 0,
  };
}

/**
 * The options of the server's own context, the one a ClientHello without SNI gets: the default
 * listener's, with the server-wide settings. A client certificate is asked for when a listener
 * validates, and never refused by node:tls itself: AllowInsecureFallback listeners take clients
 * whose certificate does not verify, so the data plane decides per listener.
 */
export function serverContextOptions(tls: BindTls): SecureContextOptions & { minVersion: 'TLSv1.2'; requestCert: boolean; rejectUnauthorized: false } {
  return { ...contextOptions(tls.fallbackCertificates, tls.validation.get(tls.fallbackListener)), requestCert: tls.requestCert, rejectUnauthorized: false };
}
