// Pure status merging: what translate() wants, combined with what is on the API server.
// - A condition keeps its lastTransitionTime when its status did not change (reason, message
//   and observedGeneration may change without a transition, as metav1.Condition says).
// - Entries of other controllers (HTTPRoute parents, GatewayPolicy ancestors) are kept where
//   they are; ours are replaced in place, new ones appended, gone ones removed. Keeping the
//   order stable matters: two controllers that each put their own entries first would
//   rewrite the list back and forth forever.
// - The result is compared with the current status by `sameStatus`; equal means no write.
import type {
  DesiredCondition,
  GatewayClassStatusReport,
  GatewayPolicyStatusReport,
  BackendStatusReport,
  GatewayStatusReport,
  HTTPRouteStatusReport,
  ListenerSetStatusReport,
  ListenerStatusReport,
  PolicyAncestorReference,
} from '../translate/types.js';
import type { ParentReference } from '../types/gateway-api.js';

export interface Condition {
  type: string;
  status: string;
  observedGeneration?: number;
  lastTransitionTime: string;
  reason: string;
  message: string;
}

type Json = Record<string, unknown>;

/** metav1.Condition message limit. */
const MAX_MESSAGE = 32768;
/** GatewayPolicy status.ancestors and HTTPRoute status.parents hold at most this many. */
export const MAX_ENTRIES = 16;

const isObj = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const asList = (v: unknown): Json[] => (Array.isArray(v) ? v.filter(isObj) : []);

