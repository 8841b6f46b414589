// `tollgate` started as its own process (bin/tollgate.js), as a pod runs it: from a config file
// on free ports, ready once every thread logged that each bind listens. With
// TOLLGATE_TEST_PROXY_WORKERS it serves on that many threads (--workers).
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { stringify } from 'yaml';
import { afterEach } from 'vitest';
import { onFreePorts, testWorkers } from '../helpers.js';

export const BIN = fileURLToPath(new URL('../../bin/tollgate.js', import.meta.url));
/** Every test process gets ephemeral metrics and readiness ports so parallel runs never collide. */
export const OPS = ['--metrics-addr', '127.0.0.1:0', '--readiness-addr', '127.0.0.1:0'];

/** A test that starts tollgate processes: each start loads the whole proxy, slow on a loaded machine. */
export const PROCESS_TIMEOUT_MS = 120_000;

export async function configFile(content: unknown): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'tollgate-cli-'));
  const file = join(dir, 'config.yaml');
  await writeFile(file, typeof content === 'string' ? content : stringify(content));
  return file;
}

export interface StartedTollgate {
  readonly child: ChildProcess;
  /** The JSON log lines read until it was ready. */
  readonly lines: { msg: string; admin?: string }[];
  readonly ports: number[];
  /** The admin server's address (it picks its own port). */
  readonly admin: string;
}

/** Starts tollgate processes for the file's tests; each is killed after its test, should it still run. */
export function tollgateProcesses(): (configOf: (ports: number[]) => unknown, count?: number) => Promise<StartedTollgate> {
  const children: ChildProcess[] = [];
  afterEach(() => {
    for (const c of children.splice(0)) if (c.exitCode === null) c.kill('SIGKILL');
  });
  /**
   * Starts the proxy on `count` free ports (the config is made from them) and resolves once
   * every bind of every thread has logged that it listens. The admin server picks its own port
   * (it is read from the log line); a bind port another process took after it was probed makes
   * the proxy exit with TG_BIND_IN_USE, and the start is tried again on fresh ports.
   */
  return (configOf, count = 1) =>
    onFreePorts(count, async (ports) => {
      const file = await configFile(configOf(ports));
      const workers = testWorkers();
      const child = spawn(process.execPath, [BIN, '--file', file, '--admin-addr', '127.0.0.1:0', ...OPS, ...(workers ? ['--workers', String(workers)] : [])], { stdio: ['ignore', 'pipe', 'pipe'] });
      children.push(child);
      let stderr = '';
      child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
      const lines: { msg: string; admin?: string }[] = [];
      const rl = createInterface({ input: child.stdout });
      await new Promise<void>((resolve, reject) => {
        child.once('exit', (code) => reject(new Error(`tollgate exited with ${code}: ${stderr}`)));
        rl.on('line', (line) => {
          lines.push(JSON.parse(line) as { msg: string });
          if (lines.filter((l) => /^bind .* listening/.test(l.msg)).length === count * (workers ?? 1)) resolve();
        });
      });
      const admin = lines.find((l) => l.admin)!.admin!;
      return { child, lines, ports, admin };
    });
}
