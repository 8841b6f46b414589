// Notices edits of one file. The directory is watched rather than the file, so editors that
// save by rename and Kubernetes ConfigMap symlink swaps are seen too; a burst of events is
// debounced into one call. Whether the content changed is for the caller to decide.
import { watch, type FSWatcher } from 'node:fs';
import { basename, dirname } from 'node:path';
import type { Logger } from 'pino';

export interface FileWatch {
  close(): void;
}

export function watchFile(path: string, onChange: () => void, opts: { readonly log: Logger; readonly debounceMs?: number }): FileWatch {
  const dir = dirname(path);
  const name = basename(path);
  let timer: NodeJS.Timeout | undefined;
  const watcher: FSWatcher = watch(dir, { persistent: false }, (_event, file) => {
    // Symlink swaps change other names in the directory; any event may concern our file.
    if (file !== null && file !== name && !file.startsWith('..')) return;
    clearTimeout(timer);
    timer = setTimeout(onChange, opts.debounceMs ?? 50);
  });
  watcher.on('error', (err) => opts.log.error({ err }, `watching ${dir} failed; edits are no longer picked up (SIGHUP still reloads)`));
  return {
    close: () => {
      clearTimeout(timer);
      watcher.close();
    },
  };
}
