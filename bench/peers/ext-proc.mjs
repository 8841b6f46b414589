// The Envoy external processor of the tests (e2e/tools/ext-proc, built by
// scripts/install-test-tools.sh into the tools cache), started for the extProc bench variant on
// a free loopback port; killed when the bench exits.
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

export function extProcBinary() {
  const tools = JSON.parse(readFileSync(join(ROOT, 'e2e/tools.json'), 'utf8'));
  const dir = join(ROOT, 'e2e/tools/ext-proc');
  const key = createHash('sha256').update(readFileSync(join(dir, 'main.go'))).update(readFileSync(join(dir, 'go.mod'))).digest('hex').slice(0, 12);
  return join(process.env.TOLLGATE_CACHE ?? join(homedir(), '.cache', 'tollgate'), `ext-proc-${tools.goControlPlane}-${key}`, 'ext-proc');
}

/** Resolves with the processor's `127.0.0.1:<port>` once it serves. */
export function startExtProc() {
  const bin = extProcBinary();
  if (!existsSync(bin)) throw new Error(`${bin} is not built: run bash scripts/install-test-tools.sh`);
  const child = spawn(bin, ['-addr', '127.0.0.1:0'], { stdio: ['ignore', 'pipe', 'inherit'] });
  process.once('exit', () => child.kill('SIGKILL'));
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (b) => {
      out += b;
      const m = /ext-proc listening on (\S+)/.exec(out);
      if (m) resolve(m[1]);
    });
    child.once('exit', (code) => reject(new Error(`ext-proc exited (${code}) before it served`)));
  });
}
