// GatewayPolicy: validity, targets, conflicts between policies on one target, the PolicyIR of
// each target, and status.ancestors (one entry per Gateway reached, or one for the target
// itself when the policy reaches none).
//
// What a policy may reach beyond its target: outbound targets only through ./outbound.ts (a
// backendRef, never a host), and limits and counters of its own namespace only: the domain
// of a global limit is sent as `<policy namespace>/<domain>` (docs/rate-limiting.md).
import { checkTrafficPolicy, MAX_POLICY_ANCESTORS, type FailoverPolicy, type PolicyIR, type PolicyTargetIR, type Problem } from '@tollgate/api';
import { condition, fail, ok, type Verdict } from './conditions.js';
import type { Context } from './context.js';
import { listenerLive, type GatewayState } from './gateway.js';
import type { TranslatedRoute } from './httproute.js';
import { byKey, compareAge, compareStrings, generationOf, keyOf } from './keys.js';
import { resolveOutbound } from './outbound.js';
import { authenticates, convertPolicy, refusingPolicy } from './policy-conversion.js';
import { availability, targetName, type PolicyOutbound } from './policy-outbound.js';
import { checkGrpcTargets } from './policy-grpc.js';
import { policyReferrer, policyRefs } from './policy-refs.js';
import { checkReferences, refusalReason, type Finding } from './policy-sources.js';
import { GATEWAY_GROUP, type GatewayPolicy, type PolicyTargetReference } from '../types/gateway-api.js';
import type { GatewayPolicyStatusReport, PolicyAncestorReference, PolicyAncestorStatusReport } from './types.js';

/** Which policy applies where: `targetKey()` -> the winning policy's IR. */
export type AppliedPolicies = ReadonlyMap<string, PolicyIR>;
/** The failover of the winning policy of a route target (or section), by `targetKey()`: the priorities of its backendRefs. */
export type AppliedFailover = ReadonlyMap<string, FailoverPolicy>;

/** The kinds of route a policy may target, each with its translated routes by `<namespace>/<name>`. */
export type RouteKind = 'HTTPRoute' | 'GRPCRoute';
export type RoutesByKind = Readonly<Record<RouteKind, ReadonlyMap<string, TranslatedRoute>>>;
const TARGET_KINDS: ReadonlySet<string> = new Set<PolicyTargetIR['kind']>(['Gateway', 'HTTPRoute', 'GRPCRoute']);

