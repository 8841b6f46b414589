// One ProxySnapshot per accepted Gateway: a bind per port, a listener per accepted listener,
// the attached routes in Gateway API precedence order with their policies.
import {
  isDefaultLimits,
  priorityOf,
  withVersion,
  type BackendIR,
  type BindIR,
  type CertificateIR,
  type EvaluationLimits,
  type FailoverPolicy,
  type FilterIR,
  type ListenerIR,
  type PolicyIR,
  type ProxySnapshot,
  type RouteIR,
  type TlsBindIR,
  type TlsListenerIR,
  type TlsRouteIR,
} from '@tollgate/api';
import { tlsRouteIR, type TranslatedTlsRoute } from './tlsroute.js';
import { listenerLive, type GatewayState } from './gateway.js';
import { targetKey, type AppliedFailover, type AppliedPolicies } from './gatewaypolicy.js';
import type { TranslatedRoute, TranslatedRule } from './httproute.js';
import { tlsListenerMode, type ListenerState } from './listeners.js';
import { hostAllowed } from './backend.js';
import type { EndpointsTables } from './service-endpoints.js';
import { commonEnds, sameObjects } from './same-objects.js';
import { firstIndex } from '@tollgate/api';

/** Address the proxy binds every port on; the proxy Service in front of it picks the exposure. */
const BIND_ADDRESS = '0.0.0.0';

// The IR of a rule on a listener, kept while the rule, its hostnames there, its policy and its
// failover are the same objects (see the rules cache in ./httproute.ts).
interface CachedRoute {
  readonly ir: RouteIR;
  readonly failover: FailoverPolicy | undefined;
}
const routeCache = new WeakMap<TranslatedRule, Map<string, CachedRoute>>();

// The cache key of a hostnames list, kept with the list (attachments keep their lists while
// the route's attachment is unchanged): not joined again for every route of every translation.
const hostKeys = new WeakMap<readonly string[], string>();

/**
 * The rule's backends with the priorities its failover gives their backendRefs (the backends
 * are the backendRefs, in order); a priority only when not 0, so rules without failover keep
 * their IR as it was.
 */
function prioritized(tr: TranslatedRoute, rule: TranslatedRule, failover: FailoverPolicy | undefined): readonly BackendIR[] {
  if (!failover) return rule.backends;
  const ns = tr.route.metadata.namespace ?? '';
  const refs = tr.route.spec.rules?.[rule.index]?.backendRefs ?? [];
  return rule.backends.map((b, i) => {
    const ref = refs[i];
    const priority = ref ? priorityOf(failover, ns, ref) : 0;
    return priority ? { ...b, priority } : b;
  });
}

function routeIR(tr: TranslatedRoute, rule: TranslatedRule, hostnames: readonly string[], policy: PolicyIR | null, failover: FailoverPolicy | undefined): RouteIR {
  let key = hostKeys.get(hostnames);
  if (key === undefined) hostKeys.set(hostnames, (key = hostnames.join(' ')));
  let byHosts = routeCache.get(rule);
  const hit = byHosts?.get(key);
  if (hit && hit.ir.policy === policy && hit.failover === failover) return hit.ir;
  const ns = tr.route.metadata.namespace ?? '';
  const name = tr.route.metadata.name;
  const ir: RouteIR = {
    // A GRPCRoute may share an HTTPRoute's namespace and name: its routes are named apart, as the
    // counters of their policies' limits, their metrics and traces are kept by route name.
    name: `${ns}/${name}/${tr.kind === 'GRPCRoute' ? 'grpc-rule' : 'rule'}/${rule.index}`,
    origin: { kind: tr.kind, namespace: ns, name, rule: rule.index },
    hostnames: [...hostnames],
    matches: rule.matches,
    filters: rule.filters,
    policy,
    backends: prioritized(tr, rule, failover),
    timeouts: rule.timeouts,
    ...(rule.retry ? { retry: rule.retry } : {}),
  };
  if (!byHosts) routeCache.set(rule, (byHosts = new Map<string, CachedRoute>()));
  byHosts.set(key, { ir, failover });
  return ir;
}

// Policy target keys of a route and of its named rules, kept with the objects: a key made once
// is hashed once, not built and hashed again for every route of every translation.
const routeTargetKeys = new WeakMap<object, string>();

function keyFor(owner: object, make: () => string): string {
  let key = routeTargetKeys.get(owner);
  if (key === undefined) routeTargetKeys.set(owner, (key = make()));
  return key;
}

