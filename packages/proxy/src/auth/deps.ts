// What the checks share across snapshots, made once per proxy process (server/runtime.ts): a
// file of its own so that the kinds, which take it, and compilers.ts, which imports the kinds,
// do not import each other.
import type { Logger } from 'pino';
import type { Clock } from '../ratelimit/clock.js';
import type { ExtAuthzServices } from './ext-authz-services.js';
import type { JwksStore } from './jwks-store.js';
import type { PasswordVerifier } from './password-verifier.js';

/** What the checks share across snapshots; made once per proxy process. */
export interface AuthDeps {
  readonly log: Logger;
  /** basicAuth: the password workers and the cache of verified credentials. */
  readonly passwords: PasswordVerifier;
  /** Clients of the external authorization services (extAuthz), one per service address. */
  readonly extAuthz: ExtAuthzServices;
  /** jwt: the remote key sets, shared by every provider naming the same JWKS server. */
  readonly jwks: JwksStore;
  /** jwt: time for token lifetimes (exp, nbf) and key set caching; the runtime's clock. */
  readonly clock: Clock;
}
