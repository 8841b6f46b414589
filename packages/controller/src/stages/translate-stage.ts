// Translate: the work queue (leading-edge debounce, queue/debounced-queue.ts) and the
// reconcile it runs (reconcile/reconciler.ts). Input: the `changes` signal; output: the
// snapshots offered to the store and each reconcile's desired status on `reports`.
//
// Between reconciles, the echoes of the controller's own status writes (`statusChanges`) are
// taken in while nothing waits for them (translate/status-echoes.ts, a pass at most every
// SETTLE_DELAY_MS): a status write changes no translation, so it starts no reconcile, and
// without this pass the next change (one route added after thousands were applied and their
// status written) would find every echo at once and pay for comparing them all before its
// snapshot is sent (40 ms at 3,000 routes).
import type { Logger } from 'pino';
import type { EvaluationLimits } from '@tollgate/api';
import type { ControllerMetrics } from '../metrics/metrics.js';
import { DebouncedQueue, type DebounceOptions } from '../queue/debounced-queue.js';
import { Reconciler } from '../reconcile/reconciler.js';
import type { Signal, Sink } from '../runtime/channels.js';
import type { Runnable } from '../runtime/runnable.js';
import type { SnapshotStore } from '../snapshots/store.js';
import { settled } from '../translate/status-echoes.js';
import type { Resources, StatusReport, Translate } from '../translate/types.js';

/** How long after the first status echo of a quiet spell its pass runs (the echoes of a bulk status write come over tens of seconds: one pass for each such stretch). */
export const SETTLE_DELAY_MS = 200;

export interface TranslateStageDeps {
  /** The caches (watch/world.ts). */
  readonly source: { readonly synced: boolean; resources(): Resources | undefined };
  readonly changes: Signal;
  /** An object's status alone changed in a cache (an echo of a status write): taken in between reconciles. */
  readonly statusChanges?: Signal;
  readonly translate: Translate;
  /** What takes the status echoes in (default: the translator's own, translate/status-echoes.ts). */
  readonly settle?: (resources: Resources) => unknown;
  readonly controllerName: string;
  readonly limits?: EvaluationLimits;
  readonly gatewayProxyImages?: readonly string[];
  readonly gatewayInfrastructureDeniedDomains?: readonly string[];
  readonly gatewayApiVersion: () => string | undefined;
  readonly store: SnapshotStore;
  readonly reports: Sink<StatusReport>;
  readonly metrics: ControllerMetrics;
  readonly log: Logger;
  readonly queue?: DebounceOptions;
}

export class TranslateStage implements Runnable {
  readonly name = 'translate';
  readonly needsLeader = false;
  readonly queue: DebouncedQueue;
  #settleTimer: NodeJS.Timeout | undefined;
  #stopped = false;
  #settlePasses = 0;

  constructor(d: TranslateStageDeps) {
    const { source, metrics, log } = d;
    const reconciler = new Reconciler({
      resources: () => source.resources(),
      translate: d.translate,
      controllerName: d.controllerName,
      limits: d.limits,
      gatewayProxyImages: d.gatewayProxyImages,
      gatewayInfrastructureDeniedDomains: d.gatewayInfrastructureDeniedDomains,
      gatewayApiVersion: d.gatewayApiVersion,
      store: d.store,
      reports: d.reports,
      metrics,
      log,
    });
    this.queue = new DebouncedQueue(
      () => {
        // Until every cache has synced, a translation would see a partial world and report
        // objects as missing; the first run happens once the last kind has synced.
        if (!source.synced) return;
        reconciler.run();
        metrics.queueDepth.set(this.queue.depth);
      },
      (err) => log.error({ err: String(err) }, 'reconcile failed'),
      d.queue,
    );
    d.changes.listen(() => {
      this.queue.add();
      metrics.queueDepth.set(this.queue.depth);
    });
    const settle = d.settle ?? settled;
    d.statusChanges?.listen(() => {
      if (this.#settleTimer || this.#stopped) return;
      this.#settleTimer = setTimeout(() => {
        this.#settleTimer = undefined;
        // A reconcile running or due takes the echoes in itself.
        if (this.#stopped || !source.synced || this.queue.depth > 0 || this.queue.state === 'running') return;
        try {
          const resources = source.resources();
          if (!resources) return;
          settle(resources);
          this.#settlePasses++;
        } catch (err) {
          log.error({ err: String(err) }, 'taking in status echoes failed; the next reconcile does it');
        }
      }, SETTLE_DELAY_MS);
      this.#settleTimer.unref();
    });
  }

  /** Passes that took echoes in (tests). */
  get settlePasses(): number {
    return this.#settlePasses;
  }

  async start(): Promise<void> {}

  stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#settleTimer);
    this.#settleTimer = undefined;
    return this.queue.stop();
  }
}
