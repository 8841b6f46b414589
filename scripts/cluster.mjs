#!/usr/bin/env node
// `pnpm cluster up|down|status`: the project's one-node Kubernetes cluster on this machine (the
// e2e node: etcd, kube-apiserver, controller-manager, scheduler, kubelet with containerd and
// runc, kube-proxy, CoreDNS), left running with the Gateway API CRDs and the project's images
// loaded, for following docs/kubernetes.md without a cluster of one's own.
//
// `up` starts e2e/lib/node/serve.ts as a process of its own (it holds the node; its log is
// <state>/node.log), waits until it is ready and prints the line to paste; `down` stops it
// (the node is torn down: processes, mounts, interfaces, routes, iptables rules). State lives
// in ${TOLLGATE_CACHE:-~/.cache/tollgate}/cluster/. Run with scripts/lib/ts-hooks.mjs loaded
// (the package.json script does), as root.
import { spawn, spawnSync } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, readSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { LOCK_DIR } from '../e2e/lib/node/lock.ts';
import { isAlive } from '../e2e/lib/node/sh.ts';
import { projectImage, podmanImageId } from '../e2e/lib/node/images.ts';
import { cacheDir, missingTools, nodeToolPaths, REPO_ROOT, VERSIONS } from '../e2e/lib/tools.ts';

const USAGE = `Usage: pnpm cluster <command>

A one-node Kubernetes ${VERSIONS.kubernetes} cluster on this machine (Linux, root), with the
Gateway API ${VERSIONS.gatewayApi} CRDs, Tollgate's CRDs and the images of tollgate,
tollgate-controller and mock-llm loaded: docs/kubernetes.md's Getting started runs on it.

Commands:
  up       start it and leave it running; prints the line that points kubectl and helm at it.
           The first time, it also installs the tools (scripts/install-test-tools.sh, about
           20 minutes on 2 cores) and builds the images (pnpm images) when they are missing.
  down     stop it and remove everything it made (a few seconds)
  status   whether it runs, and the line to paste

Options:
  -h, --help   this text

The e2e node suites use the same node (one per machine): they wait while it runs.
`;

const STATE = join(cacheDir(), 'cluster');
const READY = join(STATE, 'ready.json');
const LOG = join(STATE, 'node.log');
const KUBECONFIG = join(STATE, 'kubeconfig');
const BIN = join(STATE, 'bin');
const IMAGES = ['tollgate', 'tollgate-controller', 'mock-llm'];

const out = (line) => process.stdout.write(`${line}\n`);
const fail = (line, code = 1) => {
  process.stderr.write(`cluster: ${line}\n`);
  process.exit(code);
};

function running() {
  try {
    const state = JSON.parse(readFileSync(READY, 'utf8'));
    if (Number.isInteger(state.pid) && isAlive(state.pid)) return state;
  } catch {
    // no state, or a partial write
  }
  return undefined;
}

function pasteLines() {
  return [
    `  export KUBECONFIG=${KUBECONFIG} PATH=${BIN}:$PATH`,
    '',
    `kubectl and helm (${VERSIONS.kubernetes}, helm ${VERSIONS.helm}) are in ${BIN}.`,
    'Stop it with: pnpm cluster down',
  ];
}

/** The tools and images the node needs; installs or builds what is missing. */
function prepare() {
  const missing = [...missingTools(), ...Object.values(nodeToolPaths()).filter((p) => !existsSync(p))];
  if (missing.length) {
    out(`installing the test tools (missing: ${missing.length}; the first time takes about 20 minutes)`);
    const r = spawnSync('bash', [join(REPO_ROOT, 'scripts/install-test-tools.sh')], { stdio: 'inherit' });
    if (r.status !== 0) fail('installing the tools failed (see above)');
  }
  return (async () => {
    const absent = [];
    for (const name of IMAGES) if (!(await podmanImageId(projectImage(name)))) absent.push(name);
    if (absent.length) {
      out(`building the images ${absent.join(', ')} (pnpm images)`);
      const r = spawnSync('bash', [join(REPO_ROOT, 'images/build-images.sh'), ...absent], { stdio: 'inherit' });
      if (r.status !== 0) fail('building the images failed (see above)');
    }
  })();
}

