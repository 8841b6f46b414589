// Compiles each kind's IR into its AuthCheck, once per IR object: a route object the snapshot
// decoder kept across applies keeps its checks, and with them what they learned (verified
// passwords, fetched key sets). What outlives one snapshot (key set fetchers, authorization
// service clients, the password-hash worker) lives in AuthDeps, made once per process.
import type { EvaluationLimits, PolicyIR } from '@tollgate/api';
import { compileApiKey } from './api-key.js';
import { compileAuthorization } from './authorization.js';
import { compileBasicAuth } from './basic-auth.js';
import { compileExtAuthz } from './ext-authz.js';
import { compileJwt } from './jwt.js';
import { compileOidc } from './oidc.js';
import type { AuthDeps } from './deps.js';
import type { AuthCheck, AuthKind } from './types.js';

export type { AuthDeps };

/**
 * A kind's compiler. `limits` are the snapshot's evaluation bounds (`ir.limits`, or the
 * defaults): the authorization rules are compiled and evaluated within them.
 */
type Compiler<K extends AuthKind> = (ir: NonNullable<PolicyIR[K]>, deps: AuthDeps, limits: EvaluationLimits) => AuthCheck;

const COMPILERS: { readonly [K in AuthKind]: Compiler<K> } = {
  apiKey: compileApiKey,
  basicAuth: compileBasicAuth,
  jwt: compileJwt,
  oidc: compileOidc,
  authorization: compileAuthorization,
  extAuthz: compileExtAuthz,
};

export class AuthCompilers {
  // Keyed by IR object, then by the bounds it was compiled under: an IR object kept across a
  // reload that changed config.cel is compiled again under the new bounds.
  readonly #compiled = new WeakMap<object, { readonly limits: string; readonly check: AuthCheck }>();
  readonly #limitsKeys = new WeakMap<EvaluationLimits, string>();
  constructor(readonly deps: AuthDeps) {}

  compile<K extends AuthKind>(kind: K, ir: NonNullable<PolicyIR[K]>, limits: EvaluationLimits): AuthCheck {
    let key = this.#limitsKeys.get(limits);
    if (key === undefined) this.#limitsKeys.set(limits, (key = JSON.stringify(limits)));
    const hit = this.#compiled.get(ir);
    if (hit?.limits === key) return hit.check;
    const check = (COMPILERS[kind] as Compiler<K>)(ir, this.deps, limits);
    this.#compiled.set(ir, { limits: key, check });
    return check;
  }
}