function routeIRs(tr: TranslatedRoute, hostnames: readonly string[], applied: AppliedPolicies, failover: AppliedFailover): RouteIR[] {
  const ns = tr.route.metadata.namespace ?? '';
  const name = tr.route.metadata.name;
  const wholeKey = keyFor(tr.route, () => targetKey(tr.kind, ns, name, null));
  const whole = applied.get(wholeKey) ?? null;
  return tr.rules.map((rule) => {
    const sectionKey = rule.sectionName !== null ? keyFor(rule, () => targetKey(tr.kind, ns, name, rule.sectionName)) : null;
    const section = sectionKey !== null ? applied.get(sectionKey) : undefined;
    // A policy on the rule takes precedence over one on the whole route, for its failover too.
    const onSection = sectionKey !== null && (section !== undefined || failover.has(sectionKey));
    return routeIR(tr, rule, hostnames, section ?? whole, onSection ? failover.get(sectionKey) : failover.get(wholeKey));
  });
}

// The policies of the last snapshot build, by target, and its number. A route's IRs are made
// from the route object, its rules and attachments (all three fixed while its SentRoutes
// object is the same, ./sent-routes.ts) and from the policy and failover applied to the route
// and to each of its rules. So IRs made or confirmed by the last build still hold in this one
// when those entries of `applied` and `failover` are the same objects as in the last build's:
// the key of the reuse is complete. IRs last confirmed by an earlier build are made again
// (what changed between that build and the last one is not known).
// A build that changes no target's policy nor failover keeps the number: what the last one
// confirmed holds in it as well.
let lastBuild: {
  readonly number: number;
  readonly applied: AppliedPolicies;
  readonly failover: AppliedFailover;
  /** The routes it placed and the lists it placed them in, by listener. */
  readonly routes: readonly TranslatedRoute[];
  readonly byListener: ReadonlyMap<ListenerState, readonly RouteIR[]>;
  /** Per listener, for each IR of its list, the position in `routes` of the route it is of (ascending). */
  readonly owners: ReadonlyMap<ListenerState, readonly number[]>;
} = { number: 0, applied: new Map(), failover: new Map(), routes: [], byListener: new Map(), owners: new Map() };

/** The targets whose policy or failover is not what the last build had. */
function changedTargets(applied: AppliedPolicies, failover: AppliedFailover): Set<string> {
  const out = new Set<string>();
  for (const [now, before] of [
    [applied, lastBuild.applied],
    [failover, lastBuild.failover],
  ] as const) {
    for (const [key, value] of now) if (before.get(key) !== value) out.add(key);
    for (const key of before.keys()) if (!now.has(key)) out.add(key);
  }
  return out;
}

interface Build {
  readonly number: number;
  /** No target's policy nor failover changed since the last build: every IR it confirmed holds. */
  readonly same: boolean;
  /** Whether the route's kept IRs (if any) hold in this build. */
  holds(tr: TranslatedRoute): boolean;
}

function nextBuild(applied: AppliedPolicies, failover: AppliedFailover): Build {
  const changed = changedTargets(applied, failover);
  const previous = lastBuild.number;
  const number = changed.size ? previous + 1 : previous;
  const touched = (tr: TranslatedRoute): boolean => {
    const ns = tr.route.metadata.namespace ?? '';
    const name = tr.route.metadata.name;
    if (changed.has(keyFor(tr.route, () => targetKey(tr.kind, ns, name, null)))) return true;
    return tr.rules.some((rule) => rule.sectionName !== null && changed.has(keyFor(rule, () => targetKey(tr.kind, ns, name, rule.sectionName))));
  };
  return { number, same: changed.size === 0, holds: (tr) => tr.sent.confirmed === previous && (changed.size === 0 || !touched(tr)) };
}

/**
 * The routes' IRs by listener, in precedence order: the last build's lists when the routes are
 * the last build's objects and no policy changed (an endpoint change: the translation kept its
 * routes, ./routes-part.ts), as the walk would make them again.
 */
function placeRoutes(routes: readonly TranslatedRoute[], applied: AppliedPolicies, failover: AppliedFailover): ReadonlyMap<ListenerState, readonly RouteIR[]> {
  const build = nextBuild(applied, failover);
  if (build.same && routes === lastBuild.routes) {
    lastBuild = { ...lastBuild, applied, failover };
    return lastBuild.byListener;
  }
  const placed = (build.same && splicedLists(routes, build, applied, failover)) || walkedLists(routes, build, applied, failover);
  lastBuild = { number: build.number, applied, failover, routes, ...placed };
  return placed.byListener;
}

