// One reconcile: read every cache, translate, offer the snapshots to the store (which keeps
// the last good snapshot of a Gateway whose new one is refused) and hand the desired status
// on (to the status writer and the deploy stage). A proxy's NACK is not translation's
// business: it reaches the status through status/proxies.ts, without a reconcile.
//
// translate() is pure and synchronous; if it throws (a bug, or an object it cannot cope with),
// the previous snapshots and status stay as they are and the error is logged once per
// distinct message, so the controller keeps serving.
import type { Logger } from 'pino';
import type { EvaluationLimits } from '@tollgate/api';
import { CONTROLLER_ERRORS } from '../errors.js';
import type { ControllerMetrics } from '../metrics/metrics.js';
import type { SnapshotStore } from '../snapshots/store.js';
import type { Sink } from '../runtime/channels.js';
import type { Resources, StatusReport, Translate } from '../translate/types.js';

export interface ReconcileDeps {
  /** undefined: the caches are not ready for a translation yet (a referenced object is being read); the run is skipped, and the read's answer starts the next. */
  readonly resources: () => Resources | undefined;
  readonly translate: Translate;
  readonly controllerName: string;
  /** Bounds on expressions (the --regex-* and --cel-* flags). */
  readonly limits?: EvaluationLimits;
  /** The installed Gateway API bundle version, once known. */
  readonly gatewayApiVersion: () => string | undefined;
  /** --gateway-proxy-images (TranslateOptions). */
  readonly gatewayProxyImages?: readonly string[];
  /** --gateway-infrastructure-denied-domains (TranslateOptions). */
  readonly gatewayInfrastructureDeniedDomains?: readonly string[];
  readonly store: SnapshotStore;
  /** Where each reconcile's desired status goes (the status writer, the deploy stage). */
  readonly reports: Sink<StatusReport>;
  readonly metrics: ControllerMetrics;
  readonly log: Logger;
}

export class Reconciler {
  #lastError = '';
  /** Gateways with a refusal counted: their series goes once they are neither translated nor stored. */
  readonly #refused = new Set<string>();
  constructor(private readonly d: ReconcileDeps) {}

  run(): void {
    const { metrics, log } = this.d;
    const resources = this.d.resources();
    if (!resources) {
      log.debug('reconcile waits for referenced objects being read');
      return;
    }
    const end = metrics.reconcileDuration.startTimer();
    let result: ReturnType<Translate>;
    const started = performance.now();
    try {
      result = this.d.translate(resources, {
        controllerName: this.d.controllerName,
        gatewayApiVersion: this.d.gatewayApiVersion(),
        gatewayProxyImages: this.d.gatewayProxyImages ?? [],
        ...(this.d.gatewayInfrastructureDeniedDomains ? { gatewayInfrastructureDeniedDomains: this.d.gatewayInfrastructureDeniedDomains } : {}),
        limits: this.d.limits,
      });
    } catch (err) {
      end();
      metrics.reconciles.inc({ result: 'error' });
      const message = err instanceof Error ? `${err.message}\n${err.stack ?? ''}` : String(err);
      if (message !== this.#lastError) log.error({ code: CONTROLLER_ERRORS.translateFailed.code, err: message }, 'translation failed; the last good snapshots and status stay');
      this.#lastError = message;
      return;
    }
    this.#lastError = '';
    const offered = this.d.store.offer(result.snapshots);
    for (const { gateway, reason } of offered.refused) {
      metrics.snapshotsRefused.inc({ gateway });
      this.#refused.add(gateway);
      log.error({ code: CONTROLLER_ERRORS.snapshotRefused.code, gateway, reason }, 'snapshot refused; the Gateway keeps its last good snapshot');
    }
    for (const gateway of offered.changed) {
      const entry = this.d.store.get(gateway)!;
      metrics.snapshotUpdates.inc({ gateway });
      log.info({ gateway, version: entry.version }, 'new snapshot');
    }
    for (const gateway of offered.removed) {
      log.info({ gateway }, 'snapshot removed (Gateway no longer served)');
      // A deleted Gateway's counters go with it: kept, every Gateway ever served would stay in
      // each scrape.
      metrics.snapshotUpdates.remove({ gateway });
    }
    // A Gateway refused from its first snapshot on was never stored, so never "removed".
    for (const gateway of this.#refused) {
      if (result.snapshots.has(gateway) || this.d.store.get(gateway)) continue;
      metrics.snapshotsRefused.remove({ gateway });
      this.#refused.delete(gateway);
    }
    if (offered.changed.length || offered.removed.length) {
      metrics.snapshotVersion.reset();
      for (const e of this.d.store.entries()) metrics.snapshotVersion.set({ gateway: e.gateway, version: e.version }, 1);
    }
    this.d.reports.submit(result.status);
    end();
    metrics.reconciles.inc({ result: 'success' });
    if (log.isLevelEnabled('debug')) {
      const objects = Object.fromEntries(Object.entries(resources).map(([k, v]) => [k, (v as readonly unknown[]).length]));
      log.debug({ objects, gateways: result.snapshots.size, translateMs: Math.round((performance.now() - started) * 100) / 100 }, 'reconciled');
    }
  }
}
