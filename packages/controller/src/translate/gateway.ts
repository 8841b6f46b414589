// Gateway: the Gateways of our accepted classes, whether each is accepted, and its listeners.
import { acceptedAndProgrammed, condition, fail, ok, type Verdict } from './conditions.js';
import type { Context } from './context.js';
import type { ClassVerdict } from './gatewayclass.js';
import { classBackendHosts, gatewayParameters } from '../proxy-settings/parameters.js';
import { requestedAddresses } from '../proxy-settings/requested-addresses.js';
import { generationOf } from './keys.js';
import { translateListeners, type ListenerState } from './listeners.js';
import { insecureFrontendMode } from './frontend-tls.js';
import { backendClientCertificate } from './tls.js';
import type { Gateway } from '../types/gateway-api.js';
import type { GatewayStatusReport, ListenerSetStatusReport, ListenerStatusReport } from './types.js';
import { attachListenerSets, listenerSetStatus, type ListenerSetState } from './listenersets.js';

export interface GatewayState {
  readonly key: string;
  readonly gateway: Gateway;
  readonly accepted: Verdict;
  /** The Gateway's own listeners in spec order, then its accepted ListenerSets' in precedence order. */
  readonly listeners: readonly ListenerState[];
  /** The ListenerSets naming this Gateway, in precedence order, allowed or not. */
  readonly listenerSets: readonly ListenerSetState[];
  /** The hosts Backend resources may name here (its class's backendHosts); null: every host. */
  readonly backendHosts: readonly string[] | null;
  /** spec.tls.backend.clientCertificateRef resolved (null: the Gateway names none). */
  readonly backendClientCertificate: ReturnType<typeof backendClientCertificate>;
}

function acceptance(gateway: Gateway, gc: ClassVerdict, listeners: readonly ListenerState[], ctx: Context): Verdict {
  // The class's parameters are the Gateway's too: a bad one is the Gateway's InvalidParameters.
  if (!gc.accepted.ok) return fail(gc.accepted.reason === 'InvalidParameters' ? 'InvalidParameters' : 'Invalid', `GatewayClass ${gc.name} is not accepted: ${gc.accepted.message}`);
  // Whether the cluster can give a requested address is the deployer's to find out (Programmed).
  const addresses = requestedAddresses(gateway);
  if (!addresses.ok) return fail('UnsupportedAddress', addresses.message);
  const params = gatewayParameters(gateway, gc.gatewayClass, ctx.configMap, ctx.parameters);
  if (!params.ok) return fail('InvalidParameters', params.message);
  const bad = listeners.filter((l) => !l.accepted.ok);
  if (!bad.length) return ok('Accepted', 'accepted');
  const detail = bad.map((l) => `${l.spec.name} (${l.accepted.reason})`).join(', ');
  const good = listeners.filter((l) => l.accepted.ok).map((l) => l.spec.name);
  if (!good.length) return fail('ListenersNotValid', `no listener can be accepted: ${detail}`);
  return ok('ListenersNotValid', `listeners not accepted: ${detail}; accepted: ${good.join(', ')}`);
}

/** Gateways whose class is ours, sorted by key. */
export function translateGateways(ctx: Context, classes: ReadonlyMap<string, ClassVerdict>): Map<string, GatewayState> {
  const out = new Map<string, GatewayState>();
  for (const [key, gateway] of ctx.gateways) {
    const gc = classes.get(gateway.spec.gatewayClassName);
    if (!gc) continue;
    const own = translateListeners(gateway, ctx);
    const accepted = acceptance(gateway, gc, own, ctx);
    const { sets, listeners } = attachListenerSets(gateway, accepted, own, ctx);
    out.set(key, { key, gateway, accepted, listeners, listenerSets: sets, backendHosts: classBackendHosts(gc.gatewayClass, ctx.configMap), backendClientCertificate: backendClientCertificate(gateway, ctx) });
  }
  return out;
}

/**
 * How many routes are attached (Accepted) through each listener: counted from the routes'
 * attachments, apart from the listeners, so that a Gateway's state outlives a change of its routes.
 */
export type AttachedRoutes = ReadonlyMap<ListenerState, number>;

type Attaching = { readonly attachments: readonly { readonly listener: ListenerState }[] };

/**
 * `counts` with each route of `routes` counted once more on each listener it is attached
 * through, and each of `gone` (routes counted in `counts`) once less; a listener counted to
 * none is left out, as one no route was ever counted on.
 */
