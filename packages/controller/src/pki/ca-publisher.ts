// Publishes the CA certificate to the `tollgate-ca` ConfigMap of every namespace with a Gateway
// of our class (ca-configmap.ts renders them). Leader only, like the deployer: each reconcile
// hands it the accepted Gateways; a ConfigMap is applied (server-side apply, field manager
// `tollgate`) when its rendering changed since the last successful apply; a failed pass is
// retried with a backoff.
//
// It never overwrites a `tollgate-ca` ConfigMap it did not make: before each apply it reads the
// one of that name (a list by name; no get is granted), and one without Tollgate's labels is a
// conflict: left alone, named on the namespace's Gateways (Programmed False, conflict()), and
// checked again with the backoff until it is gone.
import { CoreV1Api, KubernetesObjectApi, PatchStrategy, type KubeConfig, type KubernetesObject } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { CONTROLLER_ERRORS } from '../errors.js';
import { describeApiError } from '../kube/errors.js';
import type { Runnable } from '../runtime/runnable.js';
import type { Gateway } from '../types/gateway-api.js';
import { CA_CONFIGMAP, CA_CONFIGMAP_LABELS, isOurCaConfigMap, renderCaConfigMaps } from './ca-configmap.js';

export interface ConfigMapApi {
  apply(obj: KubernetesObject): Promise<void>;
  /** The labels of the ConfigMap of that name, or undefined when there is none. */
  labels(namespace: string, name: string): Promise<Record<string, string> | undefined>;
}

export class KubeConfigMapApi implements ConfigMapApi {
  readonly #api: KubernetesObjectApi;
  readonly #core: CoreV1Api;
  constructor(kc: KubeConfig) {
    this.#api = KubernetesObjectApi.makeApiClient(kc);
    this.#core = kc.makeApiClient(CoreV1Api);
  }

  async apply(obj: KubernetesObject): Promise<void> {
    await this.#api.patch(obj, undefined, undefined, 'tollgate', true, PatchStrategy.ServerSideApply);
  }

  async labels(namespace: string, name: string): Promise<Record<string, string> | undefined> {
    const item = (await this.#core.listNamespacedConfigMap({ namespace, fieldSelector: `metadata.name=${name}`, limit: 1 })).items[0];
    return item && (item.metadata?.labels ?? {});
  }
}

export interface CaPublisherOptions {
  readonly api: ConfigMapApi;
  readonly log: Logger;
  /** Retries of a failed publication; default 1 s doubling to 30 s. */
  readonly retry?: { readonly initialMs: number; readonly maxMs: number };
  /** Told when the set of conflicts changed (the status writer re-reads conflict()). */
  readonly onConflicts?: () => void;
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
  /** namespace -> why its `tollgate-ca` ConfigMap is left alone (someone else's). */
  #conflicts = new Map<string, string>();

  readonly #o: Required<CaPublisherOptions>;

  constructor(options: CaPublisherOptions) {
    this.#o = { ...options, retry: options.retry ?? { initialMs: 1000, maxMs: 30_000 }, onConflicts: options.onConflicts ?? (() => undefined) };
  }

  /** Why the proxies of the namespace cannot get the CA certificate, while that is so. */
  conflict(namespace: string): string | undefined {
    return this.#conflicts.get(namespace);
  }

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
    const conflicts = new Map<string, string>();
    for (const cm of renderCaConfigMaps(this.#gateways, this.#certificate!)) {
      if (!this.#active) return;
      const ns = cm.metadata!.namespace!;
      const json = JSON.stringify(cm);
      if (this.#applied.get(ns) === json) continue;
      try {
        const labels = await this.#o.api.labels(ns, CA_CONFIGMAP);
        if (labels !== undefined && !isOurCaConfigMap(labels)) {
          failed++;
          conflicts.set(ns, notOurs(ns));
          continue;
        }
        await this.#o.api.apply(cm);
        this.#applied.set(ns, json);
        this.#o.log.info({ namespace: ns, name: cm.metadata!.name }, 'CA certificate published');
      } catch (err) {
        failed++;
        this.#applied.delete(ns);
        this.#o.log.error({ namespace: ns, name: cm.metadata!.name, err: describeApiError(err) }, `could not publish the CA certificate to ConfigMap ${ns}/${cm.metadata!.name}: ${describeApiError(err)}`);
      }
    }
    this.#setConflicts(conflicts);
    if (failed === 0) {
      this.#retryMs = 0;
      return;
    }
    this.#retryMs = this.#retryMs ? Math.min(this.#o.retry.maxMs, this.#retryMs * 2) : this.#o.retry.initialMs;
    this.#retryTimer = setTimeout(() => this.#kick(), this.#retryMs);
    this.#retryTimer.unref();
  }

  #setConflicts(conflicts: Map<string, string>): void {
    const changed = conflicts.size !== this.#conflicts.size || [...conflicts].some(([k, v]) => this.#conflicts.get(k) !== v);
    for (const [ns, message] of conflicts) {
      if (this.#conflicts.get(ns) !== message) this.#o.log.warn({ code: CONTROLLER_ERRORS.caConfigMapConflict.code, namespace: ns, name: CA_CONFIGMAP }, message);
    }
    this.#conflicts = conflicts;
    if (changed) this.#o.onConflicts();
  }
}

function notOurs(namespace: string): string {
  const labels = Object.entries(CA_CONFIGMAP_LABELS).map(([k, v]) => `${k}=${v}`).join(' and ');
  return `ConfigMap ${namespace}/${CA_CONFIGMAP} exists and was not made by Tollgate (it lacks the labels ${labels}); the proxies read the snapshot stream's CA certificate from it, and Tollgate does not overwrite what it did not make: delete it (kubectl delete configmap ${CA_CONFIGMAP} -n ${namespace}) and Tollgate publishes the certificate there`;
}
