// The config file as a snapshot source: the file read at start-up is applied first, then
// every edit (seen by the directory watcher) and every explicit reload (SIGHUP) is read,
// validated and applied. A file that does not validate, or a snapshot the runtime refuses, is
// logged with the reason and the last good config keeps serving. The certificate and key
// files the serving config names are watched too: a renewal (files replaced, as certbot or
// cert-manager do) goes through the same read, validate and apply as an edit of the config.
import { EventEmitter } from 'node:events';
import type { Logger } from 'pino';
import { parseConfig, readConfigText, type LoadedConfig } from '../config/load-file.js';
import { watchFile, type FileWatch } from '../config/watch.js';
import type { SnapshotSink, SnapshotSource, SnapshotSourceState } from './snapshot-source.js';

export interface FileSourceOptions {
  /** The file as read at start-up (its `config.*` settings are the process's). */
  readonly initial: LoadedConfig;
  readonly log: Logger;
  /** Pick up edits as they happen (default true); explicit reloads work either way. */
  readonly watch?: boolean;
  readonly debounceMs?: number;
}

export type ReloadOutcome = 'reloaded' | 'refused' | 'unchanged';

/**
 * What the source keeps of the config serving now: its text (to tell an edit from noise), its
 * snapshot and the files it names. Not the parsed config tree: the snapshot says everything
 * the proxy serves, and at thousands of routes the tree is megabytes held for nothing.
 */
type ServingConfig = Pick<LoadedConfig, 'text' | 'snapshot' | 'namedFiles'>;

function serving(loaded: LoadedConfig): ServingConfig {
  return { text: loaded.text, snapshot: loaded.snapshot, namedFiles: loaded.namedFiles };
}

/** What made the source read the config: an edit of its file, of a certificate file, or SIGHUP. */
type Trigger = 'edit' | 'certificates' | 'reload';

