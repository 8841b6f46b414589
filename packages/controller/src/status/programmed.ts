// Gateway Programmed: the one place it is decided after translation. Translation can only say
// Pending (nothing it reads proves a proxy applied anything) or Invalid (the Gateway or the
// listener is not accepted); where it says Pending, the status writer puts the verdict drawn
// from the proxies (proxies.ts: their pods and the snapshot stream's ACKs and NACKs) instead,
// on the Gateway and on each listener that translation left Pending.
//
// The verdict: a proxy pod of the Gateway is ready (a proxy reports ready on :15021 only once
// it applied a snapshot), so the Gateway serves. Pending before that; False with NoResources
// when a pod cannot start or the proxies cannot be deployed; False with AddressNotUsable or
// AddressNotAssigned while an address of spec.addresses is not the Service's. A newer snapshot on its way to the
// proxies keeps the Gateway programmed (they serve the one before meanwhile); the message says
// how many connected proxies applied the newest version. A snapshot a proxy refused (a NACK)
// is Invalid with the proxy's reason until every connected proxy ACKed another version; the
// NACK reaches the status without a new translation.
//
// A proxy connected to another controller replica is not seen here; its readiness still
// counts (a ready proxy serves some snapshot), its version does not.
import type { V1Pod } from '@kubernetes/client-node';
import type { DesiredCondition, GatewayStatusReport, ListenerSetStatusReport, ListenerStatusReport, StatusReport } from '../translate/types.js';

/** What a Gateway's proxies serve and report Programmed on: a Gateway, or a ListenerSet of it. */
type ServedReport = { readonly conditions: readonly DesiredCondition[]; readonly listeners: readonly ListenerStatusReport[] };
import type { ProgrammedInput, ProxiesView, Rejection } from './proxies.js';

export type { ConnectedProxy, ProgrammedInput } from './proxies.js';

export type ProgrammedReason = 'Programmed' | 'Pending' | 'NoResources' | 'AddressNotUsable' | 'AddressNotAssigned';

export interface ProgrammedVerdict {
  readonly status: boolean;
  readonly reason: ProgrammedReason;
  readonly message: string;
}

/** Waiting reasons of a container that will not start without someone changing something. */
const STUCK = new Set(['ErrImagePull', 'ImagePullBackOff', 'InvalidImageName', 'ErrImageNeverPull', 'CrashLoopBackOff', 'CreateContainerConfigError', 'CreateContainerError', 'RunContainerError']);
const IMAGE = new Set(['ErrImagePull', 'ImagePullBackOff', 'InvalidImageName', 'ErrImageNeverPull']);
/** Kubelet messages can be long (a registry's whole answer); a condition message stays readable. */
const MAX_DETAIL = 512;

function podReady(p: V1Pod): boolean {
  return p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
}

/** Why a pod's proxy container cannot start, when that is so. */
function stuck(p: V1Pod): string | undefined {
  for (const c of p.status?.containerStatuses ?? []) {
    const w = c.state?.waiting;
    if (!w?.reason || !STUCK.has(w.reason)) continue;
    const detail = (w.message ?? '').slice(0, MAX_DETAIL);
    const what = IMAGE.has(w.reason) ? `image "${c.image}" cannot be pulled (${w.reason})` : `container ${c.name} cannot start (${w.reason})`;
    return `proxy pod ${p.metadata?.name ?? '?'} cannot start: ${what}${detail ? `: ${detail}` : ''}`;
  }
  return undefined;
}

