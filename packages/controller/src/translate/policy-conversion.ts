// A GatewayPolicy's traffic converted to the PolicyIR the proxies run (toPolicy of @tollgate/api,
// the conversion the standalone config uses too), reading Secrets, ConfigMaps and Services
// through the policy's sources (./policy-sources.ts).
//
// Converting can be costly (hashing thousands of API keys, parsing JWKS documents), so it runs
// again only when something it read may have changed: the policy object, or what its
// reference fields resolve to now (the objects, by identity: the cache replaces an object that
// changed, so a rotated key is a new object; whether a grant allows it; the Secrets a selector
// chooses; the addresses of its outbound targets). While none changes, the same PolicyIR
// object comes back, so the snapshots holding it are reused (./snapshot.ts).
import { AUTH_KINDS, NO_AUTH, NO_TRAFFIC_KINDS, toPolicy, type PolicyIR, type PolicyTargetIR, type Problem } from '@tollgate/api';
import type { Context } from './context.js';
import { resolveOutbound } from './outbound.js';
import { authOutbound, type PolicyOutbound } from './policy-outbound.js';
import { mayRead, policyReferrer, selectSecrets, type PolicyRefs } from './policy-refs.js';
import { ClusterPolicySources, type Finding, type OutboundCall } from './policy-sources.js';
import type { GatewayPolicy } from '../types/gateway-api.js';
import { sameObjects } from './same-objects.js';

export interface Conversion {
  /** The policy as the proxies run it (its origin names the first target; ./gatewaypolicy.ts sets each); null when it sets nothing or has findings. */
  readonly ir: PolicyIR | null;
  readonly findings: readonly Finding[];
  /** The outbound targets the conversion resolved, with their readiness now. */
  readonly outbound: readonly PolicyOutbound[];
}

interface Cached {
  readonly inputs: readonly unknown[];
  readonly ir: PolicyIR | null;
  readonly findings: readonly Finding[];
  readonly calls: readonly OutboundCall[];
}

const cache = new WeakMap<GatewayPolicy, Cached>();

/** What the policy's reference fields resolve to now: the objects (by identity) a conversion could read. */
function inputsOf(namespace: string, refs: PolicyRefs, ctx: Context): unknown[] {
  const out: unknown[] = [];
  for (const r of refs.objects) {
    const object = r.kind === 'Secret' ? ctx.secrets.get(`${r.namespace}/${r.name}`) : ctx.configMaps.get(`${r.namespace}/${r.name}`);
    out.push(mayRead(namespace, r, ctx.grants) ? (object ?? null) : 'not permitted');
  }
  for (const s of refs.selectors) {
    const { selected, more } = selectSecrets(s.matchLabels, ctx.secretsIn(namespace));
    out.push(more, selected.length, ...selected);
  }
  return out;
}

/** The outbound targets of a cached conversion resolved again, or null when one resolves differently (convert again). */
function replay(namespace: string, calls: readonly OutboundCall[], ctx: Context): PolicyOutbound[] | null {
  const out: PolicyOutbound[] = [];
  for (const c of calls) {
    const r = resolveOutbound(c.ref, c.at, policyReferrer(namespace), ctx);
    if ((r.ok ? r.target.address : r.problem.message) !== c.answer) return null;
    if (r.ok) out.push(authOutbound(c.role, r.target, c.failureMode));
  }
  return out;
}

export function convertPolicy(p: GatewayPolicy, refs: PolicyRefs, ctx: Context): Conversion {
  const namespace = p.metadata.namespace ?? '';
  const inputs = inputsOf(namespace, refs, ctx);
  const hit = cache.get(p);
  if (hit && sameObjects(hit.inputs, inputs)) {
    const outbound = replay(namespace, hit.calls, ctx);
    if (outbound) return { ir: hit.ir, findings: hit.findings, outbound };
  }
  const sources = new ClusterPolicySources(namespace, refs, ctx);
  const problems: Problem[] = [];
  const first = p.spec.targetRefs[0];
  const kind: PolicyTargetIR['kind'] = first?.kind === 'Gateway' || first?.kind === 'GRPCRoute' ? first.kind : 'HTTPRoute';
  const target = { kind, namespace, name: first?.name ?? '', sectionName: first?.sectionName ?? null };
  let ir: PolicyIR | null = null;
  try {
    ir = toPolicy({ traffic: p.spec.traffic }, { kind: 'GatewayPolicy', namespace, name: p.metadata.name, target }, sources, problems);
  } catch {
    // A conversion that throws refuses this policy alone; what it threw may quote what it read, so it is not shown.
    problems.push({ path: 'spec.traffic', message: 'could not be converted (an error in the controller, not in the policy: report it with the controller\'s version)' });
  }
  const findings = problems.map((problem) => ({ problem, reason: sources.reasonOf(problem) }));
  const result = { ir: findings.length ? null : ir, findings, calls: sources.outboundCalls };
  cache.set(p, { inputs, ...result });
  return { ir: result.ir, findings, outbound: sources.resolved };
}

/** Whether the policy authenticates or authorizes requests (sets one of the authentication kinds). */
export function authenticates(p: GatewayPolicy): boolean {
  const traffic = p.spec.traffic as Record<string, unknown> | undefined;
  return AUTH_KINDS.some((k) => traffic?.[k] !== undefined);
}

/** Name of the rule a refusing policy holds: what a refused request's trace and metrics show. */
export const NOT_ACCEPTED_RULE = 'policy-not-accepted';

const refusing = new WeakMap<GatewayPolicy, Map<string, PolicyIR>>();

/**
 * What the proxies run for a target whose policy authenticates and is not accepted (a Secret
 * deleted, a grant withdrawn, a typo): a rule that refuses every request (403), never the
 * target without authentication. A broken reference closes the target; it does not open it.
 *
 * At a Gateway, a route that sets a kind itself replaces the Gateway's (docs/authentication.md,
 * "Order and merge"), so a route with its own authorization rules would not meet the refusing
 * rule: the API keys and htpasswd users the policy names are then empty sets as well, and no
 * credential is accepted there either (401). A Gateway's jwt or extAuthz has no such form; a
 * route with its own authorization rules runs them without it (docs/kubernetes.md says so).
 */
export function refusingPolicy(p: GatewayPolicy, target: PolicyTargetIR, key: string): PolicyIR {
  let byTarget = refusing.get(p);
  const hit = byTarget?.get(key);
  if (hit) return hit;
  const namespace = p.metadata.namespace ?? '';
  const wide = target.kind === 'Gateway';
  const ir: PolicyIR = {
    origin: { kind: 'GatewayPolicy', namespace, name: p.metadata.name, target },
    localRateLimit: null,
    remoteRateLimit: null,
    transformation: null,
    ...NO_AUTH,
    ...NO_TRAFFIC_KINDS,
    apiKey: wide && p.spec.traffic?.apiKey ? { keyFrom: [{ type: 'Bearer' }, { type: 'Header', name: 'x-api-key' }], consumers: [] } : null,
    basicAuth: wide && p.spec.traffic?.basicAuth ? { realm: 'tollgate', origin: `GatewayPolicy ${namespace}/${p.metadata.name}, not accepted`, users: [] } : null,
    authorization: { rules: [{ name: NOT_ACCEPTED_RULE, action: 'Deny', expression: 'true' }] },
  };
  if (!byTarget) refusing.set(p, (byTarget = new Map<string, PolicyIR>()));
  byTarget.set(key, ir);
  return ir;
}
