// HTTPRoute and GRPCRoute: which listeners each route attaches to (parentRefs, allowedRoutes,
// hostnames), its rules in the IR, and its status per parent. A GRPCRoute comes here as the
// HTTPRoute it is equivalent to (grpcroute.ts); `kind` says which it was, for the listeners'
// allowedRoutes, ReferenceGrants and how its backends are spoken to.
import type { V1EndpointSlice } from '@kubernetes/client-node';
import type { BackendIR, EvaluationLimits, FilterIR, Problem } from '@tollgate/api';
import { resolveBackendRef, unusableFilters } from './backendrefs.js';
import { slicePortsKey } from './slice-ports.js';
import { backendState, hostAllowed } from './backend.js';
import { condition, fail, ok, type Verdict } from './conditions.js';
import type { Context } from './context.js';
import { listenerLive, type GatewayState } from './gateway.js';
import type { ListenerSetState } from './listenersets.js';
import { routeHostnamesOn } from './hostnames.js';
import { compareStrings, generationOf } from './keys.js';
import { allowsKind, allowsNamespace, type ListenerState } from './listeners.js';
import { backendFilterProblems, mirrorShare, translateRule, type RuleIR } from './rules.js';
import { GATEWAY_GROUP, type HTTPBackendRef, type HTTPRoute, type HTTPRouteFilter, type ParentReference } from '../types/gateway-api.js';
import type { HTTPRouteStatusReport, RouteParentStatusReport } from './types.js';
import { conversionProblems } from './grpcroute.js';
import { SentRoutes } from './sent-routes.js';
import { precedenceOrder, type Ordered, type RouteKind } from './precedence.js';
import { commonEnds } from './same-objects.js';

export interface TranslatedRule extends RuleIR {
  readonly index: number;
  /** rules[].name, what a GatewayPolicy sectionName refers to. */
  readonly sectionName: string | null;
  readonly backends: readonly BackendIR[];
}

export interface Attachment {
  readonly gateway: GatewayState;
  readonly listener: ListenerState;
  /** Hostnames the route serves on this listener ([]: all of the listener's). */
  readonly hostnames: readonly string[];
}

/** The route kinds translated here. */
export type { RouteKind } from './precedence.js';

export interface TranslatedRoute {
  readonly kind: RouteKind;
  readonly key: string;
  readonly route: HTTPRoute;
  readonly rules: readonly TranslatedRule[];
  /** Listeners the route is attached to, in Gateway then listener order. */
  readonly attachments: readonly Attachment[];
  readonly status: HTTPRouteStatusReport;
  /** The IRs the route was last sent as: the same object while the route's memo holds (see ./sent-routes.ts). */
  readonly sent: SentRoutes;
}

interface ParentVerdict {
  readonly ref: ParentReference;
  readonly accepted: Verdict;
  readonly attachments: readonly Attachment[];
}

function describeListeners(listeners: readonly ListenerState[]): string {
  return listeners.map((l) => l.spec.name).join(', ');
}

/** What a parentRef names: a Gateway (its own listeners) or a ListenerSet (the listeners it added to its Gateway). */
interface Parent {
  readonly g: GatewayState;
  /** `Gateway <key>` or `ListenerSet <key>`, for messages. */
  readonly what: string;
  readonly listeners: readonly ListenerState[];
  /** Why no route can attach to it, when that is so. */
  readonly refused: Verdict | null;
}

function gatewayParent(g: GatewayState): Parent {
  return { g, what: `Gateway ${g.key}`, listeners: g.listeners.filter((l) => l.origin.kind === 'Gateway'), refused: g.accepted.ok ? null : g.accepted };
}

function listenerSetParent(g: GatewayState, s: ListenerSetState): Parent {
  const refused = !g.accepted.ok ? g.accepted : s.listeners.length ? null : s.accepted;
  return { g, what: `ListenerSet ${s.key}`, listeners: s.listeners, refused };
}

/** The route kinds whose parentRefs attach as HTTPRoute's do (hostnames intersected with the listener's). */
export type AttachingRoute = Pick<HTTPRoute, 'metadata'> & { readonly spec: { readonly hostnames?: readonly string[] } };

