// A ListWatch of the deployer's own objects that comes back by itself: a failed list or watch
// is retried with a doubling, jittered backoff, and logged once per distinct failure (down,
// back), as the controller's other watches are.
import type { KubernetesObject, ListWatch } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { CONTROLLER_ERRORS } from '../errors.js';
import { describeApiError } from '../kube/errors.js';

export interface Backoff {
  readonly initialMs: number;
  readonly maxMs: number;
}

export class RetryingListWatch<T extends KubernetesObject> {
  #stopped = true;
  #timer: NodeJS.Timeout | undefined;
  #backoffMs: number;
  #lastError = '';

  constructor(
    readonly lw: ListWatch<T>,
    /** What the log lines name: the kind, and the watch in words ("proxy pod watch"). */
    private readonly what: { readonly kind: string; readonly name: string },
    private readonly log: Logger,
    private readonly backoff: Backoff,
  ) {
    this.#backoffMs = backoff.initialMs;
    lw.on('error', (err: unknown) => this.#failed(err));
  }

  async start(): Promise<void> {
    this.#stopped = false;
    await this.#run();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    await this.lw.stop();
  }

  async #run(): Promise<void> {
    if (this.#stopped) return;
    await this.lw.start();
    if (this.#stopped || this.#timer !== undefined || this.lw.latestResourceVersion() === '') return;
    if (this.#lastError) this.log.info({ kind: this.what.kind }, `${this.what.name} re-established`);
    this.#lastError = '';
    this.#backoffMs = this.backoff.initialMs;
  }

  #failed(err: unknown): void {
    if (this.#stopped || this.#timer !== undefined) return;
    const message = describeApiError(err, 300);
    if (message !== this.#lastError) this.log.warn({ code: CONTROLLER_ERRORS.watchFailed.code, kind: this.what.kind, err: message, retryInMs: this.#backoffMs }, `${this.what.name} failed; retrying`);
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
