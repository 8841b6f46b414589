// The services an accepted GatewayPolicy makes the proxies call (its rate limit service, a JWKS
// server, an external authorization service), and its ServicesAvailable condition: whether
// they have ready endpoints (read from their EndpointSlices), and what their absence does to
// the target's requests.
import type { PolicyTargetIR } from '@tollgate/api';
import { fail, ok, type Verdict } from './conditions.js';
import type { OutboundTarget } from './outbound.js';

/** An outbound target the policy resolved, with what its failure does to the target's requests. */
export interface PolicyOutbound {
  /** What it is to the policy, e.g. `rate limit service`. */
  readonly role: string;
  readonly target: OutboundTarget;
  readonly failureMode: 'FailOpen' | 'FailClosed';
  /** What a request misses when the target fails open, e.g. `the global limit`. */
  readonly openWithout: string;
  /**
   * The rate limit service only: requests refused when it fails closed get 500, and a
   * Gateway's FailClosed policy holds new proxy replicas unready until it answers.
   */
  readonly rateLimit: boolean;
}

/** A service an authentication kind names through the policy's sources (policy-sources.ts). */
export function authOutbound(role: string, target: OutboundTarget, failureMode: 'FailOpen' | 'FailClosed'): PolicyOutbound {
  return { role, target, failureMode, openWithout: `the ${role}`, rateLimit: false };
}

export const targetName = (t: PolicyTargetIR) => `${t.kind} ${t.namespace}/${t.name}${t.sectionName ? ` section ${t.sectionName}` : ''}`;

/**
 * ServicesAvailable, for an accepted policy with outbound targets; null without any. A route's
 * policy never holds the readiness of the Gateway's proxies; a Gateway's rate limit policy
 * that fails closed does (docs/rate-limiting.md, "When the service cannot answer").
 */
export function availability(outbound: readonly PolicyOutbound[], target: PolicyTargetIR): Verdict | null {
  if (!outbound.length) return null;
  const down = outbound.filter((o) => o.target.readyEndpoints === 0);
  if (!down.length)
    return ok('Available', outbound.map((o) => `${o.target.object} (the ${o.role}) has ${o.target.readyEndpoints} ready endpoint${o.target.readyEndpoints === 1 ? '' : 's'}`).join('; '));
  const requests = `requests of ${targetName(target)}`;
  const effect = (o: PolicyOutbound) => {
    const now =
      o.failureMode === 'FailClosed'
        ? o.rateLimit
          ? `${requests} are refused (500, failureMode FailClosed) until it has`
          : `${requests} that need it are refused (failureMode FailClosed) until it has`
        : `${requests} pass without ${o.openWithout} (failureMode FailOpen) until it has`;
    if (target.kind !== 'Gateway') return `${now}; other routes and the readiness of the Gateway's proxies are not affected`;
    return o.failureMode === 'FailClosed' && o.rateLimit ? `${now}, and new proxy replicas of the Gateway do not become ready before it answers` : now;
  };
  return fail('NoReadyEndpoints', down.map((o) => `${o.target.object} (the ${o.role}) has no ready endpoints: ${effect(o)}`).join('; '));
}
