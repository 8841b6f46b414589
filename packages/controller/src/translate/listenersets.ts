// ListenerSets: listeners another object (possibly in another namespace) adds to a Gateway, when
// the Gateway's spec.allowedListeners lets it. Each accepted set's listeners join the Gateway's
// after its own, in ListenerSet precedence order (oldest first, then <namespace>/<name>); a
// listener that conflicts with one before it is refused. Every listener keeps its origin: the
// ListenerSet reports its status, and routes reach it through a parentRef of kind ListenerSet.
import { acceptedAndProgrammed, fail, ok, type Verdict } from './conditions.js';
import type { Context } from './context.js';
import { generationOf } from './keys.js';
import { selects } from './label-selector.js';
import { translateListenerSetListeners, type ListenerOrigin, type ListenerState } from './listeners.js';
import type { Gateway, ListenerSet } from '../types/gateway-api.js';
import type { ListenerSetStatusReport, ListenerStatusReport } from './types.js';

/**
 * At most this many listeners join one Gateway from its ListenerSets (a set is all or nothing);
 * past it, a ListenerSet is refused (Accepted False, Invalid) and its listeners are not served.
 */
export const MAX_LISTENERSET_LISTENERS_PER_GATEWAY = 1024;

export interface ListenerSetState {
  readonly key: string;
  readonly listenerSet: ListenerSet;
  /** Accepted: True when allowed, the parent accepted, and at least one listener valid. */
  readonly accepted: Verdict;
  /** Its listeners as they joined the Gateway (empty when the set is not allowed or the Gateway not accepted). */
  readonly listeners: readonly ListenerState[];
}

/** Whether the Gateway's spec.allowedListeners lets a ListenerSet of `namespace` attach (default: none may). */
function allowedBy(gateway: Gateway, namespace: string, ctx: Context): Verdict {
  const rule = gateway.spec.allowedListeners?.namespaces;
  const from = rule?.from ?? 'None';
  const gw = `${gateway.metadata.namespace}/${gateway.metadata.name}`;
  switch (from) {
    case 'All':
      return ok('Accepted', 'allowed');
    case 'Same':
      return namespace === gateway.metadata.namespace ? ok('Accepted', 'allowed') : fail('NotAllowed', `Gateway ${gw} allows ListenerSets of its own namespace only (spec.allowedListeners.namespaces.from Same)`);
    case 'Selector':
      return rule?.selector && selects(rule.selector, ctx.namespaceLabels(namespace))
        ? ok('Accepted', 'allowed')
        : fail('NotAllowed', `namespace ${namespace} is not selected by spec.allowedListeners.namespaces.selector of Gateway ${gw}`);
    default:
      return fail('NotAllowed', `Gateway ${gw} allows no ListenerSets: set its spec.allowedListeners.namespaces.from to Same, Selector or All`);
  }
}

/** A listener that can serve: accepted, and when HTTPS with a certificate that resolved. */
function valid(l: ListenerState): boolean {
  return l.accepted.ok && l.certificates?.length !== 0;
}

/**
 * The ListenerSets of one Gateway, in precedence order, with their listeners merged after
 * `own` (the Gateway's): returns every set's state and the merged listener list.
 */
export function attachListenerSets(gateway: Gateway, gatewayAccepted: Verdict, own: readonly ListenerState[], ctx: Context): { sets: ListenerSetState[]; listeners: ListenerState[] } {
  const gwKey = `${gateway.metadata.namespace}/${gateway.metadata.name}`;
  const merged = [...own];
  const sets: ListenerSetState[] = [];
  let added = 0;
  for (const { key, listenerSet } of ctx.listenerSetsOf(gwKey)) {
    const allowed = allowedBy(gateway, listenerSet.metadata.namespace ?? '', ctx);
    if (!allowed.ok) {
      sets.push({ key, listenerSet, accepted: allowed, listeners: [] });
      continue;
    }
    if (!gatewayAccepted.ok) {
      sets.push({ key, listenerSet, accepted: fail('ParentNotAccepted', `Gateway ${gwKey} is not accepted: ${gatewayAccepted.message}`), listeners: [] });
      continue;
    }
    if (added + listenerSet.spec.listeners.length > MAX_LISTENERSET_LISTENERS_PER_GATEWAY) {
      const message = `Gateway ${gwKey} has ${added} listeners from ListenerSets before this one; at most ${MAX_LISTENERSET_LISTENERS_PER_GATEWAY} may join one Gateway`;
      sets.push({ key, listenerSet, accepted: fail('Invalid', message), listeners: [] });
      continue;
    }
    const origin: ListenerOrigin & { kind: 'ListenerSet' } = { kind: 'ListenerSet', key, listenerSet };
    const listeners = translateListenerSetListeners(gateway, origin, merged, ctx);
    added += listeners.length;
    merged.push(...listeners);
    const bad = listeners.filter((l) => !valid(l));
    const detail = bad.map((l) => `${l.spec.name} (${l.accepted.ok ? l.resolvedRefs.reason : l.accepted.reason})`).join(', ');
    const accepted =
      bad.length === listeners.length
        ? fail('ListenersNotValid', `no listener is valid: ${detail}`)
        : bad.length
        ? ok('ListenersNotValid', `listeners not valid: ${detail}`)
        : ok('Accepted', `attached to Gateway ${gwKey}`);
    sets.push({ key, listenerSet, accepted, listeners });
  }
  return { sets, listeners: merged };
}

/** The ListenerSet's status; `listenerStatus` renders each listener as the Gateway's are. */
export function listenerSetStatus(gatewayKey: string, s: ListenerSetState, listenerStatus: (l: ListenerState, gen: number) => ListenerStatusReport): ListenerSetStatusReport {
  const meta = s.listenerSet.metadata;
  const gen = generationOf(meta);
  const listeners = s.listeners.map((l) => listenerStatus(l, gen));
  return { namespace: meta.namespace ?? '', name: meta.name, generation: gen, gateway: gatewayKey, conditions: acceptedAndProgrammed(s.accepted, gen), listeners };
}