export function rfc3339(now: Date): string {
  // metav1.Time has second precision; a sub-second value would differ from what the server
  // stores and every comparison would see a change.
  return now.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

export function mergeConditions(existing: unknown, desired: readonly DesiredCondition[], now: Date): Condition[] {
  const current = asList(existing);
  return desired.map((d) => {
    const prev = current.find((c) => c.type === d.type);
    const kept = prev && prev.status === d.status && typeof prev.lastTransitionTime === 'string' ? prev.lastTransitionTime : undefined;
    return {
      type: d.type,
      status: d.status,
      observedGeneration: d.observedGeneration,
      lastTransitionTime: kept ?? rfc3339(now),
      reason: d.reason,
      message: d.message.length > MAX_MESSAGE ? `${d.message.slice(0, MAX_MESSAGE - 3)}...` : d.message,
    };
  });
}

export function mergeGatewayClassStatus(current: unknown, report: GatewayClassStatusReport, now: Date): Json {
  const cur = isObj(current) ? current : {};
  const rest = { ...cur };
  delete rest.supportedFeatures;
  return {
    ...rest,
    conditions: mergeConditions(cur.conditions, report.conditions, now),
    ...(report.supportedFeatures.length ? { supportedFeatures: report.supportedFeatures.map((name) => ({ name })) } : {}),
  };
}

/** A Backend's status: its own conditions (Accepted), nobody else's. */
export function mergeBackendStatus(current: unknown, report: BackendStatusReport, now: Date): Json {
  const cur = isObj(current) ? current : {};
  return { ...cur, conditions: mergeConditions(cur.conditions, report.conditions, now) };
}

/**
 * `addresses` (from the deployer's Service) replaces status.addresses when given: [] removes
 * the field; undefined leaves whatever is there.
 */
export function mergeGatewayStatus(current: unknown, report: GatewayStatusReport, now: Date, addresses?: readonly { readonly type: string; readonly value: string }[]): Json {
  const cur = isObj(current) ? current : {};
  const listeners = asList(cur.listeners);
  const rest = { ...cur };
  delete rest.addresses;
  const base = addresses === undefined ? cur : addresses.length ? { ...rest, addresses: addresses.map((a) => ({ ...a })) } : rest;
  const out: Json = { ...base, conditions: mergeConditions(cur.conditions, report.conditions, now), listeners: mergeListeners(listeners, report.listeners, now) };
  // Written only once some ListenerSet is attached: a Gateway without any keeps the status it had.
  const attached = report.attachedListenerSets ?? 0;
  if (attached > 0 || cur.attachedListenerSets !== undefined) out.attachedListenerSets = attached;
  return out;
}

function mergeListeners(current: Json[], desired: readonly ListenerStatusReport[], now: Date): Json[] {
  return desired.map((l) => ({
    name: l.name,
    supportedKinds: l.supportedKinds.map((k) => ({ group: k.group, kind: k.kind })),
    attachedRoutes: l.attachedRoutes,
    conditions: mergeConditions(current.find((x) => x.name === l.name)?.conditions, l.conditions, now),
  }));
}

/** A ListenerSet's status: its conditions and its listeners', as a Gateway's. */
export function mergeListenerSetStatus(current: unknown, report: ListenerSetStatusReport, now: Date): Json {
  const cur = isObj(current) ? current : {};
  return { ...cur, conditions: mergeConditions(cur.conditions, report.conditions, now), listeners: mergeListeners(asList(cur.listeners), report.listeners, now) };
}

/** A parentRef with the defaults the API applies, for comparison. */
function parentKey(p: Partial<ParentReference> | Json, routeNamespace: string): string {
  const r = p as Partial<ParentReference>;
  return JSON.stringify([r.group ?? 'gateway.networking.k8s.io', r.kind ?? 'Gateway', r.namespace ?? routeNamespace, r.name ?? '', r.sectionName ?? '', r.port ?? 0]);
}

function ancestorKey(a: Partial<PolicyAncestorReference> | Json, policyNamespace: string): string {
  const r = a as Partial<PolicyAncestorReference>;
  return JSON.stringify([r.group ?? 'gateway.networking.k8s.io', r.kind ?? 'Gateway', r.namespace ?? policyNamespace, r.name ?? '', r.sectionName ?? '']);
}

/**
 * Replaces this controller's entries of `existing` with `ours` (matched by key), in place;
 * appends new ones, drops ours that are gone, keeps everything else, at most MAX_ENTRIES
 * (other controllers' entries are never dropped to make room for ours).
 */
function mergeEntries(existing: Json[], ours: Json[], controllerName: string, key: (e: Json) => string): Json[] {
  const byKey = new Map(ours.map((e) => [key(e), e]));
  const out: Json[] = [];
  for (const e of existing) {
    if (e.controllerName !== controllerName) out.push(e);
    else {
      const k = key(e);
      const mine = byKey.get(k);
      if (mine) {
        out.push(mine);
        byKey.delete(k);
      }
    }
  }
  for (const e of byKey.values()) out.push(e);
  if (out.length <= MAX_ENTRIES) return out;
  let excess = out.length - MAX_ENTRIES;
  // Drop our own newest entries first.
  for (let i = out.length - 1; i >= 0 && excess > 0; i--) {
    if (out[i]!.controllerName === controllerName) {
      out.splice(i, 1);
      excess--;
    }
  }
  return out;
}

export function mergeHTTPRouteStatus(current: unknown, report: HTTPRouteStatusReport, controllerName: string, now: Date): Json {
  const cur = isObj(current) ? current : {};
  const existing = asList(cur.parents);
  const key = (e: Json) => parentKey(isObj(e.parentRef) ? e.parentRef : {}, report.namespace);
  const ours = report.parents.map((p) => {
    const prev = existing.find((e) => e.controllerName === p.controllerName && key(e) === parentKey(p.parentRef, report.namespace));
    return { parentRef: { ...p.parentRef }, controllerName: p.controllerName, conditions: mergeConditions(prev?.conditions, p.conditions, now) };
  });
  const parents = mergeEntries(existing, ours, controllerName, key);
  // Nothing of ours and nothing before: leave the route alone (it is another controller's).
  if (!parents.length && cur.parents === undefined) return cur;
  return { ...cur, parents };
}

export function mergeGatewayPolicyStatus(current: unknown, report: GatewayPolicyStatusReport, controllerName: string, now: Date): Json {
  const cur = isObj(current) ? current : {};
  const existing = asList(cur.ancestors);
  const key = (e: Json) => ancestorKey(isObj(e.ancestorRef) ? e.ancestorRef : {}, report.namespace);
  const ours = report.ancestors.map((a) => {
    const prev = existing.find((e) => e.controllerName === a.controllerName && key(e) === ancestorKey(a.ancestorRef, report.namespace));
    return { ancestorRef: { ...a.ancestorRef }, controllerName: a.controllerName, conditions: mergeConditions(prev?.conditions, a.conditions, now) };
  });
  const ancestors = mergeEntries(existing, ours, controllerName, key);
  if (!ancestors.length && cur.ancestors === undefined) return cur;
  return { ...cur, ancestors };
}

/** Deep equality ignoring key order and keys whose value is undefined. */
export function sameStatus(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  // An absent status and an empty one are the same: nothing to write.
  if (a === undefined || a === null) return isObj(b) && Object.values(b).every((v) => v === undefined);
  if (b === undefined || b === null) return isObj(a) && Object.values(a).every((v) => v === undefined);
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
    return a.every((x, i) => sameStatus(x, b[i]));
  }
  if (isObj(a) && isObj(b)) {
    const ka = Object.keys(a).filter((k) => a[k] !== undefined);
    const kb = Object.keys(b).filter((k) => b[k] !== undefined);
    if (ka.length !== kb.length) return false;
    return ka.every((k) => sameStatus(a[k], b[k]));
  }
  if (a instanceof Date && typeof b === 'string') return rfc3339(a) === b;
  if (b instanceof Date && typeof a === 'string') return rfc3339(b) === a;
  return false;
}