/** Which listeners of a Gateway (or of a ListenerSet of it) a parentRef of `route` (of kind `kind`) attaches to, or why none. */
export function matchParent(route: AttachingRoute, ref: ParentReference, target: GatewayState | Parent, ctx: Context, kind: string = 'HTTPRoute'): Omit<ParentVerdict, 'ref'> {
  const parent = 'what' in target ? target : gatewayParent(target);
  const { g, what: owner } = parent;
  const ns = route.metadata.namespace ?? '';
  const none = (v: Verdict) => ({ accepted: v, attachments: [] });
  if (parent.refused) return none(fail('NoMatchingParent', `${owner} is not accepted: ${parent.refused.message}`));
  const candidates = parent.listeners.filter((l) => (ref.sectionName === undefined || l.spec.name === ref.sectionName) && (ref.port === undefined || l.spec.port === ref.port));
  if (!candidates.length) {
    const what = [ref.sectionName !== undefined ? `named ${ref.sectionName}` : '', ref.port !== undefined ? `on port ${ref.port}` : ''].filter(Boolean).join(' ');
    return none(fail('NoMatchingParent', `${owner} has no listener ${what}`));
  }
  const live = candidates.filter((l) => listenerLive(g, l));
  if (!live.length) return none(fail('NotAllowedByListeners', `listener ${describeListeners(candidates)} of ${owner} is not accepted`));
  const kindOk = live.filter((l) => allowsKind(l, GATEWAY_GROUP, kind));
  if (!kindOk.length) return none(fail('NotAllowedByListeners', `listener ${describeListeners(live)} of ${owner} does not allow kind ${kind} (allowedRoutes.kinds)`));
  const allowed = kindOk.filter((l) => allowsNamespace(l, ns, ctx));
  if (!allowed.length)
    return none(fail('NotAllowedByListeners', `listener ${describeListeners(kindOk)} of ${owner} does not allow routes from namespace ${ns} (allowedRoutes.namespaces)`));
  const attachments: Attachment[] = [];
  for (const l of allowed) {
    const hostnames = routeHostnamesOn(l.spec.hostname ?? null, route.spec.hostnames ?? []);
    if (hostnames) attachments.push({ gateway: g, listener: l, hostnames });
  }
  if (!attachments.length)
    return none(
      fail('NoMatchingListenerHostname', `no hostname of the route (${(route.spec.hostnames ?? []).join(', ')}) matches listener ${allowed.map((l) => `${l.spec.name} (${l.spec.hostname ?? '*'})`).join(', ')}`),
    );
  return { accepted: ok('Accepted', `attached to listener ${attachments.map((a) => a.listener.spec.name).join(', ')}`), attachments };
}

interface RulesResult {
  readonly rules: TranslatedRule[];
  readonly problems: Problem[];
  readonly refs: Verdict;
}

/** A Service a route's backendRefs or mirrors name, and the namespace whose ReferenceGrants allow it (null: the route's own). */
interface RefTarget {
  readonly key: string;
  readonly grantsNamespace: string | null;
}

function refTargets(route: HTTPRoute): RefTarget[] {
  const ns = route.metadata.namespace ?? '';
  const out: RefTarget[] = [];
  for (const rule of route.spec.rules ?? [])
    for (const ref of [...(rule.backendRefs ?? []), ...mirrorRefs(rule.filters)]) {
      const target = ref.namespace ?? ns;
      out.push({ key: `${target}/${ref.name}`, grantsNamespace: target !== ns ? target : null });
    }
  return out;
}

/**
 * The objects a route's rules are translated from besides the route itself: the Services its
 * backendRefs name and what their EndpointSlices say of their ports (not their endpoints, which
 * the snapshot lists apart), the ReferenceGrants of the namespaces they are in, and the
 * BackendTLSPolicies of those Services with their ConfigMaps.
 */
