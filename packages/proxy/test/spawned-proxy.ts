// bin/tollgate.js in a process of its own, for what only a fresh process shows (the modules
// it loads, the V8 flags it runs with): started with ephemeral admin, metrics and readiness
// ports, followed until its first bind listens or it exits.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

export const BIN = fileURLToPath(new URL('../bin/tollgate.js', import.meta.url));
const OPS = ['--admin-addr', '127.0.0.1:0', '--metrics-addr', '127.0.0.1:0', '--readiness-addr', '127.0.0.1:0'];

export interface SpawnedProxy {
  readonly child: ChildProcess;
  /** 'listening' once a bind listens; else the exit code. */
  readonly outcome: 'listening' | number | null;
  readonly exited: Promise<[number | null]>;
  /** Everything it wrote so far, stdout and stderr. */
  output(): string;
  /** Its admin API's base URL, from its start-up log ('' before that line). */
  admin(): string;
  /** SIGTERM, then waits for the exit. */
  stop(): Promise<void>;
}

/** Runs `node <nodeArgs> bin/tollgate.js --file <file> <ephemeral ops ports> <args>`. */
export async function spawnProxy(file: string, nodeArgs: readonly string[] = [], args: readonly string[] = []): Promise<SpawnedProxy> {
  const child = spawn(process.execPath, [...nodeArgs, BIN, '--file', file, ...OPS, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  let admin = '';
  child.stderr.on('data', (c: Buffer) => (output += c.toString()));
  const exited = once(child, 'exit') as Promise<[number | null]>;
  const listening = new Promise<void>((resolve) => {
    createInterface({ input: child.stdout }).on('line', (line) => {
      output += `${line}\n`;
      admin ||= /admin listening on (http:\/\/\S+?)"/.exec(line)?.[1] ?? '';
      if (/"msg":"bind .* listening/.test(line)) resolve();
    });
  });
  const outcome = await Promise.race([listening.then(() => 'listening' as const), exited.then(([code]) => code)]);
  return {
    child,
    outcome,
    exited,
    output: () => output,
    admin: () => admin,
    stop: async () => {
      child.kill('SIGTERM');
      await exited;
    },
  };
}
