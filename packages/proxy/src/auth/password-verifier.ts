// Whether a user's password matches their htpasswd hash, as cheaply as it can safely be known:
// a verified credential is remembered (a bounded LRU of SHA-256 digests of a salt made at start
// and never shown, then user, password and stored hash, their lengths first), so a client that
// sends the same credentials again costs one hash, not a bcrypt run. A changed password or hash is another
// entry; a removed user is refused before the cache is asked; a failed attempt is never
// remembered. Concurrent checks of one credential share one verification. What is not
// remembered goes to the worker pool (password-pool.ts). One verifier per process, shared by
// every snapshot (AuthDeps).
import { hash as digest, randomBytes } from 'node:crypto';
import { availableParallelism } from 'node:os';
import type { Logger } from 'pino';
import type { HashScheme } from './password-hashes.js';
import { PasswordPool, type VerifyOutcome } from './password-pool.js';

export type PasswordCheck = 'cached' | VerifyOutcome;

/** config.basicAuth: the password workers and the cache of verified credentials. */
export interface PasswordSettings {
  readonly workers: number;
  readonly maxQueue: number;
  readonly cacheEntries: number;
}

/** One core stays for the event loop; more than 4 threads of bcrypt rarely helps a proxy. */
export function defaultPasswordSettings(): PasswordSettings {
  return { workers: Math.max(1, Math.min(4, availableParallelism() - 1)), maxQueue: 256, cacheEntries: 10_000 };
}

export class PasswordVerifier {
  readonly pool: PasswordPool;
  /** Prefixed to what is hashed: a digest in memory cannot be matched against guesses made elsewhere. */
  readonly #salt = randomBytes(32).toString('base64');
  /** Insertion order is recency order: a hit moves its entry to the end, the first entry goes first. */
  readonly #verified = new Map<string, true>();
  readonly #pending = new Map<string, Promise<VerifyOutcome>>();

  constructor(
    readonly settings: PasswordSettings,
    log: Logger,
    private readonly count: (result: PasswordCheck) => void = () => undefined,
  ) {
    this.pool = new PasswordPool({ workers: settings.workers, maxQueue: settings.maxQueue, log });
  }

  /** 'cached' at once for a credential verified before; otherwise the verification's outcome. */
  check(user: string, password: string, scheme: HashScheme, hash: string): 'cached' | Promise<VerifyOutcome> {
    // Lengths first, so no two (user, password, hash) triples run together into one input.
    const id = digest('sha256', `${this.#salt}${user.length}:${user}\u0000${password.length}:${password}\u0000${hash}`, 'base64');
    if (this.#verified.delete(id)) {
      this.#verified.set(id, true);
      this.count('cached');
      return 'cached';
    }
    let pending = this.#pending.get(id);
    if (!pending) {
      pending = this.pool.verify(scheme, hash, password).then((outcome) => {
        this.#pending.delete(id);
        if (outcome === 'match') this.#remember(id);
        return outcome;
      });
      this.#pending.set(id, pending);
    }
    return pending.then((outcome) => {
      this.count(outcome);
      return outcome;
    });
  }

  #remember(id: string): void {
    const max = this.settings.cacheEntries;
    if (max === 0) return;
    if (this.#verified.size >= max) this.#verified.delete(this.#verified.keys().next().value!);
    this.#verified.set(id, true);
  }

  /** Entries remembered now. */
  get cached(): number {
    return this.#verified.size;
  }

  close(): Promise<void> {
    this.#verified.clear();
    return this.pool.close();
  }
}
