// Gateway listeners: which are accepted, which route kinds they take, which namespaces may
// attach routes, and the conflicts between listeners sharing a port.
import type { CertificateIR, ClientValidationIR } from '@tollgate/api';
import { fail, ok, type Verdict } from './conditions.js';
import type { Context } from './context.js';
import { selects } from './label-selector.js';
import { listenerClientValidation } from './frontend-tls.js';
import { listenerCertificates } from './tls.js';
import { PROXY_RESERVED_PORTS } from '../proxy-settings/ports.js';
import { GATEWAY_GROUP, type Gateway, type Listener, type ListenerSet, type RouteGroupKind } from '../types/gateway-api.js';

/** Route kinds each protocol can carry, among the kinds this controller implements. */
const KINDS_BY_PROTOCOL: Readonly<Record<string, readonly Required<RouteGroupKind>[]>> = {
  HTTP: [
    { group: GATEWAY_GROUP, kind: 'HTTPRoute' },
    { group: GATEWAY_GROUP, kind: 'GRPCRoute' },
  ],
  HTTPS: [
    { group: GATEWAY_GROUP, kind: 'HTTPRoute' },
    { group: GATEWAY_GROUP, kind: 'GRPCRoute' },
  ],
  TLS: [{ group: GATEWAY_GROUP, kind: 'TLSRoute' }],
};

/** Where a listener is declared: the Gateway's spec, or an accepted ListenerSet of the Gateway. */
export type ListenerOrigin = { readonly kind: 'Gateway' } | { readonly kind: 'ListenerSet'; readonly key: string; readonly listenerSet: ListenerSet };

export const GATEWAY_ORIGIN: ListenerOrigin = { kind: 'Gateway' };

/** A listener of protocol TLS passes the client's TLS through unless its tls.mode is Terminate. */
export function tlsListenerMode(l: Listener): 'Passthrough' | 'Terminate' {
  return l.tls?.mode === 'Terminate' ? 'Terminate' : 'Passthrough';
}

export interface ListenerState {
  readonly spec: Listener;
  readonly gateway: Gateway;
  readonly origin: ListenerOrigin;
  /** The namespace of what declares the listener: allowedRoutes `Same` means this one. */
  readonly namespace: string;
  /** Accepted: False when the protocol is unsupported or the listener conflicts with another. */
  readonly accepted: Verdict;
  readonly conflicted: Verdict;
  readonly resolvedRefs: Verdict;
  readonly supportedKinds: readonly Required<RouteGroupKind>[];
  /** HTTPS and TLS Terminate: the certificates that resolved (none: the listener is not programmed). Else null. */
  readonly certificates: readonly CertificateIR[] | null;
  /** HTTPS with spec.tls.frontend validation for its port: the CAs client certificates must chain to. Else null. */
  readonly clientValidation: ClientValidationIR | null;
}

function supportedKinds(l: Listener): { kinds: Required<RouteGroupKind>[]; invalid: string[] } {
  const possible = KINDS_BY_PROTOCOL[l.protocol] ?? [];
  const wanted = l.allowedRoutes?.kinds;
  if (!wanted?.length) return { kinds: [...possible], invalid: [] };
  const kinds: Required<RouteGroupKind>[] = [];
  const invalid: string[] = [];
  for (const k of wanted) {
    const group = k.group ?? GATEWAY_GROUP;
    if (possible.some((p) => p.group === group && p.kind === k.kind)) {
      if (!kinds.some((x) => x.group === group && x.kind === k.kind)) kinds.push({ group, kind: k.kind });
    } else invalid.push(`${group}/${k.kind}`);
  }
  return { kinds, invalid };
}

const NO_CONFLICT: Verdict = ok('NoConflicts', 'no conflicts');

/**
 * The conflict of `l` with the listeners of `others` on its port: listeners sharing a port
 * must share a protocol and differ in hostname. `describe` names a listener in the message.
 */
function conflictWith(l: Listener, others: readonly Listener[], describe: (x: Listener) => string): Verdict {
  const same = others.filter((x) => x !== l && x.port === l.port);
  const protocols = new Set([l.protocol, ...same.map((x) => x.protocol)]);
  if (protocols.size > 1)
    return fail('ProtocolConflict', `port ${l.port} is used with protocols ${[...protocols].sort().join(' and ')}; listeners sharing a port must use one protocol`);
  const host = l.hostname ?? '';
  const clash = same.filter((x) => (x.hostname ?? '') === host).map(describe);
  if (clash.length)
    return fail('HostnameConflict', `listener ${clash.join(', ')} uses port ${l.port} with the same hostname ${host ? `"${host}"` : '(none)'}; give each a distinct hostname or port`);
  return NO_CONFLICT;
}