function dependencies(targets: readonly RefTarget[], ctx: Context): unknown[] {
  const out: unknown[] = [];
  for (const t of targets) {
    out.push(ctx.services.get(t.key), backendDependency(t.key, ctx), slicePortsKey(ctx.endpointSlices.get(t.key) ?? NO_SLICES), ...(t.grantsNamespace !== null ? ctx.grants.inNamespace(t.grantsNamespace) : []));
    out.push(...tlsDependencies(t, ctx));
  }
  return out;
}

const NO_SLICES: readonly V1EndpointSlice[] = [];

/** dependencies(targets, ctx) equals `deps`, checked without building it. */
function sameDependencies(targets: readonly RefTarget[], deps: readonly unknown[], ctx: Context): boolean {
  let i = 0;
  for (const t of targets) {
    if (deps[i++] !== ctx.services.get(t.key)) return false;
    if (deps[i++] !== backendDependency(t.key, ctx)) return false;
    if (deps[i++] !== slicePortsKey(ctx.endpointSlices.get(t.key) ?? NO_SLICES)) return false;
    if (t.grantsNamespace !== null) for (const g of ctx.grants.inNamespace(t.grantsNamespace)) if (deps[i++] !== g) return false;
    for (const d of tlsDependencies(t, ctx)) if (deps[i++] !== d) return false;
  }
  return i === deps.length;
}

/** The state of the Backend resource of that name (the same object while it and what it reads are unchanged), or undefined. */
function backendDependency(key: string, ctx: Context): unknown {
  const b = ctx.backends.get(key);
  return b && ctx.memo(`backend/${key}`, () => backendState(b, ctx));
}

/** The BackendTLSPolicies of a target Service and their ConfigMaps. */
function tlsDependencies(t: RefTarget, ctx: Context): readonly unknown[] {
  const slash = t.key.indexOf('/');
  return ctx.backendTls.dependencies(t.key.slice(0, slash), t.key.slice(slash + 1));
}

function mirrorRefs(filters: readonly HTTPRouteFilter[] | undefined): HTTPBackendRef[] {
  return (filters ?? []).flatMap((f) => (f.type === 'RequestMirror' && f.requestMirror ? [f.requestMirror.backendRef] : []));
}

/**
 * The rule's RequestMirror filters in the IR, each with its backend resolved like a
 * backendRef (a Service, across namespaces only with a ReferenceGrant); an unresolved one
 * stays as an `invalid` backend, which receives no copies, and sets ResolvedRefs False.
 */
function mirrorFilters(filters: readonly HTTPRouteFilter[], ns: string, path: string, kind: RouteKind, ctx: Context, onRefs: (v: Verdict) => void): FilterIR[] {
  const out: FilterIR[] = [];
  filters.forEach((f, i) => {
    if (f.type !== 'RequestMirror' || !f.requestMirror) return;
    const r = resolveBackendRef({ ...f.requestMirror.backendRef, weight: 1 }, ns, `${path}.filters[${i}].requestMirror.backendRef`, ctx, kind);
    if (!r.verdict.ok) onRefs(r.verdict);
    out.push({ type: 'RequestMirror', backend: r.ir, ...mirrorShare(f.requestMirror) });
  });
  return out;
}

// Informer caches hand out the same object until it changes, so a route whose object and
// dependencies are the same objects as last time has the same rules: they are reused, and so
// are the IR objects built from them (which keeps the snapshot hash cache warm). Keyed weakly
// by the route object: a deleted or replaced route's entry goes with it.
// `epoch` is the dependency epoch (Context.dependencyEpoch) the entry was last checked in: while
// Services, EndpointSlices and ReferenceGrants are the same objects, a route's entry checked
// once is not checked again (a one-route change at thousands of routes skips every other
// route's lookups); and when the epoch changed only for some Services, EndpointSlices or
// Backends (Context.dependencyChange), an entry checked in the epoch before that names none of
// them is not checked either (an endpoint of one Service becoming ready looks at the routes to
// that Service only), nor one checked several epochs ago when every change since was of that
// kind (translations that skipped the routes, ./routes-part.ts).
interface RulesEntry {
  readonly targets: readonly RefTarget[];
  /** The targets' keys (what DependencyChange.holdsSince is asked about). */
  readonly keys: readonly string[];
  readonly deps: readonly unknown[];
  readonly limits: EvaluationLimits;
  readonly result: RulesResult;
  epoch: number;
}
const rulesCache = new WeakMap<HTTPRoute, RulesEntry>();

