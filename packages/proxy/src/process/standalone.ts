// A standalone proxy: process settings and routing both from one config file, the file
// watched for edits. Used by `tollgate --file` and by tests that run a proxy in-process.
import { loadConfigFile } from '../config/load-file.js';
import { FileSnapshotSource } from '../source/file-source.js';
import { ProxyProcess, type ProxyProcessOptions } from './proxy-process.js';

export interface StandaloneOptions extends Omit<ProxyProcessOptions, 'settings' | 'source'> {
  readonly file: string;
  /** Pick up edits of the file as they happen (default true); SIGHUP reloads either way. */
  readonly watch?: boolean;
}

export type StandaloneProxy = ProxyProcess<FileSnapshotSource>;

/** Reads and validates the file (a bad one rejects before anything listens), then starts. */
export async function startStandaloneProxy(options: StandaloneOptions): Promise<StandaloneProxy> {
  const { file, watch, ...rest } = options;
  const initial = await loadConfigFile(file);
  return ProxyProcess.start({
    ...rest,
    settings: initial.config.config ?? {},
    source: (logs) => new FileSnapshotSource({ initial, log: logs.get('config'), watch }),
  });
}