function listenerState(l: Listener, gateway: Gateway, origin: ListenerOrigin, conflict: Verdict, ctx: Context): ListenerState {
  const owner = origin.kind === 'Gateway' ? gateway : origin.listenerSet;
  const { kinds, invalid } = supportedKinds(l);
  let accepted: Verdict;
  const reserved = PROXY_RESERVED_PORTS.get(l.port);
  // A ListenerSet's listener yields to those before it: the conflict is the reason it is refused.
  if (origin.kind === 'ListenerSet' && !conflict.ok) accepted = fail(conflict.reason, conflict.message);
  else if (reserved) accepted = fail('PortUnavailable', `port ${l.port} is the proxy's own ${reserved} port; choose another port`);
  else if (l.protocol === 'HTTP') accepted = ok('Accepted', 'accepted');
  else if (l.protocol === 'HTTPS' && l.tls?.mode === 'Passthrough')
    accepted = fail('UnsupportedValue', 'tls.mode Passthrough is not supported: the proxy terminates TLS; use mode Terminate with tls.certificateRefs');
  else if (l.protocol === 'HTTPS' || l.protocol === 'TLS') accepted = ok('Accepted', 'accepted');
  else accepted = fail('UnsupportedProtocol', `protocol ${l.protocol} is not supported; use HTTP, HTTPS or TLS`);
  const passthrough = l.protocol === 'TLS' ? tlsListenerMode(l) === 'Passthrough' : l.tls?.mode === 'Passthrough';
  // Client certificate validation (spec.tls.frontend) is of HTTPS listeners: a TLS listener's streams carry no request to check it on.
  const clients = passthrough || l.protocol === 'TLS' ? null : listenerClientValidation(l, gateway, ctx);
  // Served without the check, it would let in the clients it is meant to keep out.
  if (accepted.ok && clients && !clients.ir) accepted = fail('NoValidCACertificate', `no CA certificate of spec.tls.frontend for port ${l.port} is usable: ${clients.verdict.message}`);
  if (accepted.ok && !conflict.ok) accepted = fail(conflict.reason, conflict.message);
  const tls = passthrough ? null : listenerCertificates(l, owner, ctx);
  const resolvedRefs =
    (tls && !tls.verdict.ok ? tls.verdict : null) ??
    (clients && !clients.verdict.ok ? clients.verdict : null) ??
    (invalid.length
      ? fail('InvalidRouteKinds', `allowedRoutes.kinds ${invalid.join(', ')} cannot attach to a ${l.protocol} listener; supported: ${(KINDS_BY_PROTOCOL[l.protocol] ?? []).map((k) => k.kind).join(', ') || 'none'}`)
      : ok('ResolvedRefs', 'all references resolved'));
  const namespace = owner.metadata.namespace ?? '';
  return { spec: l, gateway, origin, namespace, accepted, conflicted: conflict, resolvedRefs, supportedKinds: kinds, certificates: tls?.certificates ?? null, clientValidation: clients?.ir ?? null };
}

/** The Gateway's own listeners: those sharing a port conflict with each other alike. */
export function translateListeners(gateway: Gateway, ctx: Context): ListenerState[] {
  const listeners = gateway.spec.listeners ?? [];
  return listeners.map((l) => listenerState(l, gateway, GATEWAY_ORIGIN, conflictWith(l, listeners, (x) => x.name), ctx));
}

/**
 * The listeners of one accepted ListenerSet, after every listener before it (the Gateway's, then
 * the ListenerSets that come first): one conflicting with an earlier accepted listener is
 * refused; within the set, conflicting listeners are refused alike, as on a Gateway.
 */
export function translateListenerSetListeners(gateway: Gateway, origin: ListenerOrigin & { kind: 'ListenerSet' }, before: readonly ListenerState[], ctx: Context): ListenerState[] {
  const own = origin.listenerSet.spec.listeners;
  const earlier = before.filter((x) => x.conflicted.ok).map((x) => x.spec);
  const name = (x: Listener) => (earlier.includes(x) ? `${x.name} (before this ListenerSet)` : x.name);
  const first = own.map((l) => conflictWith(l, earlier, name));
  // Those refused already do not refuse their siblings.
  const rest = own.filter((_, i) => first[i]!.ok);
  return own.map((l, i) => listenerState(l, gateway, origin, first[i]!.ok ? conflictWith(l, rest, name) : first[i]!, ctx));
}

/** Whether a route in `namespace` may attach to this listener (allowedRoutes.namespaces). */
export function allowsNamespace(state: ListenerState, namespace: string, ctx: Context): boolean {
  const from = state.spec.allowedRoutes?.namespaces?.from ?? 'Same';
  switch (from) {
    case 'All':
      return true;
    case 'Same':
      return namespace === state.namespace;
    case 'Selector': {
      const selector = state.spec.allowedRoutes?.namespaces?.selector;
      return selector ? selects(selector, ctx.namespaceLabels(namespace)) : false;
    }
    default:
      return false;
  }
}

export function allowsKind(state: ListenerState, group: string, kind: string): boolean {
  return state.supportedKinds.some((k) => k.group === group && k.kind === kind);
}
