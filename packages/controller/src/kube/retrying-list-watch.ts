// A client-node ListWatch kept alive; every watch of the controller (the informers of watch/,
// the deployer's watches of its pods and objects) is one. A 410 Gone re-lists (inside
// ListWatch); any other failure (API server gone, connection reset, 5xx) restarts the list and
// watch after a jittered backoff, doubling up to a cap and reset by a successful list. One log
// line per distinct failure, not one per retry: an API server that is away for a minute gives
// two lines (down, back), not a hundred.
import type { KubernetesObject, ListWatch } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { CONTROLLER_ERRORS } from '../errors.js';
import { RetryBackoff, type RetryOptions } from '../runtime/retry-backoff.js';
import { describeApiError } from './errors.js';

/** The backoff of a watch unless its owner sets another (the controller's watchBackoff). */
export const DEFAULT_WATCH_BACKOFF: RetryOptions = { initialMs: 250, maxMs: 10_000 };

/** How far each restart's wait strays from its delay. */
const WATCH_JITTER = 0.2;

export interface ListWatchHooks {
  /** A list completed and its watch started: the first time, and after every restart. */
  listed?(): void;
  /** The list or the watch failed; a restart is scheduled. */
  failed?(err: unknown): void;
}

export class RetryingListWatch<T extends KubernetesObject> {
  #stopped = true;
  readonly #retry: RetryBackoff;
  #lastError = '';

  constructor(
    /** Created with autoStart false: start() owns the first list. */
    readonly lw: ListWatch<T>,
    /** What the log lines name: the kind, and the watch in words ("watch", "proxy pod watch"). */
    private readonly what: { readonly kind: string; readonly name: string },
    private readonly log: Logger,
    backoff: RetryOptions = DEFAULT_WATCH_BACKOFF,
    private readonly hooks: ListWatchHooks = {},
  ) {
    this.#retry = new RetryBackoff({ jitter: WATCH_JITTER, ...backoff });
    lw.on('error', (err: unknown) => this.#failed(err));
  }

  async start(): Promise<void> {
    this.#stopped = false;
    await this.#run();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#retry.cancel();
    await this.lw.stop();
  }

  async #run(): Promise<void> {
    if (this.#stopped) return;
    // ListWatch.start() resolves after its list and the start of its watch; a failed list
    // resolves too, after calling the error handler (which schedules the retry).
    await this.lw.start();
    if (this.#stopped || this.#retry.pending || this.lw.latestResourceVersion() === '') return;
    if (this.#lastError) this.log.info({ kind: this.what.kind }, `${this.what.name} re-established`);
    this.#lastError = '';
    this.#retry.succeeded();
    this.hooks.listed?.();
  }

  #failed(err: unknown): void {
    if (this.#stopped || this.#retry.pending) return;
    const message = describeApiError(err, 300);
    const retryInMs = this.#retry.failed(() => void this.#run());
    if (message !== this.#lastError) this.log.warn({ code: CONTROLLER_ERRORS.watchFailed.code, kind: this.what.kind, err: message, retryInMs }, `${this.what.name} failed; retrying`);
    this.#lastError = message;
    this.hooks.failed?.(err);
  }
}
