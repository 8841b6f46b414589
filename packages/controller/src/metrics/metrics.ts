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
  readonly cachedDataBytes = new Gauge({ name: 'tollgate_controller_cached_data_bytes', help: 'Bytes of Secret and ConfigMap data held in the watch caches, by kind', labelNames: ['kind'] as const, registers: [this.registry] });
  readonly reconciles = new Counter({
    name: 'tollgate_controller_reconciles_total',
    help: 'Reconciles (translations of the whole watched world), by result',
    labelNames: ['result'] as const,
    registers: [this.registry],
  });
  readonly reconcileDuration = new Histogram({
    name: 'tollgate_controller_reconcile_duration_seconds',
    help: 'Time to read the caches, translate and hand out snapshots and status',
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [this.registry],
  });
  readonly queueDepth = new Gauge({
    name: 'tollgate_controller_queue_depth',
    help: 'Watch events received and not yet reconciled',
    registers: [this.registry],
  });
  readonly statusWrites = new Counter({
    name: 'tollgate_controller_status_writes_total',
    help: 'Status subresource writes, by kind and result (written, conflict, not_found, error); unchanged statuses are not written',
    labelNames: ['kind', 'result'] as const,
    registers: [this.registry],
  });
  readonly watchRestarts = new Counter({
    name: 'tollgate_controller_watch_restarts_total',
    help: 'List+watch restarts after a failure (API server away, connection lost), by kind',
    labelNames: ['kind'] as const,
    registers: [this.registry],
  });
  readonly watchSynced = new Gauge({
    name: 'tollgate_controller_watch_synced',
    help: '1 once the first list of a kind completed',
    labelNames: ['kind'] as const,
    registers: [this.registry],
  });
  readonly snapshotVersion = new Gauge({
    name: 'tollgate_controller_snapshot_version_info',
    help: 'The current snapshot version of each Gateway (value 1)',
    labelNames: ['gateway', 'version'] as const,
    registers: [this.registry],
  });
  readonly snapshotUpdates = new Counter({
    name: 'tollgate_controller_snapshot_updates_total',
    help: 'New snapshot versions, by Gateway',
    labelNames: ['gateway'] as const,
    registers: [this.registry],
  });
  readonly snapshotsRefused = new Counter({
    name: 'tollgate_controller_snapshots_refused_total',
    help: 'Snapshots that failed validation; the Gateway keeps its last good snapshot',
    labelNames: ['gateway'] as const,
    registers: [this.registry],
  });
  readonly leader = new Gauge({
    name: 'tollgate_controller_leader',
    help: '1 while this replica holds the leader Lease (always 1 without --leader-elect)',
    registers: [this.registry],
  });

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
