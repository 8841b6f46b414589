// Hot reload of the config file. The directory is watched rather than the file, so editors
// that save by rename and Kubernetes ConfigMap symlink swaps are seen too; events are
// debounced and a reload happens only when the file's content changed.
import { EventEmitter } from 'node:events';
import { watch, type FSWatcher } from 'node:fs';
import { basename, dirname } from 'node:path';
import type { Logger } from 'pino';
import { readConfigText } from './load-file.js';

export interface WatchOptions {
  readonly path: string;
  readonly initialText: string;
  readonly log: Logger;
  /** Applies new file content; throws to refuse it (the caller keeps the last good config). */
  readonly onChange: (text: string) => Promise<void>;
  readonly debounceMs?: number;
}

/** Emits `reloaded` after a change is applied and `refused` (with the error) after one is not. */
export class ConfigWatcher extends EventEmitter<{ reloaded: []; refused: [Error] }> {
  #watcher: FSWatcher | null = null;
  #timer: NodeJS.Timeout | undefined;
  #lastText: string;
  #running: Promise<void> = Promise.resolve();
  reloads = 0;
  refused = 0;
  lastError: string | null = null;

  constructor(readonly options: WatchOptions) {
    super();
    this.#lastText = options.initialText;
  }

  start(): void {
    const dir = dirname(this.options.path);
    const name = basename(this.options.path);
    this.#watcher = watch(dir, { persistent: false }, (_event, file) => {
      // Symlink swaps change other names in the directory; any event may concern our file.
      if (file !== null && file !== name && !file.startsWith('..')) return;
      this.#schedule();
    });
    this.#watcher.on('error', (err) => this.options.log.error({ err }, `watching ${dir} failed; config reload is off`));
  }

  #schedule(): void {
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => {
      this.#running = this.#running.then(() => this.#check());
    }, this.options.debounceMs ?? 50);
  }

  async #check(): Promise<void> {
    let text: string;
    try {
      text = await readConfigText(this.options.path);
    } catch (err) {
      // Mid-rename the file may briefly be missing; the next event brings it back.
      this.options.log.debug({ err }, 'config file not readable yet');
      return;
    }
    if (text === this.#lastText) return;
    this.#lastText = text;
    try {
      await this.options.onChange(text);
      this.reloads++;
      this.lastError = null;
      this.emit('reloaded');
    } catch (err) {
      this.refused++;
      this.lastError = (err as Error).message;
      this.options.log.error(`config reload refused, the last good config keeps serving: ${(err as Error).message}`);
      this.emit('refused', err as Error);
    }
  }

  stop(): void {
    clearTimeout(this.#timer);
    this.#watcher?.close();
    this.#watcher = null;
  }
}