type Placed = Pick<typeof lastBuild, 'byListener' | 'owners'>;

/** Lists of IRs by listener, and the positions of their routes (Placed), being made. */
class Lists {
  readonly byListener = new Map<ListenerState, RouteIR[]>();
  readonly owners = new Map<ListenerState, number[]>();

  /** The IRs of `routes[from...]`, each route at `from` plus its index, put at the end of their listeners' lists. */
  place(routes: readonly TranslatedRoute[], from: number, build: Build, applied: AppliedPolicies, failover: AppliedFailover): void {
    routes.forEach((tr, k) => {
      const sent = tr.sent;
      if (!build.holds(tr)) sent.lists = [];
      tr.attachments.forEach((a, i) => {
        const irs = (sent.lists[i] ??= routeIRs(tr, a.hostnames, applied, failover));
        let list = this.byListener.get(a.listener);
        let owners = this.owners.get(a.listener);
        if (list === undefined || owners === undefined) {
          this.byListener.set(a.listener, (list = []));
          this.owners.set(a.listener, (owners = []));
        }
        for (const ir of irs) {
          list.push(ir);
          owners.push(from + k);
        }
      });
      sent.confirmed = build.number;
    });
  }
}

function walkedLists(routes: readonly TranslatedRoute[], build: Build, applied: AppliedPolicies, failover: AppliedFailover): Placed {
  const lists = new Lists();
  lists.place(routes, 0, build, applied, failover);
  return lists;
}

/** The most routes that differ from the last build's for its lists to be spliced rather than made by a walk. */
const MAX_SPLICE = 64;

/**
 * The last build's lists with the IRs of the routes that differ from its routes spliced in, for
 * a build in which no policy nor failover changed. The routes of both share a head and a tail
 * of the same translated routes (./httproute.ts keeps them), whose IRs hold (placed by the last
 * build, under the same policies): each list keeps the IRs of those, found by their routes'
 * positions, and takes the IRs of the routes between in their place. A list no route between
 * touches stays the array it was (the listener's snapshot list with it, ./snapshot.ts
 * listenerRoutes). Null for many changes: the walk is as cheap then.
 */
function splicedLists(routes: readonly TranslatedRoute[], build: Build, applied: AppliedPolicies, failover: AppliedFailover): Placed | null {
  const old = lastBuild.routes;
  const { head, tail } = commonEnds(old, routes);
  const oldEnd = old.length - tail;
  if (oldEnd - head + (routes.length - tail - head) > MAX_SPLICE) return null;
  const middle = new Lists();
  middle.place(routes.slice(head, routes.length - tail), head, build, applied, failover);
  const shift = routes.length - old.length;
  const byListener = new Map<ListenerState, readonly RouteIR[]>();
  const owners = new Map<ListenerState, readonly number[]>();
  for (const [listener, list] of lastBuild.byListener) {
    const was = lastBuild.owners.get(listener)!;
    const from = firstAtLeast(was, head);
    const to = firstAtLeast(was, oldEnd);
    const irs = middle.byListener.get(listener) ?? [];
    const tailOwners = shift ? was.slice(to).map((p) => p + shift) : was.slice(to);
    if (!irs.length && from === to) {
      byListener.set(listener, list);
      owners.set(listener, shift && to < was.length ? was.slice(0, to).concat(tailOwners) : was);
      continue;
    }
    const spliced = list.slice(0, from).concat(irs, list.slice(to));
    if (!spliced.length) continue;
    byListener.set(listener, spliced);
    owners.set(listener, was.slice(0, from).concat(middle.owners.get(listener) ?? [], tailOwners));
  }
  for (const [listener, irs] of middle.byListener) {
    if (lastBuild.byListener.has(listener)) continue;
    byListener.set(listener, irs);
    owners.set(listener, middle.owners.get(listener)!);
  }
  return { byListener, owners };
}

/** The index of the first of `sorted` (ascending) not below `x`. */
function firstAtLeast(sorted: readonly number[], x: number): number {
  return firstIndex(sorted.length, (i) => sorted[i]! < x);
}

// A route with a Backend whose host the Gateway's class does not allow, as that Gateway serves
// it: the Backend replaced by an invalid one (its share of requests gets 500), kept by route.
const restricted = new WeakMap<RouteIR, { readonly hosts: readonly string[]; readonly ir: RouteIR }>();

