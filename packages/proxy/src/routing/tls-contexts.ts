// The TLS side of an HTTPS bind, compiled once per snapshot: one SecureContext per listener
// (its certificates), looked up by the SNI name of a ClientHello the way requests look up
// listeners by host (exact name, then the longest wildcard, then the catch-all). A ClientHello
// without SNI, or naming no listener, gets the default: the catch-all listener's certificates
// if there is one, else the first listener's (a client that sends no name still gets a
// handshake, as the Gateway API expects of a listener without hostname).
import { createSecureContext, type SecureContext } from 'node:tls';
import type { BindIR, CertificateIR, HttpsListenerIR } from '@tollgate/api';
import { TollgateError } from '../errors.js';
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
}

/**
 * SecureContexts kept by content across snapshots: a snapshot that changes only routes or
 * endpoints (most of them) reuses the parsed keys instead of building them again. Like the
 * limiter store, what a compile builds is committed when the snapshot is applied and dropped
 * when it is refused.
 */
export class TlsContextCache {
  #kept = new Map<string, SecureContext>();
  #building = new Map<string, SecureContext>();

  get(key: string, make: () => SecureContext): SecureContext {
    let ctx = this.#building.get(key) ?? this.#kept.get(key);
    ctx ??= make();
    this.#building.set(key, ctx);
    return ctx;
  }

  commit(): void {
    this.#kept = this.#building;
    this.#building = new Map();
  }

  discard(): void {
    this.#building = new Map();
  }
}

function contextFor(l: HttpsListenerIR, cache: TlsContextCache): SecureContext {
  const certs = l.tls.certificates;
  const key = certs.map((c) => `${c.certificate}\0${c.key.reveal()}`).join('\0\0');
  return cache.get(key, () =>
    createSecureContext({
      cert: certs.map((c) => c.certificate),
      key: certs.map((c) => ({ pem: c.key.reveal() })),
      minVersion: 'TLSv1.2',
    }),
  );
}

/** Throws (node:tls's error) when a key or certificate cannot be used: the snapshot is refused. */
export function compileBindTls(bind: BindIR, cache: TlsContextCache): BindTls | null {
  const https = bind.listeners.filter((l): l is HttpsListenerIR => l.protocol === 'HTTPS');
  if (!https.length) return null;
  const byListener = new Map<string, SecureContext>();
  const bySni = new HostTable<HttpsListenerIR>();
  for (const l of https) {
    try {
      byListener.set(l.name, contextFor(l, cache));
    } catch (err) {
      // node:tls names the parser's complaint, never the key's bytes.
      throw new TollgateError('TG_TLS_CERTIFICATE', `listener ${l.name}: the certificate cannot be used: ${(err as Error).message}`, { cause: err });
    }
    bySni.upsert(l.hostname, () => l);
  }
  const fallback = https.find((l) => l.hostname === null) ?? https[0]!;
  return { byListener, bySni, fallback: byListener.get(fallback.name)!, fallbackListener: fallback.name, fallbackCertificates: fallback.tls.certificates };
}
