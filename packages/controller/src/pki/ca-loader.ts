// Brings the snapshot stream's TLS up before the stream server starts: the CA from its Secret
// (made on first start), then the serving certificate (serving.ts). The API server may not
// answer at once (a controller starting with its cluster): such failures are retried with a
// backoff for a while; a refusal (403) or an unusable Secret fails the start at once, with
// the fix in the message.
import type { Logger } from 'pino';
import { CONTROLLER_ERRORS } from '../errors.js';
import { describeApiError } from '../kube/errors.js';
import type { Runnable } from '../runtime/runnable.js';
import type { CertificateAuthority } from './authority.js';
import { isTransient, loadOrCreateCa, UnusableCaError, type CaSecretApi } from './ca-secret.js';
import { ServingCertificates, type ServingNames } from './serving.js';

export interface CaLoaderOptions {
  readonly api: CaSecretApi;
  readonly namespace: string;
  readonly secret: string;
  readonly names: ServingNames;
  readonly log: Logger;
  /** Told the CA once loaded (the publisher puts its certificate in each Gateway namespace). */
  readonly loaded?: (ca: CertificateAuthority) => void;
  /** How long transient failures are retried before the start fails (default 120 s). */
  readonly retryForMs?: number;
  readonly servingLifetimeMs?: number;
}

export class CaLoader implements Runnable {
  readonly name = 'snapshot-ca';
  readonly needsLeader = false;
  #serving: ServingCertificates | null = null;
  #ca: CertificateAuthority | null = null;
  #stopped = false;

  constructor(private readonly o: CaLoaderOptions) {}

  /** The serving certificates (after start). */
  get serving(): ServingCertificates {
    if (!this.#serving) throw new Error('the snapshot CA is not loaded yet');
    return this.#serving;
  }

  get ca(): CertificateAuthority | null {
    return this.#ca;
  }

  async start(): Promise<void> {
    this.#stopped = false;
    const deadline = Date.now() + (this.o.retryForMs ?? 120_000);
    for (let delay = 500; ; delay = Math.min(delay * 2, 10_000)) {
      try {
        const { ca, origin } = await loadOrCreateCa(this.o.api, this.o.namespace, this.o.secret);
        this.#ca = ca;
        this.o.log.info({ secret: `${this.o.namespace}/${this.o.secret}`, ca }, origin === 'created' ? 'snapshot stream CA created' : 'snapshot stream CA loaded');
        break;
      } catch (err) {
        const reason = err instanceof UnusableCaError ? err.message : `Secret ${this.o.namespace}/${this.o.secret}: ${describeApiError(err)}`;
        if (!isTransient(err) || Date.now() + delay > deadline || this.#stopped) throw CONTROLLER_ERRORS.streamCa.create({ reason });
        this.o.log.warn({ code: CONTROLLER_ERRORS.streamCa.code, retryInMs: delay }, `snapshot stream CA not loaded yet (${reason}); retrying in ${delay}ms`);
        await new Promise((r) => setTimeout(r, delay));
      }
    }
    this.#serving = new ServingCertificates(this.#ca, this.o.names, this.o.log, this.o.servingLifetimeMs);
    this.#serving.start();
    this.o.loaded?.(this.#ca);
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#serving?.stop();
  }
}
