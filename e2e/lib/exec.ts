// Runs a command and collects its output; never throws on a non-zero exit.
import { spawn } from 'node:child_process';

export interface ExecResult {
  code: number;
  stdout: string;
  stderr: string;
}

export interface ExecOptions {
  env?: NodeJS.ProcessEnv;
  input?: string;
  cwd?: string;
  timeoutMs?: number;
}

/** How long a command may run when the caller does not say: 2 minutes. */
const DEFAULT_TIMEOUT_MS = 120_000;

/**
 * A command's own `--timeout` (kubectl wait/rollout, helm: `--timeout=180s`, `--timeout 5m`) plus
 * a margin, so it reports its own timeout (naming what it waited for) before it is killed; null
 * when it has none.
 */
export function ownTimeoutMs(args: readonly string[]): number | null {
  const at = args.findIndex((a) => a === '--timeout' || a.startsWith('--timeout='));
  if (at < 0) return null;
  const value = args[at]!.startsWith('--timeout=') ? args[at]!.slice('--timeout='.length) : (args[at + 1] ?? '');
  const parts = [...value.matchAll(/(\d+(?:\.\d+)?)(h|m|s|ms)/g)];
  if (!parts.length || parts.map((p) => p[0]).join('') !== value) return null;
  const ms = parts.reduce((sum, p) => sum + Number(p[1]) * { h: 3_600_000, m: 60_000, s: 1_000, ms: 1 }[p[2] as 'h' | 'm' | 's' | 'ms'], 0);
  return ms + 30_000;
}

export function exec(file: string, args: readonly string[], opts: ExecOptions = {}): Promise<ExecResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, {
      env: opts.env ?? process.env,
      cwd: opts.cwd,
      stdio: ['pipe', 'pipe', 'pipe'],
      timeout: opts.timeoutMs ?? Math.max(DEFAULT_TIMEOUT_MS, ownTimeoutMs(args) ?? 0),
      killSignal: 'SIGKILL',
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code, signal) =>
      resolve({ code: code ?? (signal ? 128 : 1), stdout, stderr: signal && !stderr ? `killed by ${signal} (ran longer than its time limit)` : stderr }),
    );
    // A command may exit without reading its input; that is its answer, not an error here.
    child.stdin.on('error', () => undefined);
    child.stdin.end(opts.input ?? '');
  });
}

/** Like exec, but throws with the command's output when it fails. */
export async function run(file: string, args: readonly string[], opts: ExecOptions = {}): Promise<string> {
  const r = await exec(file, args, opts);
  if (r.code !== 0) {
    throw new Error(`${file} ${args.join(' ')} exited with ${r.code}\n${r.stderr}${r.stdout}`);
  }
  return r.stdout;
}
