// GatewayPolicy: validity, targets, conflicts between policies on one target, the PolicyIR of
// each target, and status.ancestors (one entry per Gateway reached, or one for the target
// itself when the policy reaches none).
//
// What a policy may reach beyond its target: outbound targets only through ./outbound.ts (a
// backendRef, never a host), and limits and counters of its own namespace only: the domain
// of a global limit is sent as `<policy namespace>/<domain>` (docs/rate-limiting.md).
import { checkTrafficPolicy, MAX_POLICY_ANCESTORS, toPolicy, type PolicyIR, type PolicyTargetIR, type Problem } from '@tollgate/api';
import { condition, fail, ok, type Verdict } from './conditions.js';
import type { Context } from './context.js';
import { listenerLive, type GatewayState } from './gateway.js';
import type { TranslatedRoute } from './httproute.js';
import { byKey, compareAge, compareStrings, generationOf, keyOf } from './keys.js';
import { resolveOutbound, type OutboundTarget } from './outbound.js';
import { GATEWAY_GROUP, POLICY_GROUP, type GatewayPolicy, type PolicyTargetReference } from '../types/gateway-api.js';
import type { GatewayPolicyStatusReport, PolicyAncestorReference, PolicyAncestorStatusReport } from './types.js';

/** Which policy applies where: `targetKey()` -> the winning policy's IR. */
export type AppliedPolicies = ReadonlyMap<string, PolicyIR>;

export function targetKey(kind: 'Gateway' | 'HTTPRoute', namespace: string, name: string, sectionName: string | null): string {
  return `${kind}/${namespace}/${name}/${sectionName ?? ''}`;
}

interface Outcome {
  /** Gateway key reached, or null: the target itself is the ancestor. */
  readonly ancestor: PolicyAncestorReference;
  readonly accepted: Verdict;
  readonly attached: Verdict;
  /** ServicesAvailable, for an accepted policy with outbound targets; null otherwise. */
  readonly available: Verdict | null;
}

/** An outbound target the policy resolved, with what its failure does to the target's requests. */
interface PolicyOutbound {
  /** What it is to the policy, e.g. `rate limit service`. */
  readonly role: string;
  readonly target: OutboundTarget;
  readonly failureMode: 'FailOpen' | 'FailClosed';
  /** What a request misses when the target fails open, e.g. `the global limit`. */
  readonly openWithout: string;
}

interface Target {
  readonly ref: PolicyTargetIR;
  readonly key: string;
  /** Gateways the target hangs on (attached, accepted), and why not when empty. */
  readonly gateways: readonly GatewayState[];
  readonly found: Verdict;
  readonly pending: string | null;
}

const targetName = (t: PolicyTargetIR) => `${t.kind} ${t.namespace}/${t.name}${t.sectionName ? ` section ${t.sectionName}` : ''}`;

function gatewayAncestor(g: GatewayState): PolicyAncestorReference {
  return { group: GATEWAY_GROUP, kind: 'Gateway', namespace: g.gateway.metadata.namespace ?? '', name: g.gateway.metadata.name };
}

function resolveTarget(ref: PolicyTargetReference, ns: string, ctx: Context, gateways: ReadonlyMap<string, GatewayState>, routes: ReadonlyMap<string, TranslatedRoute>): Target | null {
  if (ref.group !== GATEWAY_GROUP || (ref.kind !== 'Gateway' && ref.kind !== 'HTTPRoute')) return null;
  const t: PolicyTargetIR = { kind: ref.kind, namespace: ns, name: ref.name, sectionName: ref.sectionName ?? null };
  const base = { ref: t, key: targetKey(t.kind, ns, ref.name, t.sectionName) };
  const key = `${ns}/${ref.name}`;
  const notAttached = `${t.kind} ${ns}/${ref.name} is not attached to any Gateway`;
  if (t.kind === 'Gateway') {
    const gw = ctx.gateways.get(key);
    if (!gw) return { ...base, gateways: [], found: fail('TargetNotFound', `Gateway ${key} does not exist`), pending: notAttached };
    if (t.sectionName !== null && !(gw.spec.listeners ?? []).some((l) => l.name === t.sectionName))
      return { ...base, gateways: [], found: fail('TargetNotFound', `Gateway ${key} has no listener named ${t.sectionName}`), pending: notAttached };
    const state = gateways.get(key);
    if (!state)
      return { ...base, gateways: [], found: ok('Accepted', 'accepted'), pending: `Gateway ${key} is of GatewayClass ${gw.spec.gatewayClassName}, which ${ctx.controllerName} does not serve` };
    if (!state.accepted.ok) return { ...base, gateways: [state], found: ok('Accepted', 'accepted'), pending: `Gateway ${key} is not accepted: ${state.accepted.message}` };
    const listeners = state.listeners.filter((l) => (t.sectionName === null || l.spec.name === t.sectionName) && listenerLive(state, l));
    if (!listeners.length) return { ...base, gateways: [state], found: ok('Accepted', 'accepted'), pending: `no accepted listener of Gateway ${key} matches` };
    return { ...base, gateways: [state], found: ok('Accepted', 'accepted'), pending: null };
  }
  const route = routes.get(key);
  if (!route) return { ...base, gateways: [], found: fail('TargetNotFound', `HTTPRoute ${key} does not exist`), pending: notAttached };
  if (t.sectionName !== null && !route.rules.some((r) => r.sectionName === t.sectionName))
    return { ...base, gateways: [], found: fail('TargetNotFound', `HTTPRoute ${key} has no rule named ${t.sectionName}`), pending: notAttached };
  const reached = [...new Set(route.attachments.map((a) => a.gateway))];
  return { ...base, gateways: reached, found: ok('Accepted', 'accepted'), pending: reached.length ? null : notAttached };
}