/** Copies what the node process logs to our stdout until `done` resolves. */
async function follow(done) {
  let offset = 0;
  const fd = openSync(LOG, 'r');
  const buf = Buffer.alloc(64 * 1024);
  let finished = false;
  done.finally(() => (finished = true));
  try {
    for (;;) {
      let n;
      while ((n = readSync(fd, buf, 0, buf.length, offset)) > 0) {
        process.stdout.write(buf.subarray(0, n));
        offset += n;
      }
      if (finished) return;
      await sleep(200);
    }
  } finally {
    closeSync(fd);
  }
}

async function up() {
  const current = running();
  if (current) {
    out(`the cluster is running (process ${current.pid}, API server ${current.server}). Paste:`);
    for (const l of pasteLines()) out(l);
    return;
  }
  if (process.platform !== 'linux') fail('the cluster runs on Linux only');
  if (process.getuid?.() !== 0) fail('the cluster needs root (network interfaces, iptables, mounts, cgroups): run it as root');
  await prepare();
  rmSync(STATE, { recursive: true, force: true });
  mkdirSync(STATE, { recursive: true });
  const log = openSync(LOG, 'a');
  const started = Date.now();
  const child = spawn(process.execPath, ['--import', join(REPO_ROOT, 'scripts/lib/ts-hooks.mjs'), join(REPO_ROOT, 'e2e/lib/node/serve.ts'), STATE], {
    detached: true,
    stdio: ['ignore', log, log],
    cwd: REPO_ROOT,
  });
  closeSync(log);
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve(signal ?? code)));
  // Interrupted while starting: the half-started node goes too.
  const interrupt = () => child.kill('SIGTERM');
  process.once('SIGINT', interrupt);
  process.once('SIGTERM', interrupt);
  out(`starting a one-node cluster (Kubernetes ${VERSIONS.kubernetes}); its log: ${LOG}`);
  const ready = (async () => {
    for (;;) {
      if (running()?.pid === child.pid) return true;
      const r = await Promise.race([exited.then((c) => ({ exit: c })), sleep(250)]);
      if (r?.exit !== undefined) return false;
    }
  })();
  const ok = await Promise.all([ready, follow(ready)]).then(([v]) => v);
  process.off('SIGINT', interrupt);
  process.off('SIGTERM', interrupt);
  if (!ok) fail(`the node did not start (exit ${await exited}); its log is ${LOG}`);
  child.unref();
  out('');
  out(`cluster up in ${Math.round((Date.now() - started) / 1000)} s. Paste:`);
  for (const l of pasteLines()) out(l);
}

async function down() {
  let pid;
  try {
    pid = JSON.parse(readFileSync(READY, 'utf8')).pid;
  } catch {
    pid = undefined;
  }
  if (!Number.isInteger(pid) || !isAlive(pid)) {
    rmSync(READY, { force: true });
    out('no cluster is running');
    return;
  }
  out(`stopping the cluster (process ${pid})`);
  const started = Date.now();
  process.kill(pid, 'SIGTERM');
  while (isAlive(pid)) {
    if (Date.now() - started > 180_000) fail(`process ${pid} did not stop within 3 minutes; its log is ${LOG}`);
    await sleep(200);
  }
  rmSync(READY, { force: true });
  rmSync(KUBECONFIG, { force: true });
  rmSync(BIN, { recursive: true, force: true });
  // A node torn down completely releases its lock; one left says what it could not undo in the log.
  if (existsSync(LOCK_DIR) && readFileSync(join(LOCK_DIR, 'owner'), 'utf8').trim() === String(pid)) {
    fail(`the node's teardown did not finish; see ${LOG} (the next start finishes it)`);
  }
  out(`cluster down in ${Math.round((Date.now() - started) / 1000)} s`);
}

function status() {
  const current = running();
  if (!current) {
    out('no cluster is running (pnpm cluster up starts one)');
    return;
  }
  out(`the cluster is running (process ${current.pid}, API server ${current.server}). Paste:`);
  for (const l of pasteLines()) out(l);
}

const args = process.argv.slice(2);
if (args.includes('-h') || args.includes('--help')) {
  process.stdout.write(USAGE);
  process.exit(0);
}
if (args.length !== 1) fail(args.length ? `unexpected arguments: ${args.join(' ')} (usage: pnpm cluster up|down|status)` : 'a command is needed: up, down or status (pnpm cluster --help)', 2);
const commands = { up, down, status };
const command = commands[args[0]];
if (!command) fail(`unknown command ${args[0]}: up, down or status (pnpm cluster --help)`, 2);
await command();