/** Whether every change since the entry was checked was told by key, and none named one of its targets. */
function untouched(hit: RulesEntry, ctx: Context): boolean {
  const change = ctx.dependencyChange;
  return change !== null && change.holdsSince(hit.epoch, hit.keys);
}

function cachedRules(route: HTTPRoute, kind: RouteKind, ctx: Context): RulesResult {
  const hit = rulesCache.get(route);
  if (hit && hit.limits === ctx.limits && (hit.epoch === ctx.dependencyEpoch || untouched(hit, ctx) || sameDependencies(hit.targets, hit.deps, ctx))) {
    hit.epoch = ctx.dependencyEpoch;
    return hit.result;
  }
  const targets = hit?.targets ?? refTargets(route);
  const result = translateRules(route, kind, ctx);
  rulesCache.set(route, { targets, keys: hit?.keys ?? targets.map((t) => t.key), deps: dependencies(targets, ctx), limits: ctx.limits, result, epoch: ctx.dependencyEpoch });
  return result;
}

function translateRules(route: HTTPRoute, kind: RouteKind, ctx: Context): RulesResult {
  const ns = route.metadata.namespace ?? '';
  const problems: Problem[] = [...conversionProblems(route)];
  let refs: Verdict | null = null;
  const rules = (route.spec.rules?.length ? route.spec.rules : [{}]).map((rule, index) => {
    const path = `spec.rules[${index}]`;
    const { ir, problems: p } = translateRule(rule, path, ctx.limits);
    problems.push(...p);
    const backends = (rule.backendRefs ?? []).map((ref, i) => {
      const refPath = `${path}.backendRefs[${i}]`;
      const filterProblems = backendFilterProblems(ref.filters, rule.matches, refPath, ctx.limits);
      const r = filterProblems.length ? unusableFilters(ref, ns, filterProblems) : resolveBackendRef(ref, ns, refPath, ctx, kind);
      if (!r.verdict.ok && !refs) refs = r.verdict;
      return r.ir;
    });
    const mirrors = p.length ? [] : mirrorFilters(rule.filters ?? [], ns, path, kind, ctx, (v) => (refs ??= v));
    return { ...ir, filters: mirrors.length ? [...ir.filters, ...mirrors] : ir.filters, index, sectionName: rule.name ?? null, backends };
  });
  return { rules, problems, refs: refs ?? ok('ResolvedRefs', 'all references resolved') };
}

/** The parentRef as the status reports it: defaults written out. */
export function fullRef(ref: ParentReference, routeNamespace: string): ParentReference {
  return {
    group: ref.group ?? GATEWAY_GROUP,
    kind: ref.kind ?? 'Gateway',
    namespace: ref.namespace ?? routeNamespace,
    name: ref.name,
    ...(ref.sectionName !== undefined ? { sectionName: ref.sectionName } : {}),
    ...(ref.port !== undefined ? { port: ref.port } : {}),
  };
}

/** Where a route attached, by Gateway key and listener index: valid while its inputs are. */
interface Attached {
  readonly gateway: string;
  readonly listener: number;
  readonly hostnames: readonly string[];
}

/**
 * A route's translation and what it was made from besides the route object: its rules (same
 * object: same Services, EndpointSlices and ReferenceGrants), the controller name, the labels
 * of its namespace, and per parentRef the fingerprint of the Gateway it named. When all are
 * the same, the route attaches where it did and its status is the same.
 */
interface RouteMemo {
  readonly rules: RulesResult;
  readonly controllerName: string;
  readonly namespaceLabels: string;
  /** Per parentRef in order: `Gateway/<key>` or `ListenerSet/<key>` (null: neither) and its fingerprint ('': not one we serve). */
  readonly parents: readonly { readonly parent: string | null; readonly fingerprint: string }[];
  readonly attached: readonly Attached[];
  readonly status: HTTPRouteStatusReport;
  readonly sent: SentRoutes;
}

