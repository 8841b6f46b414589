// Reading a standalone config file into a validated config and its ProxySnapshot.
import { open } from 'node:fs/promises';
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
import { readCertificateFiles } from './tls-files.js';
import { policyFiles } from './policy-files.js';

export interface LoadedConfig {
  readonly path: string;
  readonly text: string;
  readonly config: StandaloneConfig;
  readonly snapshot: ProxySnapshot;
  /** Accepted but worth an operator's eye (an expired certificate). */
  readonly warnings: readonly string[];
  /** The files the config names beside itself (absolute): certificates and keys, and the files of its policies; watched for edits. */
  readonly namedFiles: readonly string[];
}

/** Largest config file read: a config of thousands of routes is well under 1 MiB. */
export const MAX_CONFIG_BYTES = 4 * 1024 * 1024;

/** Byte offset of the first byte that is not part of a well-formed UTF-8 sequence, or -1. */
export function invalidUtf8At(buf: Buffer): number {
  let i = 0;
  while (i < buf.length) {
    const b = buf[i]!;
    if (b < 0x80) {
      i++;
      continue;
    }
    // Lead byte: sequence length and the allowed range of the second byte (no overlongs, no surrogates, <= U+10FFFF).
    let n: number;
    let lo = 0x80;
    let hi = 0xbf;
    if (b >= 0xc2 && b <= 0xdf) n = 1;
    else if (b >= 0xe0 && b <= 0xef) {
      n = 2;
      if (b === 0xe0) lo = 0xa0;
      if (b === 0xed) hi = 0x9f;
    } else if (b >= 0xf0 && b <= 0xf4) {
      n = 3;
      if (b === 0xf0) lo = 0x90;
      if (b === 0xf4) hi = 0x8f;
    } else return i;
    for (let k = 1; k <= n; k++) {
      const c = buf[i + k];
      if (c === undefined || c < (k === 1 ? lo : 0x80) || c > (k === 1 ? hi : 0xbf)) return i;
    }
    i += n + 1;
  }
  return -1;
}

function readError(path: string, why: string, cause?: unknown): TollgateError {
  return new TollgateError('TG_CONFIG_READ', `cannot read config file ${path}: ${why}`, { cause });
}

/** The file's text: at most MAX_CONFIG_BYTES of well-formed UTF-8 (a BOM is dropped). */
export async function readConfigText(path: string): Promise<string> {
  let buf: Buffer;
  try {
    const file = await open(path, 'r');
    try {
      const { size } = await file.stat();
      if (size > MAX_CONFIG_BYTES) throw readError(path, `it is ${size} bytes, more than the ${MAX_CONFIG_BYTES} bytes (4 MiB) a config file may have`);
      // The file may grow between stat and read: read one byte past the limit to notice.
      const chunk = Buffer.alloc(MAX_CONFIG_BYTES + 1);
      let length = 0;
      for (;;) {
        const { bytesRead } = await file.read(chunk, length, chunk.length - length, null);
        if (bytesRead === 0) break;
        length += bytesRead;
        if (length > MAX_CONFIG_BYTES) throw readError(path, `it is more than the ${MAX_CONFIG_BYTES} bytes (4 MiB) a config file may have`);
      }
      buf = chunk.subarray(0, length);
    } finally {
      await file.close();
    }
  } catch (err) {
    if (err instanceof TollgateError) throw err;
    const e = err as NodeJS.ErrnoException;
    const why = e.code === 'ENOENT' ? 'no such file' : e.code === 'EACCES' ? 'permission denied' : e.code === 'EISDIR' ? 'it is a directory' : e.message;
    throw readError(path, why, err);
  }
  const bad = invalidUtf8At(buf);
  if (bad >= 0) {
    const before = buf.subarray(0, bad);
    const line = before.filter((c) => c === 0x0a).length + 1;
    const column = bad - (before.lastIndexOf(0x0a) + 1) + 1;
    throw new ValidationError(path, [
      { path: '', message: `is not UTF-8 text: byte 0x${buf[bad]!.toString(16).padStart(2, '0')} at line ${line}, column ${column} (byte ${bad}) starts no valid UTF-8 character; save the file as UTF-8` },
    ]);
  }
  const text = buf.toString('utf8');
  return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
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
  const tls = readCertificateFiles(abs, config);
  if (tls.problems.length) throw new ValidationError(abs, tls.problems);
  const named = policyFiles(abs);
  const snapshot = standaloneToSnapshot(config, { kind: 'file', path: abs }, tls.lookup, named.sources);
  return { path: abs, text, config, snapshot, warnings: tls.warnings, namedFiles: [...tls.files, ...named.files] };
}

export async function loadConfigFile(path: string): Promise<LoadedConfig> {
  return parseConfig(path, await readConfigText(path));
}