function withAllowedHosts(routes: readonly RouteIR[], hosts: readonly string[] | null): RouteIR[] {
  if (hosts === null) return routes as RouteIR[];
  const deny = (b: BackendIR): BackendIR =>
    b.kind === 'external' && !hostAllowed(b.hostname, hosts) ? { kind: 'invalid', name: b.name, weight: b.weight, reason: 'RefNotPermitted' } : b;
  return routes.map((r) => {
    const touched = r.backends.some((b) => deny(b) !== b) || r.filters.some((f) => f.type === 'RequestMirror' && deny(f.backend) !== f.backend);
    if (!touched) return r;
    const hit = restricted.get(r);
    if (hit && hit.hosts === hosts) return hit.ir;
    const ir: RouteIR = { ...r, filters: r.filters.map((f) => (f.type === 'RequestMirror' ? { ...f, backend: deny(f.backend) } : f)), backends: r.backends.map(deny) };
    restricted.set(r, { hosts, ir });
    return ir;
  });
}

// A route as one Gateway sends it: the Gateway's backend client certificate in the TLS of its
// backends. Kept per route object and certificate object (a certificate is one object per
// Secret object, translate/tls.ts), so unchanged routes stay the same objects.
const withCertificate = new WeakMap<RouteIR, { readonly certificate: CertificateIR; readonly route: RouteIR }>();

function backendWith(b: BackendIR, certificate: CertificateIR): BackendIR {
  return b.kind === 'service' && b.tls ? { ...b, tls: { ...b.tls, clientCertificate: certificate } } : b;
}

function routeWithCertificate(route: RouteIR, certificate: CertificateIR): RouteIR {
  const usesTls = route.backends.some((b) => b.kind === 'service' && b.tls) || route.filters.some((f) => f.type === 'RequestMirror' && f.backend.kind === 'service' && f.backend.tls);
  if (!usesTls) return route;
  const hit = withCertificate.get(route);
  if (hit?.certificate === certificate) return hit.route;
  const filters = route.filters.map((f): FilterIR => (f.type === 'RequestMirror' ? { ...f, backend: backendWith(f.backend, certificate) } : f));
  const out: RouteIR = { ...route, filters, backends: route.backends.map((b) => backendWith(b, certificate)) };
  withCertificate.set(route, { certificate, route: out });
  return out;
}

/** Snapshot listener names are unique per Gateway: a ListenerSet's carry its key (names may repeat across sets). */
function snapshotListenerName(l: ListenerState): string {
  return l.origin.kind === 'Gateway' ? l.spec.name : `${l.origin.key}/${l.spec.name}`.slice(0, MAX_LISTENER_NAME);
}

/** The snapshot's bound on a listener name. */
const MAX_LISTENER_NAME = 253;

/** A TLS listener in the IR; null for a Terminate listener without a usable certificate (left out, like an HTTPS one). */
function tlsListenerIR(l: ListenerState, routes: TlsRouteIR[]): TlsListenerIR | null {
  const hostname = l.spec.hostname ?? null;
  const name = snapshotListenerName(l);
  if (tlsListenerMode(l.spec) === 'Passthrough') return { name, hostname, tls: { mode: 'Passthrough' }, routes };
  if (!l.certificates?.length) return null;
  return { name, hostname, tls: { mode: 'Terminate', certificates: l.certificates }, routes };
}