// Keyed weakly by the route object, like the rules: entries of deleted routes go with them.
const routeMemo = new WeakMap<HTTPRoute, RouteMemo>();

/** The status of a route the last translateRoutes() translated (its memo's). */
export function statusOf(route: HTTPRoute): HTTPRouteStatusReport {
  const memo = routeMemo.get(route);
  if (memo === undefined) throw new Error(`statusOf(): route ${route.metadata.namespace ?? ''}/${route.metadata.name} was not translated`);
  return memo.status;
}

// The route as translated from a memo against one map of Gateway states: its attachments hold
// those states. The routes part keeps a map of Gateway states only while nothing it is made
// from changed, nor the namespaces nor the options (./routes-part.ts): while the map is the
// same object and the route's rules are, every input of the route's memo is as it was (its
// parents' fingerprints, its namespace's labels, the controller name), and the route as
// translated then is the answer, without the memo's checks: no attachment nor route object
// made again for each of thousands of routes when one of them changed.
const translatedFrom = new WeakMap<RouteMemo, { readonly gateways: ReadonlyMap<string, GatewayState>; readonly route: TranslatedRoute }>();

/**
 * Everything matchParent() reads of a Gateway (acceptance, and each listener's name, port,
 * hostname, acceptance, kinds and allowedRoutes), as one string: equal strings, equal verdicts
 * for any route.
 */
function attachFingerprint(g: GatewayState): string {
  return JSON.stringify([
    g.accepted.ok,
    g.accepted.message,
    g.gateway.metadata.namespace ?? '',
    g.listeners.map((l) => [l.origin.kind === 'Gateway' ? null : l.origin.key, l.namespace, l.spec.name, l.spec.port, l.spec.hostname ?? null, l.accepted.ok, l.supportedKinds, l.spec.allowedRoutes ?? null]),
    g.listenerSets.map((s) => [s.key, s.accepted.ok, s.accepted.message]),
    g.backendHosts,
  ]);
}

function labelsFingerprint(labels: Readonly<Record<string, string>>): string {
  return JSON.stringify(Object.entries(labels).sort(([a], [b]) => compareStrings(a, b)));
}

/** The route's parents, attachments and status, computed (not taken from the memo). */
function attachRoute(route: HTTPRoute, kind: RouteKind, rules: RulesResult, parentOf: (parent: string) => Parent | undefined, fingerprint: (parent: string) => string, ctx: Context): Omit<RouteMemo, 'rules' | 'controllerName' | 'namespaceLabels' | 'sent'> {
  const ns = route.metadata.namespace ?? '';
  const gen = generationOf(route.metadata);
  const { problems, refs } = rules;
  const parents: RouteParentStatusReport[] = [];
  const inputs: { parent: string | null; fingerprint: string }[] = [];
  const attached: Attached[] = [];
  const seen = new Set<ListenerState>();
  for (const raw of route.spec.parentRefs ?? []) {
    const ref = fullRef(raw, ns);
    if (ref.group !== GATEWAY_GROUP || (ref.kind !== 'Gateway' && ref.kind !== 'ListenerSet')) {
      inputs.push({ parent: null, fingerprint: '' });
      continue;
    }
    const parentKey = `${ref.kind}/${ref.namespace}/${ref.name}`;
    inputs.push({ parent: parentKey, fingerprint: fingerprint(parentKey) });
    const parent = parentOf(parentKey);
    if (!parent) continue; // not a Gateway (or a ListenerSet of one) this controller serves
    const g = parent.g;
    let { accepted, attachments: found } = matchParent(route, ref, parent, ctx, kind);
    if (accepted.ok && problems.length) {
      accepted = fail('UnsupportedValue', problems.map((p) => `${p.path}: ${p.message}`).join('; '));
      found = [];
    }
    for (const a of found) {
      if (seen.has(a.listener)) continue;
      seen.add(a.listener);
      attached.push({ gateway: g.key, listener: g.listeners.indexOf(a.listener), hostnames: a.hostnames });
    }
    parents.push({
      parentRef: ref,
      controllerName: ctx.controllerName,
      conditions: [condition('Accepted', accepted.ok, accepted.reason, accepted.message, gen), resolvedRefs(refs, rules, g, gen)],
    });
  }
  return { parents: inputs, attached, status: { namespace: ns, name: route.metadata.name, generation: gen, parents } };
}

