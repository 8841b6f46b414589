// A password worker thread: verifies one password against one hash at a time, off the event
// loop (bcrypt at cost 10 holds a core for tens of milliseconds). Started by password-pool.ts.
// It loads the algorithms beside it with its own extension, so the same file runs as built
// JavaScript and, in tests, as the TypeScript source.
import { parentPort } from 'node:worker_threads';
import type * as Hashes from './password-hashes.js';
import type { HashScheme } from './password-hashes.js';

export interface VerifyRequest {
  readonly id: number;
  readonly scheme: HashScheme;
  readonly hash: string;
  readonly password: string;
}

export interface VerifyAnswer {
  readonly id: number;
  /** null: the verification threw (a bug; the pool answers the request as unavailable). */
  readonly match: boolean | null;
}

const ext = import.meta.url.endsWith('.ts') ? '.ts' : '.js';
const hashes = (await import(new URL(`./password-hashes${ext}`, import.meta.url).href)) as typeof Hashes;

parentPort?.on('message', (req: VerifyRequest) => {
  let match: boolean | null;
  try {
    match = hashes.verifyPassword(req.scheme, req.hash, req.password);
  } catch {
    match = null;
  }
  parentPort!.postMessage({ id: req.id, match } satisfies VerifyAnswer);
});
