// The objects the deployer owns (ServiceAccounts, Deployments, Services carrying its labels),
// watched so that one deleted or edited by hand is put back at once instead of at the next
// unrelated change. Only objects with the deployer's labels are listed and cached. Runs on
// the leader only, like the deployer it tells. A failed list or watch is retried with a
// doubling backoff, as for the other watches.
import { ListWatch, Watch, type KubeConfig, type KubernetesObject } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { CONTROLLER_ERRORS } from '../errors.js';
import { describeApiError } from '../kube/errors.js';
import type { Runnable } from '../runtime/runnable.js';
import { DEPLOYED_KINDS, KubeDeployerApi, type DeployedKind } from './api.js';
import { OWNED_SELECTOR } from './names.js';

export type OwnedEvent = 'add' | 'update' | 'delete';

const PATHS: Readonly<Record<DeployedKind, string>> = {
  ServiceAccount: '/api/v1/serviceaccounts',
  Deployment: '/apis/apps/v1/deployments',
  Service: '/api/v1/services',
};

class KindWatch {
  readonly #lw: ListWatch<KubernetesObject>;
  #stopped = true;
  #timer: NodeJS.Timeout | undefined;
  #backoffMs: number;
  #lastError = '';

  constructor(
    kc: KubeConfig,
    readonly kind: DeployedKind,
    observed: (kind: DeployedKind, event: OwnedEvent, obj: KubernetesObject) => void,
    private readonly log: Logger,
    private readonly backoff: { initialMs: number; maxMs: number },
  ) {
    this.#backoffMs = backoff.initialMs;
    const api = new KubeDeployerApi(kc);
    this.#lw = new ListWatch<KubernetesObject>(PATHS[kind], new Watch(kc), () => api.listOwnedObjects(kind), false, OWNED_SELECTOR);
    for (const event of ['add', 'update', 'delete'] as const) this.#lw.on(event, (o: KubernetesObject) => observed(kind, event, o));
    this.#lw.on('error', (err: unknown) => this.#failed(err));
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
    if (this.#lastError) this.log.info({ kind: this.kind }, 'watch of deployed objects re-established');
    this.#lastError = '';
    this.#backoffMs = this.backoff.initialMs;
  }

  #failed(err: unknown): void {
    if (this.#stopped || this.#timer !== undefined) return;
    const message = describeApiError(err, 300);
    if (message !== this.#lastError) this.log.warn({ code: CONTROLLER_ERRORS.watchFailed.code, kind: this.kind, err: message, retryInMs: this.#backoffMs }, 'watch of deployed objects failed; retrying');
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

export class OwnedObjects implements Runnable {
  readonly name = 'deployed-objects';
  readonly needsLeader = true;
  readonly #watches: KindWatch[];

  constructor(
    kc: KubeConfig,
    /** An owned object was added, changed or deleted (the deployer decides whether it was by hand). */
    observed: (kind: DeployedKind, event: OwnedEvent, obj: KubernetesObject) => void,
    log: Logger,
    backoff = { initialMs: 250, maxMs: 10_000 },
  ) {
    this.#watches = DEPLOYED_KINDS.map(({ kind }) => new KindWatch(kc, kind, observed, log, backoff));
  }

  async start(): Promise<void> {
    await Promise.all(this.#watches.map((w) => w.start()));
  }

  async stop(): Promise<void> {
    await Promise.all(this.#watches.map((w) => w.stop()));
  }
}
