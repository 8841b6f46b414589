// Compiles each kind's IR into its AuthCheck, once per IR object: a route object the snapshot
// decoder kept across applies keeps its checks, and with them what they learned (verified
// passwords, fetched key sets). What outlives one snapshot (key set fetchers, authorization
// service clients, the password-hash worker) lives in AuthDeps, made once per process.
import type { PolicyIR } from '@tollgate/api';
import { compileApiKey } from './api-key.js';
import { compileAuthorization } from './authorization.js';
import { compileBasicAuth } from './basic-auth.js';
import { compileExtAuthz } from './ext-authz.js';
import { compileJwt } from './jwt.js';
import type { AuthDeps } from './deps.js';
import type { AuthCheck, AuthKind } from './types.js';

export type { AuthDeps };

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
