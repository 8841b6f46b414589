// What readiness waits for on the rate limit services a snapshot uses (docs/rate-limiting.md,
// "When the service cannot answer"). Only what the Gateway's owner configured may hold
// readiness: gateway-level policies (a Gateway or one of its listeners; a standalone
// listener's policies). A route-level policy (a tenant's HTTPRoute) holds nothing: when its
// service cannot answer, that route's requests fail as its failureMode says, and the shared
// proxy stays in service. Kept apart from the gRPC client so that the runtime can read a
// snapshot's needs without loading gRPC.
import type { PolicyIR, ListedPolicies } from '@tollgate/api';

/**
 * `answered`: the service's channel has connected. `attempted`: its first connection attempt
 * has concluded, connected or failed. `nothing`: readiness does not wait for it.
 */
export type ReadinessNeed = 'answered' | 'attempted' | 'nothing';

/**
 * A gateway-level limit that fails closed needs its service to have answered (every request
 * would be refused otherwise); one that fails open needs the first connection attempt to have
 * concluded, so the first requests do not race the connection, yet a service that is down does
 * not keep the proxy out of service when the config says to serve without it.
 */
export function readinessNeed(level: 'gateway' | 'route', failureMode: 'FailOpen' | 'FailClosed'): ReadinessNeed {
  if (level === 'route') return 'nothing';
  return failureMode === 'FailClosed' ? 'answered' : 'attempted';
}

const RANK: Record<ReadinessNeed, number> = { nothing: 0, attempted: 1, answered: 2 };

/** Every rate limit service the snapshot names, of the policies it lists (ListedPolicies, @tollgate/api), with the strictest need of the limits using it. */
export function serviceNeeds(policies: ListedPolicies): Map<string, ReadinessNeed> {
  const needs = new Map<string, ReadinessNeed>();
  const note = (p: PolicyIR, level: 'gateway' | 'route') => {
    const g = p.remoteRateLimit;
    if (!g) return;
    const need = readinessNeed(level, g.failureMode);
    const cur = needs.get(g.service);
    if (cur === undefined || RANK[need] > RANK[cur]) needs.set(g.service, need);
  };
  for (const p of policies.gateway) note(p, 'gateway');
  for (const p of policies.route) note(p, 'route');
  return needs;
}
