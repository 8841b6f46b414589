// The policies a snapshot lists, for what reads them all at each apply (the credential names to
// redact, the rate limit services, authorization services and processors in use): its
// listeners' and those of the routes that have one of their own. Most routes have none, and an
// apply that changed one route of thousands need not walk them all to find the few: the compile
// knows where they are in each list and finds them in the next list by position (the proxy's
// routing/compile.ts listedPoliciesFrom()). Here, beside the snapshot, for every folder of the
// proxy that reads them (auth, rate limits, processors) whatever its layer.
import type { PolicyIR, ProxySnapshot } from './snapshot.js';

export interface ListedPolicies {
  /** The listeners' policies (gateway level), in listing order. */
  readonly gateway: readonly PolicyIR[];
  /** The routes' own policies, in listing order (a route listed twice, twice). */
  readonly route: readonly PolicyIR[];
}

/** The policies of `ir`, by a walk over every route. */
export function listedPolicies(ir: ProxySnapshot): ListedPolicies {
  const gateway: PolicyIR[] = [];
  const route: PolicyIR[] = [];
  for (const b of ir.binds) {
    for (const l of b.listeners) {
      if (l.policy) gateway.push(l.policy);
      for (const r of l.routes) if (r.policy) route.push(r.policy);
    }
  }
  return { gateway, route };
}
