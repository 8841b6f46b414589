// Translate: the work queue (leading-edge debounce, queue/debounced-queue.ts) and the
// reconcile it runs (reconcile/reconciler.ts). Input: the `changes` signal; output: the
// snapshots offered to the store and each reconcile's desired status on `reports`.
import type { Logger } from 'pino';
import type { EvaluationLimits } from '@tollgate/api';
import type { ControllerMetrics } from '../metrics/metrics.js';
import { DebouncedQueue, type DebounceOptions } from '../queue/debounced-queue.js';
import { Reconciler } from '../reconcile/reconciler.js';
import type { Signal, Sink } from '../runtime/channels.js';
import type { Runnable } from '../runtime/runnable.js';
import type { SnapshotStore } from '../snapshots/store.js';
import type { Resources, StatusReport, Translate } from '../translate/types.js';

export interface TranslateStageDeps {
  /** The caches (watch/world.ts). */
  readonly source: { readonly synced: boolean; resources(): Resources | undefined };
  readonly changes: Signal;
  readonly translate: Translate;
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
  }

  async start(): Promise<void> {}

  stop(): Promise<void> {
    return this.queue.stop();
  }
}
