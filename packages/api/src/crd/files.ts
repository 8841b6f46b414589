// Reads and writes the generated CRD files of the repository.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { CRD_FILES, renderCrdYaml } from './gateway-policy.js';
import { BACKEND_CRD_FILES, renderBackendCrdYaml } from './backend.js';

/** Every generated file with its text. */
function generated(): [string, string][] {
  const policy = renderCrdYaml();
  const backend = renderBackendCrdYaml();
  return [...CRD_FILES.map((f): [string, string] => [f, policy]), ...BACKEND_CRD_FILES.map((f): [string, string] => [f, backend])];
}

export interface StaleCrd {
  file: string;
  reason: 'missing' | 'differs';
}

/** Writes every generated CRD file under `repoRoot`; returns the paths written. */
export function writeCrds(repoRoot: string): string[] {
  return generated().map(([file, yaml]) => {
    const path = join(repoRoot, file);
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, yaml);
    return file;
  });
}

/** The committed CRD files that differ from what the schema generates. */
export function staleCrds(repoRoot: string): StaleCrd[] {
  const stale: StaleCrd[] = [];
  for (const [file, yaml] of generated()) {
    let current: string;
    try {
      current = readFileSync(join(repoRoot, file), 'utf8');
    } catch {
      stale.push({ file, reason: 'missing' });
      continue;
    }
    if (current !== yaml) stale.push({ file, reason: 'differs' });
  }
  return stale;
}
