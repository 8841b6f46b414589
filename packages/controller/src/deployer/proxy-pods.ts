// The proxy pods of every Gateway (by the deployer's labels), listed and watched: what
// Programmed is computed from. Only the pods the deployer's Deployments make are cached,
// never the cluster's other pods. A failed list or watch is retried with a doubling backoff,
// as for the other watches.
import { CoreV1Api, ListWatch, Watch, type KubeConfig, type V1Pod } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { CONTROLLER_ERRORS } from '../errors.js';
import { describeApiError } from '../kube/errors.js';
import type { Runnable } from '../runtime/runnable.js';
import { GATEWAY_NAME_LABEL, OWNED_SELECTOR } from './names.js';

export class ProxyPods implements Runnable {
  readonly name = 'proxy-pods';
  readonly needsLeader = false;
  readonly #lw: ListWatch<V1Pod>;
  #stopped = true;
  #timer: NodeJS.Timeout | undefined;
  #backoffMs: number;
  #lastError = '';

  constructor(
    kc: KubeConfig,
    /** A pod of a Gateway was added, changed or deleted. */
    private readonly changed: (namespace: string, gateway: string) => void,
    private readonly log: Logger,
    private readonly backoff = { initialMs: 250, maxMs: 10_000 },
  ) {
    this.#backoffMs = backoff.initialMs;
    const api = kc.makeApiClient(CoreV1Api);
    this.#lw = new ListWatch<V1Pod>('/api/v1/pods', new Watch(kc), () => api.listPodForAllNamespaces({ labelSelector: OWNED_SELECTOR }), false, OWNED_SELECTOR);
    const on = (p: V1Pod) => {
      const gw = p.metadata?.labels?.[GATEWAY_NAME_LABEL];
      if (gw && p.metadata?.namespace) this.changed(p.metadata.namespace, gw);
    };
    this.#lw.on('add', on);
    this.#lw.on('update', on);
    this.#lw.on('delete', on);
    this.#lw.on('error', (err: unknown) => this.#failed(err));
  }

  /** The pods of one Gateway. */
  of(namespace: string, gateway: string): V1Pod[] {
    return this.#lw.list(namespace).filter((p) => p.metadata?.labels?.[GATEWAY_NAME_LABEL] === gateway);
  }

  async start(): Promise<void> {
    this.#stopped = false;
    await this.#run();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    await this.#lw.stop();
  }

  async #run(): Promise<void> {
    if (this.#stopped) return;
    await this.#lw.start();
    if (this.#stopped || this.#timer !== undefined || this.#lw.latestResourceVersion() === '') return;
    if (this.#lastError) this.log.info('proxy pod watch re-established');
    this.#lastError = '';
    this.#backoffMs = this.backoff.initialMs;
  }

  #failed(err: unknown): void {
    if (this.#stopped || this.#timer !== undefined) return;
    const message = describeApiError(err, 300);
    if (message !== this.#lastError) this.log.warn({ code: CONTROLLER_ERRORS.watchFailed.code, kind: 'Pod', err: message, retryInMs: this.#backoffMs }, 'proxy pod watch failed; retrying');
    this.#lastError = message;
    const delay = this.#backoffMs * (0.8 + Math.random() * 0.4);
    this.#backoffMs = Math.min(this.#backoffMs * 2, this.backoff.maxMs);
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      void this.#run();
    }, delay);
    this.#timer.unref();
  }
}