/** Emits the outcome of every read after the first: `reloaded`, `refused` (with the error) or `unchanged`. */
export class FileSnapshotSource
  extends EventEmitter<{ reloaded: []; refused: [Error]; unchanged: [] }>
  implements SnapshotSource
{
  readonly name = 'config watcher';
  readonly path: string;
  #sink: SnapshotSink | null = null;
  #watch: FileWatch | null = null;
  /** Certificate or key file -> its watch; follows the serving config's files. */
  readonly #certWatches = new Map<string, FileWatch>();
  /** One read for a burst of certificate events (a cert and its key are replaced one after the other). */
  #certTimer: NodeJS.Timeout | undefined;
  #queue: Promise<unknown> = Promise.resolve();
  /** The text last read, applied or not: an edit event with the same text is no edit. */
  #lastSeen: string;
  #current: ServingConfig;
  /** The start-up file's process settings (`config.*`), to warn when an edit changes them. */
  readonly #settings: string;
  /** Warnings of the start-up file, logged when the source starts. */
  #startWarnings: readonly string[];
  #applied = 0;
  #refused = 0;
  #lastError: string | null = null;

  readonly options: Omit<FileSourceOptions, 'initial'>;

  constructor({ initial, ...options }: FileSourceOptions) {
    super();
    // The start-up config is not kept whole: after the first reload it would hold a second
    // config's worth of memory for the life of the process.
    this.options = options;
    this.path = initial.path;
    this.#lastSeen = initial.text;
    this.#current = serving(initial);
    this.#settings = JSON.stringify(initial.config.config ?? {});
    this.#startWarnings = initial.warnings;
  }

  async start(sink: SnapshotSink): Promise<void> {
    this.#sink = sink;
    await sink.apply(this.#current.snapshot);
    this.#applied++;
    for (const w of this.#startWarnings) this.options.log.warn(w);
    this.#startWarnings = [];
    this.options.log.info({ version: this.#current.snapshot.version, source: this.path }, `serving config ${this.#current.snapshot.version} from ${this.path}`);
    if (this.options.watch !== false) {
      this.#watch = watchFile(this.path, () => void this.#enqueue('edit'), { log: this.options.log, debounceMs: this.options.debounceMs });
      this.#watchCertificates();
    }
  }

  /** Watches exactly the files the serving config names (certificates, policy files). */
  #watchCertificates(): void {
    if (this.options.watch === false || !this.#sink) return;
    const wanted = new Set(this.#current.namedFiles);
    for (const [file, w] of this.#certWatches) {
      if (wanted.has(file)) continue;
      w.close();
      this.#certWatches.delete(file);
    }
    for (const file of wanted) {
      if (this.#certWatches.has(file)) continue;
      this.#certWatches.set(file, watchFile(file, () => this.#certificatesChanged(), { log: this.options.log, debounceMs: 0 }));
    }
  }

  #certificatesChanged(): void {
    clearTimeout(this.#certTimer);
    this.#certTimer = setTimeout(() => void this.#enqueue('certificates'), this.options.debounceMs ?? 50);
  }

  /** Reads the file now, as on an edit, and applies it when it differs from what serves. */
  reload(): Promise<ReloadOutcome> {
    return this.#enqueue('reload');
  }

  stop(): void {
    this.#watch?.close();
    this.#watch = null;
    clearTimeout(this.#certTimer);
    for (const w of this.#certWatches.values()) w.close();
    this.#certWatches.clear();
    this.#sink = null;
  }

  state(): SnapshotSourceState {
    return {
      kind: 'file',
      file: this.path,
      applied: this.#applied,
      refused: this.#refused,
      lastError: this.#lastError,
      version: this.#current.snapshot.version,
      // Kept from the first release of /debug/tasks.
      reloads: this.#applied - 1,
    };
  }

  /** Reads run one at a time, in order, so an older read never overwrites a newer one. */
  #enqueue(trigger: Trigger): Promise<ReloadOutcome> {
    const next = this.#queue.then(() => this.#read(trigger));
    this.#queue = next.catch(() => undefined);
    return next;
  }

  async #read(trigger: Trigger): Promise<ReloadOutcome> {
    const sink = this.#sink;
    if (!sink) return 'unchanged';
    const log = this.options.log;
    let text: string;
    try {
      text = await readConfigText(this.path);
    } catch (err) {
      // Mid-rename the file may briefly be missing; the next event brings it back.
      if (trigger === 'edit' && ((err as Error).cause as NodeJS.ErrnoException | undefined)?.code === 'ENOENT') {
        log.debug({ err }, 'config file not readable yet');
        return 'unchanged';
      }
      return this.#refuse(trigger, err as Error);
    }
    // An edit event for content already read is noise; a reload re-reads a refused file, and
    // it and an event on a file the config names re-read those files (certificates renewed in
    // place, an API key revoked) even when the config text is the same.
    const sameText = trigger === 'edit' ? text === this.#lastSeen : text === this.#current.text;
    if (sameText && (trigger === 'edit' || !namesFiles(this.#current))) return this.#unchanged(trigger, text);
    this.#lastSeen = text;
    let next: LoadedConfig;
    try {
      next = parseConfig(this.path, text);
      if (sameText && next.snapshot.version === this.#current.snapshot.version) return this.#unchanged(trigger, text);
      await sink.apply(next.snapshot);
    } catch (err) {
      return this.#refuse(trigger, err as Error);
    }
    for (const w of next.warnings) log.warn(w);
    if (JSON.stringify(next.config.config ?? {}) !== this.#settings) {
      log.warn('process settings (config.*) changed; they take effect at the next restart');
    }
    this.#current = serving(next);
    this.#applied++;
    this.#lastError = null;
    this.#watchCertificates();
    const why = trigger === 'certificates' ? ' (a file it names changed)' : '';
    log.info({ version: next.snapshot.version }, `config reloaded${why}: now serving ${next.snapshot.version}`);
    this.emit('reloaded');
    return 'reloaded';
  }

  #unchanged(trigger: Trigger, text: string): ReloadOutcome {
    if (trigger === 'reload') this.options.log.info({ version: this.#current.snapshot.version }, `config file unchanged; still serving ${this.#current.snapshot.version}`);
    this.#lastSeen = text;
    this.emit('unchanged');
    return 'unchanged';
  }

  #refuse(trigger: Trigger, err: Error): ReloadOutcome {
    this.#refused++;
    this.#lastError = err.message;
    const why = trigger === 'certificates' ? ' after a file it names changed' : '';
    this.options.log.error(`config reload refused${why}, the last good config keeps serving: ${err.message}`);
    this.emit('refused', err);
    return 'refused';
  }
}

/** The config names files beside itself: certificates and keys, and its policies' files (API keys, htpasswd). */
function namesFiles(loaded: ServingConfig): boolean {
  return loaded.namedFiles.length > 0;
}
