import { setTimeout as sleep } from 'node:timers/promises';

/**
 * Waits `ms`, or less if `signal` aborts first (client gone, server closing), so a pending delay
 * never keeps a closed server's process alive. Resolves true when the full time passed.
 */
export async function wait(ms: number, signal: AbortSignal): Promise<boolean> {
  if (signal.aborted) return false;
  try {
    await sleep(ms, undefined, { signal });
    return true;
  } catch {
    return false;
  }
}
