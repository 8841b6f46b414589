// The objects the deployer owns (ServiceAccounts, Deployments, Services carrying its labels),
// watched so that one deleted or edited by hand is put back at once instead of at the next
// unrelated change. Only objects with the deployer's labels are listed and cached. Runs on
// the leader only, like the deployer it tells. A failed list or watch is retried with a
// doubling backoff, as for the other watches.
import { ListWatch, Watch, type KubeConfig, type KubernetesObject } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { Runnable } from '../runtime/runnable.js';
import { DEPLOYED_KINDS, KubeDeployerApi, type DeployedKind } from './api.js';
import { OWNED_SELECTOR } from './names.js';
import { DEFAULT_WATCH_BACKOFF, RetryingListWatch } from '../kube/retrying-list-watch.js';
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
): RetryingListWatch<KubernetesObject> {
  const api = new KubeDeployerApi(kc);
  const lw = new ListWatch<KubernetesObject>(PATHS[kind], new Watch(kc), () => api.listOwnedObjects(kind), false, OWNED_SELECTOR);
  for (const event of ['add', 'update', 'delete'] as const) lw.on(event, (o: KubernetesObject) => observed(kind, event, o));
  return new RetryingListWatch(lw, { kind, name: 'watch of deployed objects' }, log, backoff);
}

export class OwnedObjects implements Runnable {
  readonly name = 'deployed-objects';
  readonly needsLeader = true;
  readonly #watches: RetryingListWatch<KubernetesObject>[];

  constructor(
    kc: KubeConfig,
    /** An owned object was added, changed or deleted (the deployer decides whether it was by hand). */
    observed: (kind: DeployedKind, event: OwnedEvent, obj: KubernetesObject) => void,
    log: Logger,
    backoff: RetryOptions = DEFAULT_WATCH_BACKOFF,
  ) {
    this.#watches = DEPLOYED_KINDS.map(({ kind }) => kindWatch(kc, kind, observed, log, backoff));
  }

  async start(): Promise<void> {
    await Promise.all(this.#watches.map((w) => w.start()));
  }

  async stop(): Promise<void> {
    await Promise.all(this.#watches.map((w) => w.stop()));
  }
}
