// A route's authentication: per kind, the route-level policy's setting when it has one,
// otherwise the Gateway-level (listener) one; run in the order of AUTH_ORDER. Compiled once
// per route and listener policy pair (docs/authentication.md, "Order and merge").
import type { EvaluationLimits, PolicyIR } from '@tollgate/api';
import type { AuthCheck, AuthKind } from './types.js';
import type { AuthCompilers } from './compilers.js';

/** Who the caller is first, then what it may do: local rules before a remote service. */
export const AUTH_ORDER: readonly AuthKind[] = ['apiKey', 'basicAuth', 'jwt', 'oidc', 'authorization', 'extAuthz'];

/** `limits`: the snapshot's evaluation bounds, which the authorization rules are held to. */
export function effectiveAuth(listener: PolicyIR | null, route: PolicyIR | null, compilers: AuthCompilers, limits: EvaluationLimits): readonly AuthCheck[] | null {
  const checks: AuthCheck[] = [];
  for (const kind of AUTH_ORDER) {
    const ir = route?.[kind] ?? listener?.[kind] ?? null;
    if (ir !== null) checks.push(compilers.compile(kind, ir, limits));
  }
  return checks.length ? checks : null;
}
