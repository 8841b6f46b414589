// The certificate files of a standalone config, read when the config is loaded or reloaded:
// each checked (readable, PEM, the key of the certificate) with problems that name the field,
// and a warning for a certificate outside its validity period (served anyway: refusing it
// would take the whole config down over one listener's renewal).
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { certificateEntries, checkCertificate, Secret, validityWarning, type CertificateLookup, type StandaloneConfig } from '@tollgate/api';
import type { Problem } from '@tollgate/api';

/** Largest certificate or key file read; a long chain is a few tens of KiB. */
const MAX_PEM_BYTES = 1024 * 1024;

export interface CertificateFiles {
  readonly lookup: CertificateLookup;
  /** Every certificate and key file the config names, absolute: what a renewal replaces. */
  readonly files: readonly string[];
  readonly problems: Problem[];
  readonly warnings: string[];
}

function readPem(file: string, at: string, problems: Problem[]): string | null {
  try {
    const buf = readFileSync(file);
    if (buf.length > MAX_PEM_BYTES) {
      problems.push({ path: at, message: `${file} is ${buf.length} bytes, more than the ${MAX_PEM_BYTES} a PEM file may have; is it the right file?` });
      return null;
    }
    return buf.toString('utf8');
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    const why = e.code === 'ENOENT' ? 'no such file' : e.code === 'EACCES' ? 'permission denied' : e.code === 'EISDIR' ? 'it is a directory' : e.message;
    problems.push({ path: at, message: `cannot read ${file}: ${why}` });
    return null;
  }
}

/** Reads every tls.certificates entry of `cfg`; relative paths are relative to the config file. */
export function readCertificateFiles(configPath: string, cfg: StandaloneConfig, now = Date.now()): CertificateFiles {
  const base = dirname(configPath);
  const problems: Problem[] = [];
  const warnings: string[] = [];
  const files = new Set<string>();
  const loaded = new Map<string, { certificate: string; key: Secret; certFile: string; keyFile: string }>();
  for (const entry of certificateEntries(cfg)) {
    const certFile = resolve(base, entry.certFile);
    const keyFile = resolve(base, entry.keyFile);
    files.add(certFile).add(keyFile);
    const certificate = readPem(certFile, `${entry.path}.certFile`, problems);
    const key = readPem(keyFile, `${entry.path}.keyFile`, problems);
    if (certificate === null || key === null) continue;
    const check = checkCertificate(certificate, key);
    if (!check.ok) {
      const field = check.field === 'certificate' ? 'certFile' : 'keyFile';
      problems.push({ path: `${entry.path}.${field}`, message: `${field === 'certFile' ? certFile : keyFile} ${check.problem}` });
      continue;
    }
    const warning = validityWarning(check.info, now);
    if (warning) warnings.push(`${entry.path}.certFile: ${warning}`);
    loaded.set(entry.path, { certificate, key: new Secret(key), certFile, keyFile });
  }
  const lookup: CertificateLookup = (path) => {
    const c = loaded.get(path);
    if (!c) throw new Error(`${path}: certificate files were not read`);
    return c;
  };
  return { lookup, files: [...files], problems, warnings };
}
