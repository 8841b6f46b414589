// Compiles each kind's IR into its AuthCheck, once per IR object: a route object the snapshot
// decoder kept across applies keeps its checks, and with them what they learned (verified
// passwords, fetched key sets). What outlives one snapshot (key set fetchers, authorization
// service clients, the password-hash worker) lives in AuthDeps, made once per process.
import type { PolicyIR } from '@tollgate/api';
import type { Logger } from 'pino';
import type { Clock } from '../ratelimit/clock.js';
import { compileApiKey } from './api-key.js';
import { compileAuthorization } from './authorization.js';
import { compileBasicAuth } from './basic-auth.js';
import { compileExtAuthz } from './ext-authz.js';
import { compileJwt } from './jwt.js';
import type { JwksStore } from './jwks-store.js';
import type { AuthCheck, AuthKind } from './types.js';

/** What the checks share across snapshots; made once per proxy process. */
export interface AuthDeps {
  readonly log: Logger;
  /** Time for token lifetimes (exp, nbf) and key set caching; the runtime's clock. */
  readonly clock: Clock;
  /** Remote JWKS of jwt providers, shared by every provider naming the same server. */
  readonly jwks: JwksStore;
}

type Compiler<K extends AuthKind> = (ir: NonNullable<PolicyIR[K]>, deps: AuthDeps) => AuthCheck;

const COMPILERS: { readonly [K in AuthKind]: Compiler<K> } = {
  apiKey: compileApiKey,
  basicAuth: compileBasicAuth,
  jwt: compileJwt,
  authorization: compileAuthorization,
  extAuthz: compileExtAuthz,
};

export class AuthCompilers {
  readonly #compiled = new WeakMap<object, AuthCheck>();
  constructor(readonly deps: AuthDeps) {}

  compile<K extends AuthKind>(kind: K, ir: NonNullable<PolicyIR[K]>): AuthCheck {
    let check = this.#compiled.get(ir);
    if (!check) {
      check = (COMPILERS[kind] as Compiler<K>)(ir, this.deps);
      this.#compiled.set(ir, check);
    }
    return check;
  }
}
