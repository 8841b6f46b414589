// The files a standalone config's policies name (API keys, htpasswd, JWKS, CA bundles), read
// when the config is loaded or reloaded: relative to the config file, bounded in size, UTF-8.
// Each file read is remembered so the file source watches it: an edit (a key revoked, a user
// added) applies without a restart, like an edit of the config itself.
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { NO_SOURCES, type PolicySources } from '@tollgate/api';

/** Largest policy file read: 100,000 API keys with metadata fit well under it. */
export const MAX_POLICY_FILE_BYTES = 16 * 1024 * 1024;

export interface PolicyFiles {
  readonly sources: PolicySources;
  /** Every file read (absolute), whether it could be read or not: a fix is an edit of one of them. */
  readonly files: ReadonlySet<string>;
}

export function policyFiles(configPath: string): PolicyFiles {
  const base = dirname(configPath);
  const files = new Set<string>();
  const sources: PolicySources = {
    ...NO_SOURCES,
    mode: 'standalone',
    text: (at, ref) => {
      if (!('file' in ref)) return NO_SOURCES.text(at, ref);
      const file = resolve(base, ref.file);
      files.add(file);
      const fail = (message: string) => ({ ok: false as const, reason: 'Invalid', problem: { path: `${at}.file`, message } });
      let buf: Buffer;
      try {
        buf = readFileSync(file);
      } catch (err) {
        const e = err as NodeJS.ErrnoException;
        const why = e.code === 'ENOENT' ? 'no such file' : e.code === 'EACCES' ? 'permission denied' : e.code === 'EISDIR' ? 'it is a directory' : e.message;
        return fail(`cannot read ${file}: ${why}`);
      }
      if (buf.length > MAX_POLICY_FILE_BYTES) return fail(`${file} is ${buf.length} bytes, more than the ${MAX_POLICY_FILE_BYTES} a policy file may have`);
      const text = buf.toString('utf8');
      if (text.includes('\uFFFD')) return fail(`${file} is not UTF-8 text; save it as UTF-8`);
      return { ok: true, value: { origin: `file ${file}`, text: text.charCodeAt(0) === 0xfeff ? text.slice(1) : text } };
    },
  };
  return { sources, files };
}