export function buildSnapshots(
  gateways: ReadonlyMap<string, GatewayState>,
  routes: readonly TranslatedRoute[],
  applied: AppliedPolicies,
  failover: AppliedFailover,
  limits: EvaluationLimits,
  endpoints: EndpointsTables,
  tlsRoutes: readonly TranslatedTlsRoute[] = [],
): Map<string, ProxySnapshot> {
  const tlsByListener = new Map<ListenerState, TlsRouteIR[]>();
  for (const tr of tlsRoutes)
    for (const a of tr.attachments) {
      const list = tlsByListener.get(a.listener) ?? [];
      if (!list.length) tlsByListener.set(a.listener, list);
      list.push(tlsRouteIR(tr, a.hostnames));
    }
  // The proxies check and run the routes under the bounds they were translated with.
  const bounds = isDefaultLimits(limits) ? {} : { limits };
  // Routes are already in precedence order; keep it per listener.
  const byListener = placeRoutes(routes, applied, failover);
  const out = new Map<string, ProxySnapshot>();
  for (const [key, g] of gateways) {
    if (!g.accepted.ok) continue;
    const ns = g.gateway.metadata.namespace ?? '';
    const gwName = g.gateway.metadata.name;
    const gatewayPolicy = applied.get(targetKey('Gateway', ns, gwName, null)) ?? null;
    const clientCertificate = g.backendClientCertificate?.certificate ?? null;
    const ports = new Map<number, ListenerIR[]>();
    const tlsPorts = new Map<number, TlsListenerIR[]>();
    for (const l of g.listeners) {
      if (!listenerLive(g, l)) continue;
      if (l.spec.protocol === 'TLS') {
        const listener = tlsListenerIR(l, tlsByListener.get(l) ?? []);
        if (!listener) continue;
        const list = tlsPorts.get(l.spec.port) ?? [];
        if (!list.length) tlsPorts.set(l.spec.port, list);
        list.push(listener);
        continue;
      }
      const hostname = l.spec.hostname ?? null;
      // A policy's sectionName names a listener of the Gateway's own spec; a ListenerSet's take the Gateway's policy.
      const policy = (l.origin.kind === 'Gateway' ? applied.get(targetKey('Gateway', ns, gwName, l.spec.name)) : undefined) ?? gatewayPolicy;
      const name = snapshotListenerName(l);
      const routes = listenerRoutes(byListener.get(l) ?? [], g.backendHosts, clientCertificate, lastRoutes.get(key)?.get(name));
      let listener: ListenerIR;
      if (l.certificates === null) listener = { name, protocol: 'HTTP', hostname, policy, routes };
      // An HTTPS listener without a usable certificate cannot complete a handshake: left out
      // (its status says Programmed False) rather than served with another listener's.
      else if (!l.certificates.length) continue;
      else {
        const clientValidation = l.clientValidation ? { clientValidation: l.clientValidation } : {};
        listener = { name, protocol: 'HTTPS', hostname, tls: { mode: 'Terminate', certificates: l.certificates, ...clientValidation }, policy, routes };
      }
      const list = ports.get(l.spec.port) ?? [];
      if (!list.length) ports.set(l.spec.port, list);
      list.push(listener);
    }
    const binds: BindIR[] = [...ports]
      .sort(([a], [b]) => a - b)
      .map(([port, listeners]) => ({ port, address: BIND_ADDRESS, listeners }));
    const tlsBinds: TlsBindIR[] = [...tlsPorts].sort(([a], [b]) => a - b).map(([port, listeners]) => ({ port, address: BIND_ADDRESS, listeners }));
    const table = endpoints.table(key, binds.flatMap((b) => b.listeners.map((l) => l.routes)));
    const content = { source: { kind: 'controller', gateway: key }, binds, ...(tlsBinds.length ? { tlsBinds } : {}), ...bounds, ...(table.length ? { endpoints: table } : {}) } as const;
    out.set(key, withVersion(content, lastSnapshots.get(key)));
  }
  endpoints.done();
  lastSnapshots = out;
  lastRoutes = new Map([...out].map(([key, s]) => [key, new Map(s.binds.flatMap((b) => b.listeners.map((l) => [l.name, l.routes] as const)))]));
  return out;
}

// The last translation's snapshots by Gateway key, and each one's route lists by listener
// name: a listener's routes that are the same objects in the same order are sent as the same
// list, and the version of a Gateway's new snapshot is computed from its last one (only the
// routes that changed are hashed, snapshotVersion). Neither changes any output.
let lastSnapshots = new Map<string, ProxySnapshot>();
let lastRoutes = new Map<string, ReadonlyMap<string, readonly RouteIR[]>>();

// A listener's routes as its Gateway sends them, by the list placeRoutes() made: a list it
// hands out again (nothing changed) is sent as the same list, without a walk over its routes.
const sentLists = new WeakMap<readonly RouteIR[], { readonly hosts: readonly string[] | null; readonly certificate: CertificateIR | null; readonly routes: readonly RouteIR[] }>();

function listenerRoutes(placed: readonly RouteIR[], hosts: readonly string[] | null, certificate: CertificateIR | null, before: readonly RouteIR[] | undefined): readonly RouteIR[] {
  const hit = sentLists.get(placed);
  if (hit && hit.hosts === hosts && hit.certificate === certificate) return hit.routes;
  const attached = withAllowedHosts(placed, hosts);
  const routes = sameAsBefore(certificate ? attached.map((r) => routeWithCertificate(r, certificate)) : attached, before);
  sentLists.set(placed, { hosts, certificate, routes });
  return routes;
}

/** `before` when `routes` holds the same objects in the same order (a list is never changed once in a snapshot), else `routes`. */
function sameAsBefore(routes: readonly RouteIR[], before: readonly RouteIR[] | undefined): readonly RouteIR[] {
  return before && sameObjects(routes, before) ? before : routes;
}
