// `pnpm --filter @tollgate/api gen:crds`: regenerates the CRD YAML from the schemas.
// `--check` only reports stale files (exit code 1), for scripts that must not write.
import { fileURLToPath } from 'node:url';
import { CRD_REGENERATE_COMMAND } from './gateway-policy.js';
import { staleCrds, writeCrds } from './files.js';

// src/crd/cli.ts and dist/crd/cli.js are both four levels below the repository root.
const repoRoot = fileURLToPath(new URL('../../../../', import.meta.url));

if (process.argv.includes('--check')) {
  const stale = staleCrds(repoRoot);
  for (const s of stale) console.error(`${s.file}: ${s.reason}; run ${CRD_REGENERATE_COMMAND}`);
  process.exitCode = stale.length ? 1 : 0;
} else {
  for (const file of writeCrds(repoRoot)) console.log(`wrote ${file}`);
}