export function countAttached(counts: AttachedRoutes, routes: Iterable<Attaching>, gone: Iterable<Attaching> = []): Map<ListenerState, number> {
  const out = new Map(counts);
  for (const r of gone) {
    for (const a of r.attachments) {
      const n = (out.get(a.listener) ?? 0) - 1;
      if (n > 0) out.set(a.listener, n);
      else out.delete(a.listener);
    }
  }
  for (const r of routes) for (const a of r.attachments) out.set(a.listener, (out.get(a.listener) ?? 0) + 1);
  return out;
}

/** A listener takes routes when both it and its Gateway are accepted. */
export function listenerLive(g: GatewayState, l: ListenerState): boolean {
  return g.accepted.ok && l.accepted.ok;
}

export function listenerStatus(g: GatewayState, l: ListenerState, gen: number, attached: AttachedRoutes): ListenerStatusReport {
  const live = listenerLive(g, l);
  return {
    name: l.spec.name,
    supportedKinds: l.supportedKinds,
    attachedRoutes: attached.get(l) ?? 0,
    conditions: [
      condition('Accepted', l.accepted.ok, l.accepted.reason, l.accepted.message, gen),
      condition('Conflicted', !l.conflicted.ok, l.conflicted.reason, l.conflicted.message, gen),
      live && l.certificates?.length === 0
        ? condition('Programmed', false, 'Invalid', `not programmed: no usable certificate: ${l.resolvedRefs.message}`, gen)
        : live
        ? condition('Programmed', false, 'Pending', 'waiting for a proxy of the Gateway to apply its configuration', gen)
        : condition('Programmed', false, l.conflicted.ok ? 'Invalid' : l.conflicted.reason, g.accepted.ok ? `not programmed: ${l.accepted.message}` : 'not programmed: the Gateway is not accepted', gen),
      condition('ResolvedRefs', l.resolvedRefs.ok, l.resolvedRefs.reason, l.resolvedRefs.message, gen),
    ],
  };
}

/** The Gateway's ResolvedRefs: its own references (the backend client certificate), then a summary of its listeners'. */
function gatewayResolvedRefs(own: Verdict, listeners: readonly ListenerState[], gen: number) {
  if (!own.ok) return condition('ResolvedRefs', false, own.reason, own.message, gen);
  const bad = listeners.filter((l) => !l.resolvedRefs.ok).map((l) => l.spec.name);
  if (bad.length) return condition('ResolvedRefs', false, 'ListenersNotResolved', `listeners with unresolved references: ${bad.join(', ')}`, gen);
  return condition('ResolvedRefs', true, own.reason, own.message, gen);
}

function insecure(gateway: Gateway, gen: number) {
  const message = insecureFrontendMode(gateway);
  return message === null ? [] : [condition('InsecureFrontendValidationMode', true, 'ConfigurationChanged', message, gen)];
}

export function gatewayStatus(g: GatewayState, attached: AttachedRoutes): GatewayStatusReport {
  const meta = g.gateway.metadata;
  const gen = generationOf(meta);
  return {
    namespace: meta.namespace ?? '',
    name: meta.name,
    generation: gen,
    conditions: [
      ...acceptedAndProgrammed(g.accepted, gen, 'Invalid'),
      // Only with a backend client certificate: the references outside the listeners are that one.
      ...(g.backendClientCertificate ? [gatewayResolvedRefs(g.backendClientCertificate.verdict, g.listeners, gen)] : []),
      // Present while AllowInsecureFallback is set anywhere (Gateway API: removed once it is not).
      ...insecure(g.gateway, gen),
    ],
    listeners: g.listeners.filter((l) => l.origin.kind === 'Gateway').map((l) => listenerStatus(g, l, gen, attached)),
    // Only for a Gateway some ListenerSet names: the others' reports stay as they were.
    ...(g.listenerSets.length ? listenerSetSummary(g) : {}),
  };
}

function listenerSetSummary(g: GatewayState): Pick<GatewayStatusReport, 'attachedListenerSets' | 'listenerSetPorts'> {
  return {
    attachedListenerSets: g.listenerSets.filter((s) => s.accepted.ok).length,
    listenerSetPorts: g.listeners.filter((l) => l.origin.kind === 'ListenerSet' && l.accepted.ok).map((l) => ({ port: l.spec.port, protocol: l.spec.protocol })),
  };
}

/** The status of the ListenerSets naming this Gateway. */
export function listenerSetStatuses(g: GatewayState, attached: AttachedRoutes): ListenerSetStatusReport[] {
  return g.listenerSets.map((s) => listenerSetStatus(g.key, s, (l, gen) => listenerStatus(g, l, gen, attached)));
}
