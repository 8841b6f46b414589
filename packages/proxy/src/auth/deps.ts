// What the checks share across snapshots, made once per proxy process (server/runtime.ts):
// its own file so that each kind's module can name it without importing the compilers, which
// import every kind.
import type { Logger } from 'pino';
import type { Clock } from '../ratelimit/clock.js';
import type { JwksStore } from './jwks-store.js';

export interface AuthDeps {
  readonly log: Logger;
  /** Time for token lifetimes (exp, nbf) and key set caching; the runtime's clock. */
  readonly clock: Clock;
  /** Remote JWKS of jwt providers, shared by every provider naming the same server. */
  readonly jwks: JwksStore;
}