/** Problems with the policy as written that the CRD's schema lets through, and its resolved outbound targets. */
function validate(p: GatewayPolicy, ctx: Context): { problems: Problem[]; outbound: PolicyOutbound[] } {
  const ns = p.metadata.namespace ?? '';
  const problems: Problem[] = [];
  checkTrafficPolicy(p.spec.traffic, 'spec.traffic', 'cluster', ctx.limits, problems);
  p.spec.targetRefs.forEach((t, i) => {
    if (t.group !== GATEWAY_GROUP || (t.kind !== 'Gateway' && t.kind !== 'HTTPRoute'))
      problems.push({ path: `spec.targetRefs[${i}]`, message: `${t.group}/${t.kind} cannot be targeted; use group ${GATEWAY_GROUP} with kind Gateway or HTTPRoute` });
  });
  const outbound: PolicyOutbound[] = [];
  const from = { group: POLICY_GROUP, kind: 'GatewayPolicy', namespace: ns };
  const global = p.spec.traffic?.rateLimit?.global;
  if (global) {
    const r = resolveOutbound(global.service, 'spec.traffic.rateLimit.global.service', from, ctx);
    if (r.ok) outbound.push({ role: 'rate limit service', target: r.target, failureMode: global.failureMode ?? 'FailOpen', openWithout: 'the global limit' });
    else problems.push(r.problem);
  }
  return { problems, outbound };
}

// One PolicyIR object per policy object and target while neither changes, so the route IR
// objects holding it can be reused (see ./snapshot.ts).
const policyCache = new WeakMap<GatewayPolicy, Map<string, PolicyIR | null>>();

function policyIR(p: GatewayPolicy, target: PolicyTargetIR, key: string, outbound: readonly PolicyOutbound[]): PolicyIR | null {
  const service = outbound.find((o) => o.role === 'rate limit service')?.target.address ?? '';
  const cacheKey = `${key}|${service}`;
  let byTarget = policyCache.get(p);
  if (byTarget?.has(cacheKey)) return byTarget.get(cacheKey)!;
  const ns = p.metadata.namespace ?? '';
  const ir = toPolicy({ traffic: p.spec.traffic }, { kind: 'GatewayPolicy', namespace: ns, name: p.metadata.name, target });
  // The namespace scopes the domain: a policy cannot use, or spend, the limits and counters
  // the rate limit service keeps for another namespace's domains (namespace names hold no "/").
  const out = ir?.remoteRateLimit ? { ...ir, remoteRateLimit: { ...ir.remoteRateLimit, service, domain: `${ns}/${ir.remoteRateLimit.domain}` } } : ir;
  if (!byTarget) policyCache.set(p, (byTarget = new Map<string, PolicyIR | null>()));
  byTarget.set(cacheKey, out);
  return out;
}

/**
 * ServicesAvailable: whether the Services the policy sends to have ready endpoints (read from
 * their EndpointSlices), and what their absence does to the requests of `target`. A route's
 * policy never holds the readiness of the Gateway's proxies; a Gateway's policy that fails
 * closed does (docs/rate-limiting.md, "When the service cannot answer").
 */
function availability(outbound: readonly PolicyOutbound[], target: PolicyTargetIR): Verdict | null {
  if (!outbound.length) return null;
  const down = outbound.filter((o) => o.target.readyEndpoints === 0);
  if (!down.length)
    return ok('Available', outbound.map((o) => `${o.target.object} (the ${o.role}) has ${o.target.readyEndpoints} ready endpoint${o.target.readyEndpoints === 1 ? '' : 's'}`).join('; '));
  const requests = `requests of ${targetName(target)}`;
  const effect = (o: PolicyOutbound) => {
    const now =
      o.failureMode === 'FailClosed'
        ? `${requests} are refused (500, failureMode FailClosed) until it has`
        : `${requests} pass without ${o.openWithout} (failureMode FailOpen) until it has`;
    if (target.kind === 'HTTPRoute') return `${now}; other routes and the readiness of the Gateway's proxies are not affected`;
    return o.failureMode === 'FailClosed' ? `${now}, and new proxy replicas of the Gateway do not become ready before it answers` : now;
  };
  return fail('NoReadyEndpoints', down.map((o) => `${o.target.object} (the ${o.role}) has no ready endpoints: ${effect(o)}`).join('; '));
}

