// The proxy pods of every Gateway (by the deployer's labels), listed and watched: what
// Programmed is computed from. Only the pods the deployer's Deployments make are cached,
// never the cluster's other pods. A failed list or watch is retried with a doubling backoff,
// as for the other watches.
import { CoreV1Api, ListWatch, Watch, type KubeConfig, type V1Pod } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { Runnable } from '../runtime/runnable.js';
import { GATEWAY_NAME_LABEL, OWNED_SELECTOR } from './names.js';
import { DEFAULT_WATCH_BACKOFF, RetryingListWatch } from '../kube/retrying-list-watch.js';
import type { RetryOptions } from '../runtime/retry-backoff.js';

export class ProxyPods implements Runnable {
  readonly name = 'proxy-pods';
  readonly needsLeader = false;
  readonly #watch: RetryingListWatch<V1Pod>;

  constructor(
    kc: KubeConfig,
    /** A pod of a Gateway was added, changed or deleted. */
    private readonly changed: (namespace: string, gateway: string) => void,
    log: Logger,
    backoff: RetryOptions = DEFAULT_WATCH_BACKOFF,
  ) {
    const api = kc.makeApiClient(CoreV1Api);
    const lw = new ListWatch<V1Pod>('/api/v1/pods', new Watch(kc), () => api.listPodForAllNamespaces({ labelSelector: OWNED_SELECTOR }), false, OWNED_SELECTOR);
    const on = (p: V1Pod) => {
      const gw = p.metadata?.labels?.[GATEWAY_NAME_LABEL];
      if (gw && p.metadata?.namespace) this.changed(p.metadata.namespace, gw);
    };
    lw.on('add', on);
    lw.on('update', on);
    lw.on('delete', on);
    this.#watch = new RetryingListWatch(lw, { kind: 'Pod', name: 'proxy pod watch' }, log, backoff);
  }

  /** The pods of one Gateway. */
  of(namespace: string, gateway: string): V1Pod[] {
    return this.#watch.lw.list(namespace).filter((p) => p.metadata?.labels?.[GATEWAY_NAME_LABEL] === gateway);
  }

  start(): Promise<void> {
    return this.#watch.start();
  }

  stop(): Promise<void> {
    return this.#watch.stop();
  }
}
