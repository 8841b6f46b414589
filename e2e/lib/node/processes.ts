// Processes of the e2e node. Each one is started inside the node's cgroup (so teardown finds it
// and everything it starts, e.g. containerd's shims) and dies with the test process
// (PR_SET_PDEATHSIG through setpriv), so a crashed test run leaves no control plane behind.
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, readFileSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';
import { nodeCgroup } from './host.js';

export interface NodeProcess {
  name: string;
  child: ChildProcess;
  log: string;
}

export interface SpawnOptions {
  /** Run in the mount namespace of this process (the node's private mount namespace). */
  mountNamespaceOf?: number;
}

export function spawnInNode(dir: string, name: string, file: string, args: readonly string[], opts: SpawnOptions = {}): NodeProcess {
  const log = join(dir, `${name}.log`);
  const out = createWriteStream(log);
  const procs = join(nodeCgroup(), 'system', 'cgroup.procs');
  const target = opts.mountNamespaceOf ? ['nsenter', `--mount=/proc/${opts.mountNamespaceOf}/ns/mnt`, '--', file, ...args] : [file, ...args];
  // sh joins the cgroup before exec, so nothing the process starts can escape it.
  const child = spawn('sh', ['-c', 'echo $$ > "$0" && exec setpriv --pdeathsig KILL -- "$@"', procs, ...target], {
    cwd: dir,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout?.pipe(out);
  child.stderr?.pipe(out);
  return { name, child, log };
}

export function logTail(p: NodeProcess, lines = 40): string {
  try {
    return readFileSync(p.log, 'utf8').split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

export function exited(p: NodeProcess): boolean {
  return p.child.exitCode !== null || p.child.signalCode !== null;
}

/**
 * Polls `probe` until true; fails early, with its log, when any of the node's processes exits
 * (`p` is the one whose log explains a timeout).
 */
export async function waitUntil(what: string, p: NodeProcess, probe: () => Promise<boolean> | boolean, timeoutMs: number, all: readonly NodeProcess[] = [p]): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const dead = all.find(exited);
    if (dead) throw new Error(`${dead.name} exited (${dead.child.exitCode ?? dead.child.signalCode}) before ${what}:\n${logTail(dead)}`);
    if (await Promise.resolve().then(probe).catch(() => false)) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}:\n${logTail(p)}`);
}

/** Whether `pid` runs in a mount namespace other than this process's. */
export function inOwnMountNamespace(pid: number): boolean {
  try {
    return readlinkSync(`/proc/${pid}/ns/mnt`) !== readlinkSync('/proc/self/ns/mnt');
  } catch {
    return false;
  }
}