/**
 * ResolvedRefs for one parent: the rules' own verdict, or RefNotPermitted when a Backend they
 * name has a host the parent Gateway's class does not allow (its requests get 500 there).
 */
function resolvedRefs(refs: Verdict, rules: RulesResult, g: GatewayState, gen: number) {
  const denied = refs.ok && g.backendHosts !== null ? rules.rules.flatMap((r) => [...r.backends, ...r.filters.flatMap((f) => (f.type === 'RequestMirror' ? [f.backend] : []))]).find((b) => b.kind === 'external' && !hostAllowed(b.hostname, g.backendHosts)) : undefined;
  if (denied?.kind !== 'external') return condition('ResolvedRefs', refs.ok, refs.reason, refs.message, gen);
  const message = `Backend ${denied.name} names host ${denied.hostname}, which the parameters of GatewayClass ${g.gateway.spec.gatewayClassName} (backendHosts) do not allow on Gateway ${g.key}`;
  return condition('ResolvedRefs', false, 'RefNotPermitted', message, gen);
}

/**
 * Routes of both kinds in Gateway API precedence order (oldest first, then namespace/name,
 * HTTPRoutes before GRPCRoutes of the same key), each with its attachments. A route whose
 * inputs are unchanged since the last translation (see RouteMemo) is not translated again.
 */
export function translateRoutes(ctx: Context, gateways: ReadonlyMap<string, GatewayState>): readonly TranslatedRoute[] {
  const ordered = precedenceOrder([
    ['HTTPRoute', ctx.httpRoutes],
    ['GRPCRoute', ctx.grpcRoutes],
  ]);
  const run = lastRun;
  const holds = run !== null && run.gateways === gateways && run.epoch === ctx.dependencyEpoch && run.limits === ctx.limits && run.controllerName === ctx.controllerName;
  if (holds && run.ordered === ordered) return run.translated;
  // Only the stretch of the order that differs from the last call's is translated (see lastRun).
  const { head, tail } = holds ? commonEnds(run.ordered, ordered) : { head: 0, tail: 0 };
  // Fingerprints are made anew by every translation; each is swapped for the equal string the
  // last translation used, so the memo checks of thousands of routes compare one pointer
  // instead of two long strings character by character. (While the last call holds, the
  // Gateway states and namespaces are the ones they were made from: the same strings.)
  const interned = holds ? lastFingerprints : new Map<string, string>();
  const intern = (f: string): string => {
    const canonical = lastFingerprints.get(f) ?? f;
    interned.set(canonical, canonical);
    return canonical;
  };
  const fingerprints = new Map<GatewayState, string>();
  const gatewayFingerprint = (g: GatewayState): string => {
    let f = fingerprints.get(g);
    if (f === undefined) fingerprints.set(g, (f = intern(attachFingerprint(g))));
    return f;
  };
  const { parentOf, gatewayOf } = parentIndex(gateways);
  // A ListenerSet's fingerprint is its Gateway's (which covers the set's acceptance and listeners) under that Gateway's key.
  // Made once per parent a translation meets: thousands of routes name a handful of parents.
  const parentFingerprints = new Map<string, string>();
  const fingerprint = (parent: string): string => {
    let f = parentFingerprints.get(parent);
    if (f === undefined) {
      const g = gatewayOf(parent);
      f = g ? (parent.startsWith('ListenerSet/') ? `${g.key}\n${gatewayFingerprint(g)}` : gatewayFingerprint(g)) : '';
      parentFingerprints.set(parent, f);
    }
    return f;
  };
  const namespaceLabels = new Map<string, string>();
  const labelsOf = (ns: string): string => {
    let f = namespaceLabels.get(ns);
    if (f === undefined) namespaceLabels.set(ns, (f = intern(labelsFingerprint(ctx.namespaceLabels(ns)))));
    return f;
  };
  const translateOne = ({ kind, key, route }: Ordered): TranslatedRoute => {
    const rules = cachedRules(route, kind, ctx);
    let memo = routeMemo.get(route);
    const made = memo && translatedFrom.get(memo);
    if (made?.gateways === gateways && memo!.rules === rules) return made.route;
    const labels = labelsOf(route.metadata.namespace ?? '');
    if (
      !memo ||
      memo.rules !== rules ||
      memo.controllerName !== ctx.controllerName ||
      memo.namespaceLabels !== labels ||
      !memo.parents.every((p) => (p.parent === null ? '' : fingerprint(p.parent)) === p.fingerprint)
    ) {
      memo = { rules, controllerName: ctx.controllerName, namespaceLabels: labels, ...attachRoute(route, kind, rules, parentOf, fingerprint, ctx), sent: new SentRoutes() };
      routeMemo.set(route, memo);
    }
    const attachments = memo.attached.map((a): Attachment => {
      const gateway = gateways.get(a.gateway)!;
      return { gateway, listener: gateway.listeners[a.listener]!, hostnames: a.hostnames };
    });
    const tr: TranslatedRoute = { kind, key, route, rules: rules.rules, attachments, status: memo.status, sent: memo.sent };
    translatedFrom.set(memo, { gateways, route: tr });
    return tr;
  };
  const middle = ordered.slice(head, ordered.length - tail).map(translateOne);
  const translated = head || tail ? run!.translated.slice(0, head).concat(middle, run!.translated.slice(run!.translated.length - tail)) : middle;
  lastFingerprints = interned;
  lastRun = { ordered, gateways, epoch: ctx.dependencyEpoch, limits: ctx.limits, controllerName: ctx.controllerName, translated };
  return translated;
}

