// The objects the deployer owns (ServiceAccounts, Deployments, Services carrying its labels),
// watched so that one deleted or edited by hand is put back at once instead of at the next
// unrelated change. Only objects with the deployer's labels are listed and cached. Runs on
// the leader only, like the deployer it tells. A failed list or watch is retried with a
// doubling backoff, as for the other watches. While every kind's watch holds (epoch), the
// deployer takes what it last saw as what exists, and lists only when that may have changed.
import { ListWatch, Watch, type KubeConfig, type KubernetesObject } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { Runnable } from '../runtime/runnable.js';
import { DEPLOYED_KINDS, KubeDeployerApi, type DeployedKind } from './api.js';
import { OWNED_SELECTOR } from './names.js';
import { DEFAULT_WATCH_BACKOFF, RetryingListWatch, type ListWatchHooks } from '../kube/retrying-list-watch.js';
import type { RetryOptions } from '../runtime/retry-backoff.js';

export type OwnedEvent = 'add' | 'update' | 'delete';

const PATHS: Readonly<Record<DeployedKind, string>> = {
  ServiceAccount: '/api/v1/serviceaccounts',
  Deployment: '/apis/apps/v1/deployments',
  Service: '/api/v1/services',
};

function kindWatch(
  kc: KubeConfig,
  kind: DeployedKind,
  observed: (kind: DeployedKind, event: OwnedEvent, obj: KubernetesObject) => void,
  log: Logger,
  backoff: RetryOptions,
  hooks: ListWatchHooks,
): RetryingListWatch<KubernetesObject> {
  const api = new KubeDeployerApi(kc);
  const lw = new ListWatch<KubernetesObject>(PATHS[kind], new Watch(kc), () => api.listOwnedObjects(kind), false, OWNED_SELECTOR);
  for (const event of ['add', 'update', 'delete'] as const) lw.on(event, (o: KubernetesObject) => observed(kind, event, o));
  return new RetryingListWatch(lw, { kind, name: 'watch of deployed objects' }, log, backoff, hooks);
}

export class OwnedObjects implements Runnable {
  readonly name = 'deployed-objects';
  readonly needsLeader = true;
  readonly #watches: RetryingListWatch<KubernetesObject>[];
  /** Kinds whose watch is not established now (not started, failed and not yet listed again). */
  readonly #down = new Set<DeployedKind>(DEPLOYED_KINDS.map(({ kind }) => kind));
  #epoch = 0;

  constructor(
    kc: KubeConfig,
    /** An owned object was added, changed or deleted (the deployer decides whether it was by hand). */
    observed: (kind: DeployedKind, event: OwnedEvent, obj: KubernetesObject) => void,
    log: Logger,
    backoff: RetryOptions = DEFAULT_WATCH_BACKOFF,
  ) {
    this.#watches = DEPLOYED_KINDS.map(({ kind }) =>
      kindWatch(kc, kind, observed, log, backoff, {
        listed: () => this.#moved(kind, false),
        failed: () => this.#moved(kind, true),
      }),
    );
  }

  /**
   * A number that moves whenever a watch of the owned kinds lists again or fails; null while one
   * of them is not established. While it stays the same, every change to an owned object since
   * was told to observed(): the deployer may trust what it saw instead of listing again.
   */
  get epoch(): number | null {
    return this.#down.size ? null : this.#epoch;
  }

  #moved(kind: DeployedKind, down: boolean): void {
    if (down) this.#down.add(kind);
    else this.#down.delete(kind);
    this.#epoch++;
  }

  async start(): Promise<void> {
    await Promise.all(this.#watches.map((w) => w.start()));
  }

  async stop(): Promise<void> {
    for (const { kind } of DEPLOYED_KINDS) this.#moved(kind, true);
    await Promise.all(this.#watches.map((w) => w.stop()));
  }
}