export function targetKey(kind: PolicyTargetIR['kind'], namespace: string, name: string, sectionName: string | null): string {
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

interface Target {
  readonly ref: PolicyTargetIR;
  readonly key: string;
  /** Gateways the target hangs on (attached, accepted), and why not when empty. */
  readonly gateways: readonly GatewayState[];
  readonly found: Verdict;
  readonly pending: string | null;
}

function gatewayAncestor(g: GatewayState): PolicyAncestorReference {
  return { group: GATEWAY_GROUP, kind: 'Gateway', namespace: g.gateway.metadata.namespace ?? '', name: g.gateway.metadata.name };
}

function isTargetKind(kind: string): kind is PolicyTargetIR['kind'] {
  return TARGET_KINDS.has(kind);
}

function resolveTarget(ref: PolicyTargetReference, p: GatewayPolicy, ctx: Context, gateways: ReadonlyMap<string, GatewayState>, routes: RoutesByKind): Target | null {
  if (ref.group !== GATEWAY_GROUP || !isTargetKind(ref.kind)) return null;
  const ns = p.metadata.namespace ?? '';
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
  const route = routes[t.kind].get(key);
  if (!route) return { ...base, gateways: [], found: fail('TargetNotFound', `${t.kind} ${key} does not exist`), pending: notAttached };
  if (t.sectionName !== null && !route.rules.some((r) => r.sectionName === t.sectionName))
    return { ...base, gateways: [], found: fail('TargetNotFound', `${t.kind} ${key} has no rule named ${t.sectionName}`), pending: notAttached };
  const reached = [...new Set(route.attachments.map((a) => a.gateway))];
  return { ...base, gateways: reached, found: ok('Accepted', 'accepted'), pending: reached.length ? null : notAttached };
}

interface Validated {
  readonly findings: readonly Finding[];
  readonly outbound: readonly PolicyOutbound[];
  /** The converted policy (its origin naming the first target), when there is no finding. */
  readonly ir: PolicyIR | null;
  /** `<host>:<port>` of the rate limit service; '' without one. */
  readonly rateLimitService: string;
}

/**
 * What the CRD's schema lets through and the policy cannot be applied with: each problem with
 * the Accepted reason it gives (Invalid, or the reason of a reference that does not resolve);
 * and when there is none, the policy converted, with its resolved outbound targets.
 */
function validate(p: GatewayPolicy, ctx: Context): Validated {
  const ns = p.metadata.namespace ?? '';
  const problems: Problem[] = [];
  checkTrafficPolicy(p.spec.traffic, 'spec.traffic', 'cluster', ctx.limits, problems);
  p.spec.targetRefs.forEach((t, i) => {
    if (t.group !== GATEWAY_GROUP || !isTargetKind(t.kind))
      problems.push({ path: `spec.targetRefs[${i}]`, message: `${t.group}/${t.kind} cannot be targeted; use group ${GATEWAY_GROUP} with kind Gateway, HTTPRoute or GRPCRoute` });
    else if (p.spec.failover && t.kind === 'Gateway')
      problems.push({ path: `spec.targetRefs[${i}]`, message: 'spec.failover orders the backendRefs of route rules: target the HTTPRoute or GRPCRoute (or one of its rules), or move failover to a policy that does' });
  });
  checkGrpcTargets(p, problems);
  const findings: Finding[] = problems.map((problem) => ({ problem, reason: 'Invalid' }));
  const outbound: PolicyOutbound[] = [];
  let rateLimitService = '';
  const global = p.spec.traffic?.rateLimit?.global;
  if (global) {
    const r = resolveOutbound(global.service, 'spec.traffic.rateLimit.global.service', policyReferrer(ns), ctx);
    if (r.ok) {
      outbound.push({ role: 'rate limit service', target: r.target, failureMode: global.failureMode ?? 'FailOpen', openWithout: 'the global limit', rateLimit: true });
      rateLimitService = r.target.address;
    } else findings.push(r);
  }
  const refs = policyRefs(p);
  findings.push(...checkReferences(ns, refs, ctx));
  // Converted only once everything above holds: a conversion of a policy known to be wrong
  // would only restate its problems.
  if (findings.length) return { findings, outbound, ir: null, rateLimitService };
  const converted = convertPolicy(p, refs, ctx);
  return { findings: converted.findings, outbound: [...outbound, ...converted.outbound], ir: converted.ir, rateLimitService };
}

// validate()'s answer by policy object. It reads the policy, the bounds (ctx.limits) and, for
// its references and outbound targets, only the indexes of the dependency lists (Services,
// EndpointSlices, ReferenceGrants, Backends, BackendTLSPolicies, Secrets, ConfigMaps), which
// are the same objects for as long as the dependency epoch is the same (Context.dependencyEpoch):
// so (policy object, epoch, limits) is a complete key.
const validations = new WeakMap<GatewayPolicy, { readonly epoch: number; readonly limits: Context['limits']; readonly result: Validated }>();

function validatedOf(p: GatewayPolicy, ctx: Context): Validated {
  const hit = validations.get(p);
  if (hit && hit.epoch === ctx.dependencyEpoch && hit.limits === ctx.limits) return hit.result;
  const result = validate(p, ctx);
  validations.set(p, { epoch: ctx.dependencyEpoch, limits: ctx.limits, result });
  return result;
}

// One PolicyIR object per converted policy and target while neither changes, so the route IR
// objects holding it can be reused (see ./snapshot.ts).
const perTarget = new WeakMap<PolicyIR, Map<string, PolicyIR>>();

function policyIR(converted: PolicyIR, p: GatewayPolicy, target: PolicyTargetIR, key: string, service: string): PolicyIR {
  const cacheKey = `${key}|${service}`;
  let byTarget = perTarget.get(converted);
  const hit = byTarget?.get(cacheKey);
  if (hit) return hit;
  const ns = p.metadata.namespace ?? '';
  const ir = { ...converted, origin: { kind: 'GatewayPolicy' as const, namespace: ns, name: p.metadata.name, target } };
  // The namespace scopes the domain: a policy cannot use, or spend, the limits and counters
  // the rate limit service keeps for another namespace's domains (namespace names hold no "/").
  const out = ir.remoteRateLimit ? { ...ir, remoteRateLimit: { ...ir.remoteRateLimit, service, domain: `${ns}/${ir.remoteRateLimit.domain}` } } : ir;
  if (!byTarget) perTarget.set(converted, (byTarget = new Map<string, PolicyIR>()));
  byTarget.set(cacheKey, out);
  return out;
}

export interface PolicyResult {
  readonly applied: AppliedPolicies;
  readonly failover: AppliedFailover;
  readonly status: Map<string, GatewayPolicyStatusReport>;
}

export function translateGatewayPolicies(
  policies: readonly GatewayPolicy[],
  ctx: Context,
  gateways: ReadonlyMap<string, GatewayState>,
  routes: RoutesByKind,
): PolicyResult {
  const sorted = byKey(policies);
  const checked = sorted.map((p) => {
    const validated = validatedOf(p, ctx);
    const targets = p.spec.targetRefs.map((r) => resolveTarget(r, p, ctx, gateways, routes)).filter((t): t is Target => t !== null);
    return { policy: p, ...validated, targets };
  });

  // Conflicts: among valid policies on one existing target, the oldest wins.
  const winners = new Map<string, GatewayPolicy>();
  for (const c of checked) {
    if (c.findings.length) continue;
    for (const t of c.targets) {
      if (!t.found.ok) continue;
      const cur = winners.get(t.key);
      if (!cur || compareAge(c.policy.metadata, cur.metadata) < 0) winners.set(t.key, c.policy);
    }
  }

  // A target no valid policy wins, with a policy that authenticates but is not accepted: the
  // oldest such policy keeps it closed (refusingPolicy), rather than leaving it open.
  const guards = new Map<string, GatewayPolicy>();
  for (const c of checked) {
    if (!c.findings.length || !authenticates(c.policy)) continue;
    for (const t of c.targets) {
      if (!t.found.ok || t.pending !== null || winners.has(t.key)) continue;
      const cur = guards.get(t.key);
      if (!cur || compareAge(c.policy.metadata, cur.metadata) < 0) guards.set(t.key, c.policy);
    }
  }

  const applied = new Map<string, PolicyIR>();
  const failover = new Map<string, FailoverPolicy>();
  const status = new Map<string, GatewayPolicyStatusReport>();
  for (const c of checked) {
    const p = c.policy;
    const key = keyOf(p.metadata);
    const gen = generationOf(p.metadata);
    const invalid = c.findings.length ? fail(refusalReason(c.findings), c.findings.map((x) => `${x.problem.path}: ${x.problem.message}`).join('; ')) : null;
    const outcomes: Outcome[] = [];
    for (const t of c.targets) {
      const winner = winners.get(t.key);
      let accepted: Verdict = invalid ?? t.found;
      if (accepted.ok && winner && winner !== p)
        accepted = fail('Conflicted', `GatewayPolicy ${keyOf(winner.metadata)} also targets ${targetName(t.ref)} and is older (or first by namespace/name); only it applies`);
      if (accepted.ok && t.pending === null && c.ir) applied.set(t.key, policyIR(c.ir, p, t.ref, t.key, c.rateLimitService));
      if (accepted.ok && t.pending === null && p.spec.failover) failover.set(t.key, p.spec.failover);
      const guarding = !accepted.ok && guards.get(t.key) === p;
      if (guarding) applied.set(t.key, refusingPolicy(p, t.ref, t.key));
      const attached = !accepted.ok
        ? fail(
            'Pending',
            `not applied: the policy is not accepted for ${targetName(t.ref)} (${accepted.reason})${guarding ? `; as it authenticates, every request of ${targetName(t.ref)} is refused (403) until it is` : ''}`,
          )
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
  return { applied, failover, status };
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
