// The Envoy external processor of the tests (e2e/tools/ext-proc, built by
// scripts/install-test-tools.sh into the tools cache), started for the extProc bench variant on
// a free loopback port; stopped with the bench's other processes.
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startProcess } from '../lib/procs.mjs';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

export function extProcBinary() {
  const tools = JSON.parse(readFileSync(join(ROOT, 'e2e/tools.json'), 'utf8'));
  const dir = join(ROOT, 'e2e/tools/ext-proc');
  const key = createHash('sha256').update(readFileSync(join(dir, 'main.go'))).update(readFileSync(join(dir, 'go.mod'))).digest('hex').slice(0, 12);
  return join(process.env.TOLLGATE_CACHE ?? join(homedir(), '.cache', 'tollgate'), `ext-proc-${tools.goControlPlane}-${key}`, 'ext-proc');
}

/**
 * Resolves with the processor's `127.0.0.1:<port>` once it serves. The process is one of the
 * bench's (lib/procs.mjs): stopAll() stops it with the others, so the bench exits when done.
 */
export async function startExtProc({ cpu = null } = {}) {
  const bin = extProcBinary();
  if (!existsSync(bin)) throw new Error(`${bin} is not built: run bash scripts/install-test-tools.sh`);
  const proc = startProcess('ext-proc', bin, ['-addr', '127.0.0.1:0'], { cpu });
  const line = await proc.waitForLine((l) => /ext-proc listening on \S+/.test(l), 15_000);
  return /ext-proc listening on (\S+)/.exec(line)[1];
}
