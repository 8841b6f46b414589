// One kind's list+watch, kept alive by kube/retrying-list-watch.ts (restarts with backoff, a
// log line per distinct failure), with the cache translation reads. `synced` turns true after
// the first complete list and stays true: the cache is then a possibly stale but consistent
// view, which is what readiness promises.
import { ListWatch, Watch, type KubeConfig, type KubernetesObject } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { DEFAULT_WATCH_BACKOFF, RetryingListWatch } from '../kube/retrying-list-watch.js';
import type { RetryOptions } from '../runtime/retry-backoff.js';
import type { WatchedKind } from './kinds.js';
import { keyOf } from '../translate/keys.js';
import { ChangeLog } from './change-log.js';
import { MetadataWatch, metadataList } from './metadata-watch.js';

export interface InformerEvents {
  /** An object was added, changed or deleted (also for each object of a re-list). */
  changed(kind: WatchedKind): void;
  /** An object's status alone changed (a status write, ours or another writer's): nothing translation reads. */
  statusChanged?(kind: WatchedKind): void;
  /** The list+watch failed and will be restarted. */
  restarted(kind: WatchedKind, err: unknown): void;
  synced(kind: WatchedKind): void;
}

/** The key an object has in the status report (keyOf, as translation makes it): `namespace/name`, or `name` when cluster-scoped. */
function objectKey(o: KubernetesObject): string {
  return keyOf({ namespace: o.metadata?.namespace, name: o.metadata?.name ?? '' });
}

export class Informer {
  readonly #lw: ListWatch<KubernetesObject>;
  readonly #watch: RetryingListWatch<KubernetesObject>;
  #synced = false;
  /** uid -> what translation reads besides spec, for kinds whose spec bumps generation. */
  readonly #fingerprints = new Map<string, string>();
  /** Every change of a cached object, its own status writes included: what the status writer reads. */
  readonly changes = new ChangeLog();

  constructor(
    readonly kind: WatchedKind,
    kc: KubeConfig,
    private readonly events: InformerEvents,
    log: Logger,
    backoff: RetryOptions = DEFAULT_WATCH_BACKOFF,
    /** Whether a change of this object can change a translation (default: every object's can). */
    relevant: (o: KubernetesObject) => boolean = () => true,
  ) {
    const full = kind.cache.form === 'full';
    const list = full ? kind.cache.list(kc) : metadataList(kc, kind);
    // autoStart false: start() below owns the first list.
    this.#lw = new ListWatch(kind.path, full ? new Watch(kc) : new MetadataWatch(kc, kind), list, false, kind.labelSelector, kind.fieldSelector);
    const changed = (o: KubernetesObject) => {
      if (relevant(o)) this.events.changed(kind);
    };
    this.#lw.on('add', (o) => {
      this.changes.changed(objectKey(o));
      this.#remember(o);
      changed(o);
    });
    // Our own status writes come back as updates; translation never reads status, so an
    // update that changed nothing else (same generation, labels) is not a change.
    this.#lw.on('update', (o) => {
      this.changes.changed(objectKey(o));
      if (this.#remember(o)) changed(o);
      else this.events.statusChanged?.(kind);
    });
    this.#lw.on('delete', (o) => {
      this.changes.changed(objectKey(o));
      if (o.metadata?.uid) this.#fingerprints.delete(o.metadata.uid);
      changed(o);
    });
    this.#lw.on('connect', () => log.debug({ kind: kind.kind }, 'watch connecting'));
    this.#watch = new RetryingListWatch(this.#lw, { kind: kind.kind, name: 'watch' }, log, backoff, {
      listed: () => this.#listed(),
      failed: (err) => this.events.restarted(kind, err),
    });
  }

  /** Records the object; false when nothing translation reads has changed. */
  #remember(o: KubernetesObject): boolean {
    const m = o.metadata;
    if (!this.kind.hasStatus || !m?.uid || m.generation === undefined) return true;
    const fp = JSON.stringify([m.generation, m.labels ?? {}, m.deletionTimestamp ?? null]);
    if (this.#fingerprints.get(m.uid) === fp) return false;
    this.#fingerprints.set(m.uid, fp);
    return true;
  }

  get synced(): boolean {
    return this.#synced;
  }

  /** The cached objects, as the API server sent them (for a metadata-only kind: their metadata). */
  list(): readonly KubernetesObject[] {
    return this.#lw.list();
  }

  get(name: string, namespace?: string): KubernetesObject | undefined {
    return this.#lw.get(name, namespace);
  }

  start(): Promise<void> {
    return this.#watch.start();
  }

  stop(): Promise<void> {
    return this.#watch.stop();
  }

  #listed(): void {
    // A list may have changed anything: what changed before it is not told.
    this.changes.reset();
    if (!this.#synced) {
      this.#synced = true;
      this.events.synced(this.kind);
    }
    // A re-list may have changed nothing visible to the add/update/delete handlers but the
    // caches of the other kinds may have moved meanwhile: one reconcile is cheap.
    this.events.changed(this.kind);
  }
}
