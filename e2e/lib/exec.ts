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

export function exec(file: string, args: readonly string[], opts: ExecOptions = {}): Promise<ExecResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, {
      env: opts.env ?? process.env,
      cwd: opts.cwd,
      stdio: ['pipe', 'pipe', 'pipe'],
      timeout: opts.timeoutMs ?? 120_000,
      killSignal: 'SIGKILL',
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code: code ?? (signal ? 128 : 1), stdout, stderr }));
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
