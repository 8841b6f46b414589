// One e2e node per machine: a lock directory under /run names the process that owns the node
// and records what teardown needs. A later start that finds the owner dead finishes that
// teardown first (a test process killed with SIGKILL cannot clean up after itself).
import { mkdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tearDownHost, type TeardownInput } from './host.js';
import { isAlive } from './sh.js';

export const LOCK_DIR = process.env.TOLLGATE_NODE_LOCK ?? '/run/tollgate-e2e-node.lock';
const STATE = join(LOCK_DIR, 'state.json');

export interface LockState extends TeardownInput {
  owner: number;
}

function readState(): LockState | undefined {
  try {
    return JSON.parse(readFileSync(STATE, 'utf8')) as LockState;
  } catch {
    return undefined;
  }
}

/** Waits until this process owns the node lock; recovers a dead owner's node on the way. */
export async function acquireNodeLock(timeoutMs: number, log: (line: string) => void): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let announced = false;
  for (;;) {
    try {
      mkdirSync(LOCK_DIR);
      writeFileSync(join(LOCK_DIR, 'owner'), String(process.pid));
      return;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    const owner = ownerOf();
    if (owner === undefined || !isAlive(owner)) {
      recoverStale();
      continue;
    }
    if (!announced) {
      log(`waiting for the e2e node of process ${owner} to stop (one node per machine)`);
      announced = true;
    }
    if (Date.now() > deadline) throw new Error(`the e2e node is still held by process ${owner} after ${timeoutMs} ms (lock ${LOCK_DIR})`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

function ownerOf(): number | undefined {
  try {
    return Number(readFileSync(join(LOCK_DIR, 'owner'), 'utf8'));
  } catch {
    // A lock directory just created has no owner file yet for a moment; an old one is stale.
    try {
      return Date.now() - statSync(LOCK_DIR).mtimeMs < 5_000 ? process.pid : undefined;
    } catch {
      return undefined;
    }
  }
}

/** Finishes the teardown of a node whose owner died, then frees the lock. */
export function recoverStale(): void {
  const state = readState();
  if (state) {
    const errors = tearDownHost(state);
    if (errors.length) process.stderr.write(`e2e node: teardown of a dead run's node left:\n  ${errors.join('\n  ')}\n`);
  }
  rmSync(LOCK_DIR, { recursive: true, force: true });
}

/** Records what teardown needs, before anything is changed on the host. */
export function recordState(state: TeardownInput): void {
  const full: LockState = { ...state, owner: process.pid };
  writeFileSync(`${STATE}.tmp`, JSON.stringify(full));
  // rename is atomic: a reader sees the old state or the new one.
  renameSync(`${STATE}.tmp`, STATE);
}

export function releaseNodeLock(): void {
  rmSync(LOCK_DIR, { recursive: true, force: true });
}
