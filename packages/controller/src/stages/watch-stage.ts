// Watch: the informers of every watched kind (watch/world.ts) and the installed Gateway API
// version. Its output is the `changes` signal (translation runs again) and the caches, read
// through `cache`; on the way it keeps the watch metrics and records a Warning Event on each
// object it skips as unreadable.
import type { RetryOptions } from '../runtime/retry-backoff.js';
import type { KubeConfig, KubernetesObject } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { GatewayApiVersion } from '../kube/gateway-api-version.js';
import type { ControllerMetrics } from '../metrics/metrics.js';
import type { Signal } from '../runtime/channels.js';
import type { Runnable } from '../runtime/runnable.js';
import { referencedObjects } from '../translate/references.js';
import type { InformerEvents } from '../watch/informer.js';
import type { WatchedKind } from '../watch/kinds.js';
import { World } from '../watch/world.js';
import type { EventSink } from '../events/recorder.js';
import { CacheLookup } from '../watch/lookup.js';

export interface WatchStageDeps {
  readonly kc: KubeConfig;
  readonly controllerName: string;
  readonly metrics: ControllerMetrics;
  readonly log: Logger;
  /** Records a Warning on each object skipped as unreadable. */
  readonly events: EventSink;
  /** Raised on every change translation may read. */
  readonly changes: Signal;
  /** Raised when an object's status alone changed (the status writer reads it again). */
  readonly statusChanges?: Signal;
  readonly backoff?: RetryOptions;
}

export class WatchStage implements Runnable, InformerEvents {
  readonly name = 'watch';
  readonly needsLeader = false;
  readonly world: World;
  readonly gatewayApiVersion: GatewayApiVersion;
  /** Typed reads of the caches, for the stages after translation. */
  readonly cache: CacheLookup;

  constructor(private readonly d: WatchStageDeps) {
    this.gatewayApiVersion = new GatewayApiVersion(d.kc, d.log, d.changes.raise);
    this.world = new World(d.kc, this, d.log, (r) => referencedObjects(r, d.controllerName), d.backoff, this.#unreadable);
    this.cache = new CacheLookup(this.world);
    d.metrics.cacheStats = () => this.world.cacheStats();
  }

  readonly #unreadable = (kind: WatchedKind, obj: KubernetesObject, why: string): void => {
    this.d.events.record({ ...obj, apiVersion: kind.group ? `${kind.group}/${kind.version}` : kind.version, kind: kind.kind }, 'Warning', 'Unreadable', 'Skip', `skipped by ${this.d.controllerName}: ${why}`);
  };

  changed(): void {
    this.d.changes.raise();
  }

  statusChanged(): void {
    this.d.statusChanges?.raise();
  }

  restarted(kind: WatchedKind): void {
    this.d.metrics.watchRestarts.inc({ kind: kind.kind });
  }

  synced(kind: WatchedKind): void {
    this.d.metrics.watchSynced.set({ kind: kind.kind }, 1);
    this.d.log.info({ kind: kind.kind, objects: this.world.informer(kind.kind).list().length }, 'cache synced');
  }

  async start(): Promise<void> {
    // Each resolves once it has made its first attempt; failures retry in the background.
    await this.gatewayApiVersion.start();
    await this.world.start();
  }

  async stop(): Promise<void> {
    await this.gatewayApiVersion.stop();
    await this.world.stop();
  }
}
