// The Gateway API release installed in the cluster: the bundle-version annotation of the
// GatewayClass CRD (GatewayClass SupportedVersion reports it). Read at start; a read that fails
// (`429 storage is (re)initializing` right after the CRDs are installed, the API server away,
// a 5xx) is retried in the background with a doubling backoff until it succeeds, and the
// controller reconciles again once it is known. Until then translation reports
// SupportedVersion Unknown (Pending). A CRD without the annotation is known to have no version.
import { ApiextensionsV1Api, type KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { RetryBackoff, type RetryOptions } from '../runtime/retry-backoff.js';
import type { Runnable } from '../runtime/runnable.js';
import { describeApiError } from './errors.js';

export const GATEWAYCLASS_CRD = 'gatewayclasses.gateway.networking.k8s.io';
const BUNDLE_VERSION = 'gateway.networking.k8s.io/bundle-version';

export class GatewayApiVersion implements Pick<Runnable, 'start' | 'stop'> {
  #value: string | undefined;
  readonly #retry: RetryBackoff;
  #stopped = false;
  #lastError = '';
  readonly #read: () => Promise<string | undefined>;

  constructor(
    kc: KubeConfig,
    private readonly log: Logger,
    /** Called when the version became known after start() (a reconcile reports it). */
    private readonly known: () => void,
    retry: RetryOptions = { initialMs: 1000, maxMs: 30_000 },
  ) {
    this.#retry = new RetryBackoff(retry);
    const api = kc.makeApiClient(ApiextensionsV1Api);
    this.#read = async () => (await api.readCustomResourceDefinition({ name: GATEWAYCLASS_CRD })).metadata?.annotations?.[BUNDLE_VERSION];
  }

  /** The installed version; undefined while not known (or when the CRD does not say). */
  get value(): string | undefined {
    return this.#value;
  }

  /** Makes the first attempt; failures are retried in the background. */
  async start(): Promise<void> {
    this.#stopped = false;
    await this.#attempt(false);
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#retry.cancel();
  }

  async #attempt(retrying: boolean): Promise<void> {
    try {
      this.#value = await this.#read();
    } catch (err) {
      if (this.#stopped) return;
      const message = describeApiError(err);
      const retryInMs = this.#retry.failed(() => void this.#attempt(true));
      if (message !== this.#lastError) this.log.warn({ crd: GATEWAYCLASS_CRD, err: message, retryInMs }, 'cannot read the Gateway API version yet; GatewayClass SupportedVersion is Unknown until it is read');
      this.#lastError = message;
      return;
    }
    this.log.info({ gatewayApi: this.#value ?? 'unknown' }, 'Gateway API CRDs');
    if (retrying) this.known();
  }
}
