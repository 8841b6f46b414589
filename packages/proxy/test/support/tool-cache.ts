// Where scripts/install-test-tools.sh leaves a tool built from a wrapper module under e2e/tools/:
// ${TOLLGATE_CACHE:-~/.cache/tollgate}/<name>-<version>-<key>/<binary>, the key being the hash
// of the module's main.go and go.mod (a changed wrapper is rebuilt), the version e2e/tools.json's.
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO_ROOT = fileURLToPath(new URL('../../../../', import.meta.url));

/** `keyed`: the module's files the cache key hashes (install-test-tools.sh hashes the same). */
export function wrapperToolBinary(name: string, versionKey: string, binary: string, keyed: readonly string[] = ['main.go', 'go.mod']): string {
  const tools = JSON.parse(readFileSync(join(REPO_ROOT, 'e2e/tools.json'), 'utf8')) as Record<string, string>;
  const dir = join(REPO_ROOT, 'e2e/tools', name);
  const hash = createHash('sha256');
  for (const f of keyed) hash.update(readFileSync(join(dir, f)));
  const key = hash.digest('hex').slice(0, 12);
  const cache = process.env.TOLLGATE_CACHE ?? join(homedir(), '.cache', 'tollgate');
  return join(cache, `${name}-${tools[versionKey]}-${key}`, binary);
}

/** Whether the tool is there: in CI a missing tool is an error; elsewhere the suite is skipped, saying how to install it. */
export function toolAvailability(what: string, binary: string): { run: boolean } {
  if (existsSync(binary)) return { run: true };
  const message = `${what} is not built: ${binary} (run \`bash scripts/install-test-tools.sh\`)`;
  if (process.env.CI === 'true' || process.env.CI === '1') throw new Error(message);
  console.warn(`skipping: ${message}`);
  return { run: false };
}
