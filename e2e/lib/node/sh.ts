// Synchronous command helpers for host setup and teardown: teardown must also run inside an
// 'exit' handler, where nothing asynchronous runs.
import { execFileSync } from 'node:child_process';

/** Runs a command; returns its stdout, or throws with its stderr. */
export function sh(file: string, args: readonly string[], input?: string): string {
  return execFileSync(file, args, { encoding: 'utf8', input, stdio: ['pipe', 'pipe', 'pipe'], timeout: 60_000 });
}

/** Runs a command and ignores its failure (for cleanup of what may already be gone). */
export function shQuiet(file: string, args: readonly string[], input?: string): string {
  try {
    return sh(file, args, input);
  } catch {
    return '';
  }
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Blocks the thread (only for short waits inside synchronous teardown). */
export function sleepSync(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}
