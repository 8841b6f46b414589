// Reads and writes the generated CRD files of the repository.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { CRD_FILES, renderCrdYaml } from './gateway-policy.js';

export interface StaleCrd {
  file: string;
  reason: 'missing' | 'differs';
}

/** Writes every generated CRD file under `repoRoot`; returns the paths written. */
export function writeCrds(repoRoot: string): string[] {
  const yaml = renderCrdYaml();
  return CRD_FILES.map((file) => {
    const path = join(repoRoot, file);
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, yaml);
    return file;
  });
}

/** The committed CRD files that differ from what the schema generates. */
export function staleCrds(repoRoot: string): StaleCrd[] {
  const yaml = renderCrdYaml();
  const stale: StaleCrd[] = [];
  for (const file of CRD_FILES) {
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