export function programmed(i: ProgrammedInput): ProgrammedVerdict {
  if (i.blocked !== undefined) return { status: false, reason: 'NoResources', message: i.blocked };
  // The Gateway is not reached where it asked to be, however many proxies serve.
  if (i.address) return { status: false, reason: i.address.reason, message: i.address.message };
  if (i.replicas === 0) return { status: false, reason: 'NoResources', message: `Deployment ${i.deployment} runs no proxy (replicas 0): ${i.replicasHint ?? 'set tollgate.dev/replicas above 0'}` };
  const live = i.pods.filter((p) => !p.metadata?.deletionTimestamp);
  // A pod that cannot start is what the user must fix; it also holds a rollout back even
  // while the previous pods still serve.
  const why = live.map(stuck).find((m) => m !== undefined);
  if (why) return { status: false, reason: 'NoResources', message: why };
  const ready = live.filter(podReady);
  // Pending only until a proxy serves: a proxy reports ready only once it applied a snapshot.
  if (ready.length === 0) return { status: false, reason: 'Pending', message: `0 of ${i.replicas} proxy pods of Deployment ${i.deployment} ready` };
  if (i.version === undefined) return { status: false, reason: 'Pending', message: 'no configuration snapshot for the Gateway yet' };
  const pods = ready.length < i.replicas ? `${ready.length} of ${i.replicas} proxy pods ready` : `${ready.length} proxy pod${ready.length === 1 ? '' : 's'} ready`;
  // Once served, the Gateway stays programmed while a newer snapshot reaches its proxies (or
  // a pod is replaced): the proxies keep serving the version before, so False here would read
  // as an outage. The message says how far the newest version got; a refused one is Invalid
  // (the stream's NACK, put on the condition before this verdict, which leaves Invalid alone).
  const behind = i.proxies.filter((p) => p.ackedVersion !== i.version);
  if (behind.length === 0) return { status: true, reason: 'Programmed', message: `${pods}; snapshot ${i.version} applied` };
  const p = behind[0]!;
  const have = i.proxies.length - behind.length;
  return {
    status: true,
    reason: 'Programmed',
    message: `${pods}; snapshot ${i.version} reaching the proxies: ${have} of ${i.proxies.length} applied it (${p.pod} serves ${p.ackedVersion ?? 'none yet'})`,
  };
}

function apply(c: DesiredCondition, v: ProgrammedVerdict): DesiredCondition {
  if (c.type !== 'Programmed' || c.status !== 'False' || c.reason !== 'Pending') return c;
  return { ...c, status: v.status ? 'True' : 'False', reason: v.reason, message: v.message };
}

/** The verdict on the Gateway and on each listener translation left Pending; an Invalid stays. */
export function withProgrammed<T extends ServedReport>(g: T, v: ProgrammedVerdict | undefined): T {
  if (!v) return g;
  return {
    ...g,
    conditions: g.conditions.map((c) => apply(c, v)),
    listeners: g.listeners.map((l) => ({ ...l, conditions: l.conditions.map((c) => apply(c, v)) })),
  };
}

/** Programmed False (Invalid, the proxy's reason) on a Gateway whose snapshot a proxy refused. */
function withRejection<T extends ServedReport>(g: T, r: Rejection): T {
  const message = `proxy ${r.pod} refused snapshot ${r.version}: ${r.error}`;
  return { ...g, conditions: g.conditions.map((c) => (c.type === 'Programmed' ? { ...c, status: 'False', reason: 'Invalid', message } : c)) };
}

/** The report with every rejected Gateway's Programmed False (Invalid); the same report when none is. */
export function withRejections(status: StatusReport, rejection: (gateway: string) => Rejection | undefined): StatusReport {
  let gateways: Map<string, GatewayStatusReport> | null = null;
  for (const [key, g] of status.gateways) {
    const r = rejection(key);
    if (!r) continue;
    gateways ??= new Map(status.gateways);
    gateways.set(key, withRejection(g, r));
  }
  return gateways ? { ...status, gateways } : status;
}

/** A Gateway's desired status with Programmed as its proxies show it: a refusal first, then the verdict on what is still Pending. */
export function gatewayProgrammed(g: GatewayStatusReport, proxies: ProxiesView): GatewayStatusReport {
  return servedBy(g, g.namespace, g.name, proxies);
}

/** A ListenerSet's desired status with Programmed as the proxies of its Gateway show it (they serve its listeners). */
export function listenerSetProgrammed(ls: ListenerSetStatusReport, proxies: ProxiesView): ListenerSetStatusReport {
  const slash = ls.gateway.indexOf('/');
  return servedBy(ls, ls.gateway.slice(0, slash), ls.gateway.slice(slash + 1), proxies);
}

function servedBy<T extends ServedReport>(report: T, namespace: string, name: string, proxies: ProxiesView): T {
  const r = proxies.rejection(`${namespace}/${name}`);
  const input = proxies.programmedInput(namespace, name);
  return withProgrammed(r ? withRejection(report, r) : report, input && programmed(input));
}