export interface PolicyResult {
  readonly applied: AppliedPolicies;
  readonly status: Map<string, GatewayPolicyStatusReport>;
}

export function translateGatewayPolicies(
  policies: readonly GatewayPolicy[],
  ctx: Context,
  gateways: ReadonlyMap<string, GatewayState>,
  routes: ReadonlyMap<string, TranslatedRoute>,
): PolicyResult {
  const sorted = byKey(policies);
  const checked = sorted.map((p) => {
    const { problems, outbound } = validate(p, ctx);
    const ns = p.metadata.namespace ?? '';
    const targets = p.spec.targetRefs.map((r) => resolveTarget(r, ns, ctx, gateways, routes)).filter((t): t is Target => t !== null);
    return { policy: p, problems, outbound, targets };
  });

  // Conflicts: among valid policies on one existing target, the oldest wins.
  const winners = new Map<string, GatewayPolicy>();
  for (const c of checked) {
    if (c.problems.length) continue;
    for (const t of c.targets) {
      if (!t.found.ok) continue;
      const cur = winners.get(t.key);
      if (!cur || compareAge(c.policy.metadata, cur.metadata) < 0) winners.set(t.key, c.policy);
    }
  }

  const applied = new Map<string, PolicyIR>();
  const status = new Map<string, GatewayPolicyStatusReport>();
  for (const c of checked) {
    const p = c.policy;
    const key = keyOf(p.metadata);
    const gen = generationOf(p.metadata);
    const invalid = c.problems.length ? fail('Invalid', c.problems.map((x) => `${x.path}: ${x.message}`).join('; ')) : null;
    const outcomes: Outcome[] = [];
    for (const t of c.targets) {
      const winner = winners.get(t.key);
      let accepted: Verdict = invalid ?? t.found;
      if (accepted.ok && winner && winner !== p)
        accepted = fail('Conflicted', `GatewayPolicy ${keyOf(winner.metadata)} also targets ${targetName(t.ref)} and is older (or first by namespace/name); only it applies`);
      if (accepted.ok && t.pending === null) {
        const ir = policyIR(p, t.ref, t.key, c.outbound);
        if (ir) applied.set(t.key, ir);
      }
      const attached = !accepted.ok
        ? fail('Pending', `not applied: the policy is not accepted for ${targetName(t.ref)} (${accepted.reason})`)
        : t.pending !== null
          ? fail('Pending', t.pending)
          : ok(
              'Attached',
              t.ref.kind === 'Gateway'
                ? `in the configuration of this Gateway${t.ref.sectionName ? ` for listener ${t.ref.sectionName}` : ''}`
                : `${targetName(t.ref)} is attached to this Gateway; the policy is in its configuration`,
            );
      const available = accepted.ok ? availability(c.outbound, t.ref) : null;
      if (t.gateways.length) for (const g of t.gateways) outcomes.push({ ancestor: gatewayAncestor(g), accepted, attached, available });
      else
        outcomes.push({
          ancestor: { group: GATEWAY_GROUP, kind: t.ref.kind, namespace: t.ref.namespace, name: t.ref.name, ...(t.ref.sectionName ? { sectionName: t.ref.sectionName } : {}) },
          accepted,
          attached,
          available,
        });
    }
    status.set(key, { namespace: p.metadata.namespace ?? '', name: p.metadata.name, generation: gen, ancestors: ancestors(outcomes, ctx.controllerName, gen) });
  }
  return { applied, status };
}

function ancestorKey(a: PolicyAncestorReference): string {
  // Gateways first, then targets that reach none.
  return `${a.kind === 'Gateway' && a.sectionName === undefined ? 0 : 1}/${a.kind}/${a.namespace}/${a.name}/${a.sectionName ?? ''}`;
}

/** One entry per ancestor; where several targets meet one ancestor, an applied one speaks. */
function ancestors(outcomes: readonly Outcome[], controllerName: string, gen: number): PolicyAncestorStatusReport[] {
  const best = new Map<string, Outcome>();
  const rank = (o: Outcome) => (o.accepted.ok && o.attached.ok ? 0 : o.accepted.ok ? 1 : 2);
  for (const o of outcomes) {
    const k = ancestorKey(o.ancestor);
    const cur = best.get(k);
    if (!cur || rank(o) < rank(cur)) best.set(k, o);
  }
  return [...best]
    .sort(([a], [b]) => compareStrings(a, b))
    .slice(0, MAX_POLICY_ANCESTORS)
    .map(([, o]) => ({
      ancestorRef: o.ancestor,
      controllerName,
      conditions: [
        condition('Accepted', o.accepted.ok, o.accepted.reason, o.accepted.message, gen),
        condition('Attached', o.attached.ok, o.attached.reason, o.attached.message, gen),
        ...(o.available ? [condition('ServicesAvailable', o.available.ok, o.available.reason, o.available.message, gen)] : []),
      ],
    }));
}