// The last call and what it was made from. While the Gateway states are the same map (the
// routes part keeps one only while the classes, Gateways, ListenerSets, namespaces and options
// are the objects it was made from, ./routes-part.ts), no dependency changed (the same epoch:
// every route's cached rules hold), and the bounds and controller name are the same, a route
// object of the last call translates to the very route it did (its memo's translation against
// these states). So the entries of the precedence order that are the last call's, at its head
// and tail, are the last call's translated routes without a lookup each, and only the stretch
// between (a route added, edited or deleted) is translated: a route applied among thousands
// costs its own translation, not a walk over the others.
let lastRun: {
  readonly ordered: readonly Ordered[];
  readonly gateways: ReadonlyMap<string, GatewayState>;
  readonly epoch: number;
  readonly limits: EvaluationLimits;
  readonly controllerName: string;
  readonly translated: readonly TranslatedRoute[];
} | null = null;

/** The parents routes may name, by `Gateway/<key>` and `ListenerSet/<key>`, and the Gateway of each. */
function parentIndex(gateways: ReadonlyMap<string, GatewayState>): { parentOf: (parent: string) => Parent | undefined; gatewayOf: (parent: string) => GatewayState | undefined } {
  const sets = new Map<string, { g: GatewayState; s: ListenerSetState }>();
  for (const g of gateways.values()) for (const s of g.listenerSets) sets.set(`ListenerSet/${s.key}`, { g, s });
  const made = new Map<string, Parent | undefined>();
  const gatewayOf = (parent: string) => (parent.startsWith('Gateway/') ? gateways.get(parent.slice('Gateway/'.length)) : sets.get(parent)?.g);
  const parentOf = (parent: string): Parent | undefined => {
    if (made.has(parent)) return made.get(parent);
    const ls = sets.get(parent);
    const g = parent.startsWith('Gateway/') ? gateways.get(parent.slice('Gateway/'.length)) : undefined;
    const p = ls ? listenerSetParent(ls.g, ls.s) : g ? gatewayParent(g) : undefined;
    made.set(parent, p);
    return p;
  };
  return { parentOf, gatewayOf };
}

/** The fingerprints the last translation used (see intern in translateRoutes); only those are kept. */
let lastFingerprints = new Map<string, string>();
