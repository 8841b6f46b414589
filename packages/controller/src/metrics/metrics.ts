// The controller's Prometheus metrics, one registry per process (tests may make several).
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** What one watched kind's cache holds (World.cacheStats). */
export interface CacheStat {
  readonly kind: string;
  /** `full`: whole objects; `metadata`: names and versions only. */
  readonly form: 'full' | 'metadata';
  readonly objects: number;
  /** Bytes of `data` and `binaryData` values held (Secrets, ConfigMaps): the part of an object that can reach 1 MiB. */
  readonly dataBytes: number;
}

function counter<L extends string>(registry: Registry, name: string, help: string, labelNames: readonly L[] = []): Counter<L> {
  return new Counter({ name, help, labelNames, registers: [registry] });
}

function gauge<L extends string>(registry: Registry, name: string, help: string, labelNames: readonly L[] = []): Gauge<L> {
  return new Gauge({ name, help, labelNames, registers: [registry] });
}

export class ControllerMetrics {
  readonly registry = new Registry();
  /** Read at each scrape; the controller sets it once its caches exist. */
  cacheStats: () => readonly CacheStat[] = () => [];
  readonly cachedObjects = new Gauge({
    name: 'tollgate_controller_cached_objects',
    help: 'Objects held in the watch caches, by kind and form (full objects, or metadata only)',
    labelNames: ['kind', 'form'] as const,
    registers: [this.registry],
    collect: () => this.#collectCache(),
  });
  /** Set with cachedObjects, whose collect runs first at each scrape (a registry reads its metrics in the order they were registered). */
  readonly cachedDataBytes = gauge(this.registry, 'tollgate_controller_cached_data_bytes', 'Bytes of Secret and ConfigMap data held in the watch caches, by kind', ['kind']);
  readonly reconciles = counter(this.registry, 'tollgate_controller_reconciles_total', 'Reconciles (translations of the whole watched world), by result', ['result']);
  readonly reconcileDuration = new Histogram({
    name: 'tollgate_controller_reconcile_duration_seconds',
    help: 'Time to read the caches, translate and hand out snapshots and status',
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [this.registry],
  });
  readonly queueDepth = gauge(this.registry, 'tollgate_controller_queue_depth', 'Watch events received and not yet reconciled');
  readonly statusWrites = counter(this.registry, 'tollgate_controller_status_writes_total', 'Status subresource writes, by kind and result (written, conflict, not_found, error); unchanged statuses are not written', ['kind', 'result']);
  readonly watchRestarts = counter(this.registry, 'tollgate_controller_watch_restarts_total', 'List+watch restarts after a failure (API server away, connection lost), by kind', ['kind']);
  readonly watchSynced = gauge(this.registry, 'tollgate_controller_watch_synced', '1 once the first list of a kind completed', ['kind']);
  readonly snapshotVersion = gauge(this.registry, 'tollgate_controller_snapshot_version_info', 'The current snapshot version of each Gateway (value 1)', ['gateway', 'version']);
  readonly snapshotUpdates = counter(this.registry, 'tollgate_controller_snapshot_updates_total', 'New snapshot versions, by Gateway', ['gateway']);
  readonly snapshotsRefused = counter(this.registry, 'tollgate_controller_snapshots_refused_total', 'Snapshots that failed validation; the Gateway keeps its last good snapshot', ['gateway']);
  readonly leader = gauge(this.registry, 'tollgate_controller_leader', '1 while this replica holds the leader Lease (always 1 without --leader-elect)');

  constructor() {
    collectDefaultMetrics({ register: this.registry });
  }

  #collectCache(): void {
    this.cachedObjects.reset();
    this.cachedDataBytes.reset();
    const bytes = new Map<string, number>();
    for (const s of this.cacheStats()) {
      this.cachedObjects.inc({ kind: s.kind, form: s.form }, s.objects);
      bytes.set(s.kind, (bytes.get(s.kind) ?? 0) + s.dataBytes);
    }
    for (const [kind, b] of bytes) this.cachedDataBytes.set({ kind }, b);
  }
}
