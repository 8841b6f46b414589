// Child processes of the bench: each server and each load-generator run is its own process,
// optionally pinned to a CPU with taskset. Every process started here is tracked, and
// stopAll() ends them (SIGTERM, then SIGKILL after a grace period) on success, failure
// and Ctrl-C alike; killAllNow() is the synchronous last resort at process exit.
import { spawn, execFileSync } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { createServer } from 'node:net';
import { createInterface } from 'node:readline';

const live = new Set();

function hasCommand(cmd) {
  try {
    execFileSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

export const commands = {
  taskset: hasCommand('taskset'),
  wrk: hasCommand('wrk'),
  nginx: hasCommand('nginx') ? 'nginx' : ['/usr/sbin/nginx', '/usr/local/sbin/nginx', '/usr/local/nginx/sbin/nginx'].find(hasCommand) ?? null,
};

/** Pids of the direct children of `pid` (nginx workers), from /proc. */
export function childPids(pid) {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    const out = [];
    for (const entry of readdirSync('/proc')) {
      if (!/^\d+$/.test(entry)) continue;
      try {
        const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
        const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
        if (ppid === pid) out.push(Number(entry));
      } catch {
        // the process went away while we looked
      }
    }
    return out;
  }
}

export class Proc {
  /** Last lines of stdout and stderr, for error messages. */
  #tail = [];
  #lineListeners = new Set();
  constructor(name, child) {
    this.name = name;
    this.child = child;
    this.pid = child.pid;
    this.exitCode = undefined;
    /** With keepOutput set, the whole of stdout and stderr (for load generators' reports). */
    this.keepOutput = false;
    this.stdout = '';
    this.stderr = '';
    this.exited = new Promise((resolve) => {
      const ended = (code) => {
        this.exitCode ??= code;
        live.delete(this);
        resolve(this.exitCode);
      };
      // 'close' comes after 'exit' once stdout and stderr are drained, so every line is seen.
      child.once('close', (code, sig) => ended(code ?? sig));
      child.once('error', (err) => {
        this.#remember(`[spawn error] ${err.message}`);
        ended('spawn-error');
      });
    });
    const onLine = (stream) => (line) => {
      this.#remember(stream === 'stderr' ? `[stderr] ${line}` : line);
      if (this.keepOutput) this[stream] += `${line}\n`;
      for (const l of this.#lineListeners) l(line, stream);
    };
    // Always drain both pipes: a child blocked on a full pipe would stall the benchmark.
    createInterface({ input: child.stdout }).on('line', onLine('stdout'));
    createInterface({ input: child.stderr }).on('line', onLine('stderr'));
  }

  #remember(line) {
    this.#tail.push(line.length > 400 ? `${line.slice(0, 400)}...` : line);
    if (this.#tail.length > 20) this.#tail.shift();
  }

  get tail() {
    return this.#tail.join('\n');
  }

  /** Resolves with the first stdout line for which `test(line)` is true. */
  waitForLine(test, timeoutMs) {
    return new Promise((resolve, reject) => {
      const done = (fn, value) => {
        clearTimeout(timer);
        this.#lineListeners.delete(listener);
        fn(value);
      };
      const listener = (line, stream) => {
        if (stream === 'stdout' && test(line)) done(resolve, line);
      };
      const timer = setTimeout(() => done(reject, new Error(`${this.name}: not ready after ${timeoutMs} ms\n${this.tail}`)), timeoutMs);
      this.#lineListeners.add(listener);
      this.exited.then((code) => done(reject, new Error(`${this.name} exited (${code}) before it was ready\n${this.tail}`)));
    });
  }

  /** SIGTERM, then SIGKILL (with its children) if it has not exited after `graceMs`. */
  async stop(graceMs = 5000) {
    if (this.exitCode !== undefined) return;
    const kids = childPids(this.pid);
    signal(this.pid, 'SIGTERM');
    let timer;
    const killed = await Promise.race([
      this.exited.then(() => false),
      new Promise((resolve) => (timer = setTimeout(() => resolve(true), graceMs))),
    ]);
    clearTimeout(timer);
    if (killed) {
      signal(this.pid, 'SIGKILL');
      await this.exited;
    }
    // nginx workers normally go with their master; make sure.
    for (const kid of kids) signal(kid, 'SIGKILL');
  }
}

function signal(pid, sig) {
  try {
    process.kill(pid, sig);
  } catch {
    // already gone
  }
}

/**
 * Starts `cmd args` as a tracked child. `cpu` pins it (and its threads and children) to
 * that CPU list with taskset, when taskset exists; taskset execs the command, so the pid
 * is the command's own.
 */
export function startProcess(name, cmd, args, { cpu = null, env, cwd } = {}) {
  const pin = cpu !== null && commands.taskset;
  const file = pin ? 'taskset' : cmd;
  const argv = pin ? ['-c', String(cpu), cmd, ...args] : args;
  const child = spawn(file, argv, { stdio: ['ignore', 'pipe', 'pipe'], env: env ? { ...process.env, ...env } : process.env, cwd });
  const proc = new Proc(name, child);
  live.add(proc);
  return proc;
}

export async function stopAll() {
  await Promise.all([...live].map((p) => p.stop()));
}

/** Synchronous: for process 'exit', where nothing can be awaited. */
export function killAllNow() {
  for (const p of live) {
    for (const kid of childPids(p.pid)) signal(kid, 'SIGKILL');
    signal(p.pid, 'SIGKILL');
  }
}

export function liveCount() {
  return live.size;
}

/**
 * SIGINT/SIGTERM stop every bench process, run `cleanUp`, and exit 130; a second signal kills
 * them at once. The returned object tells a running loop that a signal came.
 */
export function stopAllOnSignals(cleanUp = () => undefined) {
  let interrupted = false;
  const state = {
    get interrupted() {
      return interrupted;
    },
  };
  for (const sig of ['SIGINT', 'SIGTERM']) {
    process.on(sig, () => {
      if (interrupted) {
        killAllNow();
        process.exit(130);
      }
      interrupted = true;
      console.error(`\n${sig}: stopping ${liveCount()} bench process(es)`);
      stopAll().finally(() => {
        cleanUp();
        process.exit(130);
      });
    });
  }
  return state;
}

/** A JSON log line of the proxy saying one of its binds listens. */
export function isBindListening(line) {
  try {
    const entry = JSON.parse(line);
    return typeof entry.msg === 'string' && entry.msg.startsWith('bind ') && entry.msg.includes('listening');
  } catch {
    return false;
  }
}

/** A free TCP port on 127.0.0.1 (for servers that cannot be told to pick one). */
export function freePort() {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}
