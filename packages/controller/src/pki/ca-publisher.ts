// Publishes the CA certificate to the `tollgate-ca` ConfigMap of every namespace with a Gateway
// of our class (ca-configmap.ts renders them). Leader only, like the deployer: each reconcile
// hands it the accepted Gateways; a ConfigMap is applied (server-side apply, field manager
// `tollgate`) when its rendering changed since the last successful apply; a failed pass is
// retried with a backoff.
import { KubernetesObjectApi, PatchStrategy, type KubeConfig, type KubernetesObject } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { describeApiError } from '../kube/errors.js';
import type { Runnable } from '../runtime/runnable.js';
import type { Gateway } from '../types/gateway-api.js';
import { renderCaConfigMaps } from './ca-configmap.js';

export interface ConfigMapApi {
  apply(obj: KubernetesObject): Promise<void>;
}

export class KubeConfigMapApi implements ConfigMapApi {
  readonly #api: KubernetesObjectApi;
  constructor(kc: KubeConfig) {
    this.#api = KubernetesObjectApi.makeApiClient(kc);
  }

  async apply(obj: KubernetesObject): Promise<void> {
    await this.#api.patch(obj, undefined, undefined, 'tollgate', true, PatchStrategy.ServerSideApply);
  }
}

export class CaPublisher implements Runnable {
  readonly name = 'ca-publisher';
  readonly needsLeader = true;
  #gateways: readonly Gateway[] = [];
  #certificate: string | undefined;
  #active = false;
  #running = false;
  #again = false;
  #retryTimer: NodeJS.Timeout | undefined;
  #retryMs = 0;
  /** namespace -> JSON of the ConfigMap last applied there. */
  readonly #applied = new Map<string, string>();

  constructor(
    private readonly api: ConfigMapApi,
    private readonly log: Logger,
    private readonly retry = { initialMs: 1000, maxMs: 30_000 },
  ) {}

  /** The CA certificate to publish (known once the stream's CA is loaded). */
  setCertificate(pem: string): void {
    this.#certificate = pem;
    this.#kick();
  }

  submit(gateways: readonly Gateway[]): void {
    this.#gateways = gateways;
    this.#kick();
  }

  async start(): Promise<void> {
    this.#active = true;
    // A new term: another leader may have applied something else.
    this.#applied.clear();
    this.#kick();
  }

  async stop(): Promise<void> {
    this.#active = false;
    clearTimeout(this.#retryTimer);
    this.#retryTimer = undefined;
  }

  #kick(): void {
    if (!this.#active || this.#certificate === undefined) return;
    if (this.#running) {
      this.#again = true;
      return;
    }
    clearTimeout(this.#retryTimer);
    this.#retryTimer = undefined;
    this.#running = true;
    void this.#pass().finally(() => {
      this.#running = false;
      if (this.#again) {
        this.#again = false;
        this.#kick();
      }
    });
  }

  async #pass(): Promise<void> {
    let failed = 0;
    for (const cm of renderCaConfigMaps(this.#gateways, this.#certificate!)) {
      if (!this.#active) return;
      const ns = cm.metadata!.namespace!;
      const json = JSON.stringify(cm);
      if (this.#applied.get(ns) === json) continue;
      try {
        await this.api.apply(cm);
        this.#applied.set(ns, json);
        this.log.info({ namespace: ns, name: cm.metadata!.name }, 'CA certificate published');
      } catch (err) {
        failed++;
        this.#applied.delete(ns);
        this.log.error({ namespace: ns, name: cm.metadata!.name, err: describeApiError(err) }, `could not publish the CA certificate to ConfigMap ${ns}/${cm.metadata!.name}: ${describeApiError(err)}`);
      }
    }
    if (failed === 0) {
      this.#retryMs = 0;
      return;
    }
    this.#retryMs = this.#retryMs ? Math.min(this.retry.maxMs, this.#retryMs * 2) : this.retry.initialMs;
    this.#retryTimer = setTimeout(() => this.#kick(), this.#retryMs);
    this.#retryTimer.unref();
  }
}
