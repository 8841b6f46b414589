// The controller's serving certificate for the snapshot stream, as a gRPC certificate
// provider: issued from the CA at start, in memory only (its key is never written anywhere),
// and re-issued when two thirds of its life have passed; the server takes the new one for
// new connections without dropping the streams it holds.
import * as grpc from '@grpc/grpc-js';
import type { Logger } from 'pino';
import type { CertificateAuthority, ServingCertificate } from './authority.js';

type IdentityListener = grpc.experimental.IdentityCertificateUpdateListener;

const DAY = 86_400_000;
export const SERVING_LIFETIME_MS = 30 * DAY;
// setTimeout holds at most 2^31-1 ms (24.8 days); a longer wait is taken in steps.
const MAX_TIMER_MS = 2 **31 - 1;

export interface ServingNames {
  readonly dnsNames: readonly string[];
  readonly ipAddresses: readonly string[];
}

export class ServingCertificates implements grpc.experimental.CertificateProvider {
  readonly #ca: CertificateAuthority;
  readonly #names: ServingNames;
  readonly #lifetimeMs: number;
  readonly #log: Logger;
  readonly #listeners = new Set<IdentityListener>();
  #current: ServingCertificate;
  #timer: NodeJS.Timeout | null = null;

  constructor(ca: CertificateAuthority, names: ServingNames, log: Logger, lifetimeMs = SERVING_LIFETIME_MS) {
    this.#ca = ca;
    this.#names = names;
    this.#lifetimeMs = lifetimeMs;
    this.#log = log;
    this.#current = this.#issue();
  }

  /** What the server presents now (certificate and metadata; the key is not exposed). */
  get current(): { readonly certificate: string; readonly notAfter: Date; readonly serialNumber: string } {
    const { certificate, notAfter, serialNumber } = this.#current;
    return { certificate, notAfter, serialNumber };
  }

  /** Issues a new certificate now and hands it to the server. */
  rotate(): void {
    this.#current = this.#issue();
    const update = { certificate: Buffer.from(this.#current.certificate), privateKey: Buffer.from(this.#current.privateKey) };
    for (const l of this.#listeners) l(update);
    this.#schedule();
  }

  /** Schedules rotations; stop() cancels them. */
  start(): void {
    this.#schedule();
  }

  stop(): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
  }

  #issue(): ServingCertificate {
    const c = this.#ca.issueServing(this.#names.dnsNames, this.#names.ipAddresses, this.#lifetimeMs);
    this.#log.info({ names: [...this.#names.dnsNames, ...this.#names.ipAddresses], notAfter: c.notAfter.toISOString(), serialNumber: c.serialNumber }, 'snapshot stream serving certificate issued');
    return c;
  }

  #schedule(): void {
    this.stop();
    const issuedFor = this.#current.notAfter.getTime() - Date.now();
    const renewIn = Math.max(0, Math.round((issuedFor * 2) / 3));
    const step = (remaining: number) => {
      this.#timer = setTimeout(() => (remaining > MAX_TIMER_MS ? step(remaining - MAX_TIMER_MS) : this.rotate()), Math.min(remaining, MAX_TIMER_MS));
      this.#timer.unref();
    };
    step(renewIn);
  }

  addCaCertificateListener(): void {
    // The server asks for no client certificates: proxies authenticate with their token.
  }

  removeCaCertificateListener(): void {}

  addIdentityCertificateListener(listener: IdentityListener): void {
    this.#listeners.add(listener);
    // Not synchronously: grpc-js registers the server's watcher only after this call returns,
    // and an update delivered before would be lost (the server would drop every connection).
    queueMicrotask(() => {
      if (this.#listeners.has(listener)) listener({ certificate: Buffer.from(this.#current.certificate), privateKey: Buffer.from(this.#current.privateKey) });
    });
  }

  removeIdentityCertificateListener(listener: IdentityListener): void {
    this.#listeners.delete(listener);
  }

  /**
   * Server credentials that follow this provider. grpc-js's exported factory passes its first
   * argument on as the identity provider (its parameter names say otherwise), so the
   * provider goes first and no CA provider is given.
   */
  serverCredentials(): grpc.ServerCredentials {
    return grpc.experimental.createCertificateProviderServerCredentials(this, null, false);
  }
}
