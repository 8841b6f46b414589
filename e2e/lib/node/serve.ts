// The node of `pnpm cluster up`, in a process of its own that outlives the command: it starts
// the e2e node (node.ts: the same node the e2e suites use, with the project's images), writes
// a self-contained kubeconfig and the `kubectl`/`helm` links into the state directory, says
// it is ready, and tears the node down on SIGTERM or SIGINT (`pnpm cluster down`) or when it
// dies (node.ts's exit handler; a SIGKILL is finished by the next start).
//
// Run by scripts/cluster.mjs as `node --import scripts/lib/ts-hooks.mjs e2e/lib/node/serve.ts
// <state dir>`; it never runs in a test.
import { mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startNode } from './node.js';

const stateDir = process.argv[2];
if (!stateDir) {
  process.stderr.write('usage: serve.ts <state directory>\n');
  process.exit(2);
}

/** A kubeconfig with the certificates inline: it works wherever it is copied. */
function inlineKubeconfig(file: string): string {
  const config = JSON.parse(readFileSync(file, 'utf8')) as {
    clusters: { cluster: Record<string, string> }[];
    users: { user: Record<string, string> }[];
  };
  const inline = (o: Record<string, string>, key: string) => {
    const path = o[key];
    if (path === undefined) return;
    o[`${key}-data`] = readFileSync(path).toString('base64');
    delete o[key];
  };
  for (const c of config.clusters) inline(c.cluster, 'certificate-authority');
  for (const u of config.users) {
    inline(u.user, 'client-certificate');
    inline(u.user, 'client-key');
  }
  return `${JSON.stringify(config, null, 2)}\n`;
}

const node = await startNode();
const bin = join(stateDir, 'bin');
rmSync(bin, { recursive: true, force: true });
mkdirSync(bin, { recursive: true });
symlinkSync(node.tools.kubectl, join(bin, 'kubectl'));
symlinkSync(node.tools.helm, join(bin, 'helm'));
writeFileSync(join(stateDir, 'kubeconfig'), inlineKubeconfig(node.kubeconfig), { mode: 0o600 });
writeFileSync(
  join(stateDir, 'ready.json'),
  `${JSON.stringify({ pid: process.pid, server: node.server, startMs: node.startMs, dir: node.dir })}\n`,
);
process.stdout.write(`node ready in ${(node.startMs / 1000).toFixed(1)} s (${node.dir})\n`);

// Held until a signal: node.ts tears the node down on SIGTERM/SIGINT/SIGHUP and exit.
setInterval(() => undefined, 1 << 30);
