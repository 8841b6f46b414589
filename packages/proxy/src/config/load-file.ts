// Reading a standalone config file into a validated config and its ProxySnapshot.
import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import {
  parseConfigText,
  standaloneToSnapshot,
  validateStandaloneConfig,
  ValidationError,
  type ProxySnapshot,
  type StandaloneConfig,
} from '@tollgate/api';
import { TollgateError } from '../errors.js';
import { DirectiveError, parseDirective } from '../log/directive.js';
import { MODULES } from '../log/logger.js';

export interface LoadedConfig {
  readonly path: string;
  readonly text: string;
  readonly config: StandaloneConfig;
  readonly snapshot: ProxySnapshot;
}

export async function readConfigText(path: string): Promise<string> {
  try {
    return await readFile(path, 'utf8');
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    const why = e.code === 'ENOENT' ? 'no such file' : e.code === 'EACCES' ? 'permission denied' : e.code === 'EISDIR' ? 'it is a directory' : e.message;
    throw new TollgateError('TG_CONFIG_READ', `cannot read config file ${path}: ${why}`, { cause: err });
  }
}

/** Parses and validates; throws ValidationError (naming each bad field) or TollgateError. */
export function parseConfig(path: string, text: string): LoadedConfig {
  const abs = resolve(path);
  const config = validateStandaloneConfig(parseConfigText(text, abs), abs);
  const logLevel = config.config?.logLevel;
  if (logLevel !== undefined) {
    try {
      parseDirective(logLevel, MODULES);
    } catch (err) {
      if (!(err instanceof DirectiveError)) throw err;
      throw new ValidationError(abs, [{ path: 'config.logLevel', message: `got ${JSON.stringify(logLevel)}: ${err.message}` }]);
    }
  }
  return { path: abs, text, config, snapshot: standaloneToSnapshot(config, { kind: 'file', path: abs }) };
}

export async function loadConfigFile(path: string): Promise<LoadedConfig> {
  return parseConfig(path, await readConfigText(path));
}
