// One kind's list+watch (client-node's ListWatch) kept alive: a 410 Gone re-lists (inside
// ListWatch), any other failure (API server gone, connection reset, 5xx) restarts the list
// and watch after a backoff with jitter, doubling up to a cap and reset by a successful list.
// `synced` turns true after the first complete list and stays true: the cache is then a
// possibly stale but consistent view, which is what readiness promises.
import { ListWatch, Watch, type KubeConfig, type KubernetesObject } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { CONTROLLER_ERRORS } from '../errors.js';
import { describeApiError } from '../kube/errors.js';
import type { WatchedKind } from './kinds.js';
import { MetadataWatch, metadataList } from './metadata-watch.js';

export interface InformerEvents {
  /** An object was added, changed or deleted (also for each object of a re-list). */
  changed(kind: WatchedKind): void;
  /** The list+watch failed and will be restarted. */
  restarted(kind: WatchedKind, err: unknown): void;
  synced(kind: WatchedKind): void;
}

export interface BackoffOptions {
  readonly initialMs: number;
  readonly maxMs: number;
}

export class Informer {
  readonly #lw: ListWatch<KubernetesObject>;
  #synced = false;
  #stopped = true;
  #backoff: number;
  #timer: NodeJS.Timeout | undefined;
  #lastError = '';
  /** uid -> what translation reads besides spec, for kinds whose spec bumps generation. */
  readonly #fingerprints = new Map<string, string>();

  constructor(
    readonly kind: WatchedKind,
    kc: KubeConfig,
    private readonly events: InformerEvents,
    private readonly log: Logger,
    private readonly backoff: BackoffOptions = { initialMs: 250, maxMs: 10_000 },
    /** Whether a change of this object can change a translation (default: every object's can). */
    relevant: (o: KubernetesObject) => boolean = () => true,
  ) {
    this.#backoff = backoff.initialMs;
    const full = kind.cache.form === 'full';
    const list = full ? kind.cache.list(kc) : metadataList(kc, kind);
    // autoStart false: start() below owns the first list.
    this.#lw = new ListWatch(kind.path, full ? new Watch(kc) : new MetadataWatch(kc, kind), list, false, kind.labelSelector, kind.fieldSelector);
    const changed = (o: KubernetesObject) => {
      if (relevant(o)) this.events.changed(kind);
    };
    this.#lw.on('add', (o) => {
      this.#remember(o);
      changed(o);
    });
    // Our own status writes come back as updates; translation never reads status, so an
    // update that changed nothing else (same generation, labels) is not a change.
    this.#lw.on('update', (o) => {
      if (this.#remember(o)) changed(o);
    });
    this.#lw.on('delete', (o) => {
      if (o.metadata?.uid) this.#fingerprints.delete(o.metadata.uid);
      changed(o);
    });
    this.#lw.on('connect', () => this.log.debug({ kind: kind.kind }, 'watch connecting'));
    this.#lw.on('error', (err: unknown) => this.#failed(err));
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

  async start(): Promise<void> {
    this.#stopped = false;
    await this.#run();
  }

  async #run(): Promise<void> {
    if (this.#stopped) return;
    // ListWatch.start() resolves after its list and the start of its watch; a failed list
    // resolves too, after calling the error handler (which schedules the retry).
    await this.#lw.start();
    if (this.#stopped) return;
    if (this.#lw.latestResourceVersion() !== '' && this.#timer === undefined) {
      if (this.#lastError) this.log.info({ kind: this.kind.kind }, 'watch re-established');
      this.#lastError = '';
      this.#backoff = this.backoff.initialMs;
      if (!this.#synced) {
        this.#synced = true;
        this.events.synced(this.kind);
      }
      // A re-list may have changed nothing visible to the add/update/delete handlers but the
      // caches of the other kinds may have moved meanwhile: one reconcile is cheap.
      this.events.changed(this.kind);
    }
  }

  #failed(err: unknown): void {
    if (this.#stopped || this.#timer !== undefined) return;
    const message = describeApiError(err, 300);
    // One line per distinct failure, not one per retry: an API server that is away for a
    // minute gives two lines (down, back), not a hundred.
    if (message !== this.#lastError) this.log.warn({ code: CONTROLLER_ERRORS.watchFailed.code, kind: this.kind.kind, err: message, retryInMs: this.#backoff }, 'watch failed; retrying');
    this.#lastError = message;
    this.events.restarted(this.kind, err);
    const delay = this.#backoff * (0.8 + Math.random() * 0.4);
    this.#backoff = Math.min(this.#backoff * 2, this.backoff.maxMs);
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      void this.#run();
    }, delay);
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = undefined;
    await this.#lw.stop();
  }
}
