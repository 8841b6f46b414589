// Compiles a ProxySnapshot into lookup structures, once per config: per bind a table of
// listeners by hostname; per listener a table of path indexes by effective route hostname.
// Serving a request then costs a few map lookups regardless of the number of routes.
//
// A snapshot of a large Gateway is mostly routes, and from one snapshot to the next almost all
// of them are the same objects (the decoder keeps the routes it already had). What a route
// compiles to by itself (its backend pickers, filters and compiled matches: RouteParts) is
// kept by route object from the snapshot serving now, so an apply that changed one route of
// thousands builds one route's parts; each listener's route index is the serving snapshot's,
// updated in place for the routes that came and left (route-index.ts).
// Only the serving snapshot's parts are reused: their pickers hold endpoints that snapshot
// keeps alive, and nothing outlives the next apply.
import { DEFAULT_LIMITS, type BackendIR, type EndpointIR, type BindIR, type EvaluationLimits, type ExtraCredentials, type ExtProcIR, type FilterIR, type HeaderModifierIR, type ListenerIR, type PathMatchIR, type PolicyIR, type ProxySnapshot, type RetryIR, type RouteIR, listedPolicies, type ListedPolicies } from '@tollgate/api';
import { backendPicker, routeUpstreams, standalonePickerDeps, type BackendPicker, type PickerDeps, type ServiceUse } from './backend-picker.js';
import { endpointsByName } from './service-endpoints.js';
import { hostPort } from '../upstream/host-port.js';
import { compileMatch, type Candidate, type CompiledMatch, type RouteRequest } from './candidate.js';
import { HostTable } from './host-table.js';
import { RouteIndex, RouteView, type RouteCell, type SplicePlan } from './route-index.js';
import { commonEnds, listingChanges, RoutesGathered, type ReadonlyKeys } from './routes-gathered.js';
import { compileGatewayPolicy, compilePolicy, gatewayPolicyScope, type CompiledPolicy, type GlobalFactory } from '../ratelimit/policy.js';
import type { LimiterStore } from '../ratelimit/local/limiter.js';
import { compileBindTls, TlsContextCache, type BindTls } from './tls-contexts.js';
import type { AuthCompilers } from '../auth/compilers.js';
import { credentialNames } from '../auth/credential-names.js';
import { effectiveAuth } from '../auth/effective.js';
import type { AuthCheck } from '../auth/types.js';
import { hasFailover, priorityLevels, type PriorityLevels } from './priority-levels.js';
import { RetryBudget } from './retry-budget.js';
import { effectiveTransformation, transformsRequests, type RouteTransformation } from '../transform/compile.js';
import { compileCors, type CompiledCors } from '../policies/cors.js';
import { compileCsrf, type CompiledCsrf } from '../policies/csrf.js';
import { compileDirectResponse, type CompiledDirectResponse } from '../policies/direct-response.js';

export interface CompileDeps {
  readonly limiters: LimiterStore;
  /** Builds a global limiter; null when global limiting is unavailable (tests of routing). */
  readonly makeGlobal: GlobalFactory | null;
  /** Endpoint state (kept across configs) and the balancing policy. */
  readonly picking: PickerDeps;
  /** Parsed certificates kept across snapshots (a fresh cache when absent). */
  readonly tlsContexts?: TlsContextCache;
  /** The snapshot serving now: routes that are the same objects reuse its RouteParts. */
  readonly previous?: CompiledSnapshot | null;
  /** Compiles the authentication kinds; without it (tests of routing) a route runs no checks. */
  readonly auth?: AuthCompilers;
}

/** What a route compiles to whatever its listener: kept while the route object is the same. */
export interface RouteParts {
  readonly pickBackend: BackendPicker;
  readonly redirect: Extract<FilterIR, { type: 'RequestRedirect' }> | null;
  readonly mirrors: readonly CompiledMirror[] | null;
  readonly responseModifiers: readonly HeaderModifierIR[];
  readonly matches: readonly CompiledMatch[];
  /** The endpoints of its static and external backends and mirrors (routeUpstreams). */
  readonly upstreams: readonly string[];
  /** The Service ports it sends to, whose endpoints the snapshot lists (routeUpstreams). */
  readonly services: readonly ServiceUse[];
  /** Its failover levels, retries and retry budget; null when it neither fails over nor retries (most). */
  readonly resilience: RouteResilience | null;
}

/** What a route that fails over or retries compiles to besides its picker. */
export interface RouteResilience {
  readonly levels: PriorityLevels;
  readonly retry: RetryIR | null;
  /** Kept with the route object: a reload that keeps the route keeps its counts. */
  readonly budget: RetryBudget;
}

function compileResilience(r: RouteIR, picking: PickerDeps): RouteResilience | null {
  if (r.retry === undefined && !hasFailover(r.backends)) return null;
  const levels = priorityLevels(r.backends, picking);
  return levels ? { levels, retry: r.retry ?? null, budget: new RetryBudget() } : null;
}

function compileRouteParts(r: RouteIR, picking: PickerDeps, limits: EvaluationLimits): RouteParts {
  return {
    resilience: compileResilience(r, picking),
    pickBackend: backendPicker(r.backends, picking),
    redirect: r.filters.find((f): f is Extract<FilterIR, { type: 'RequestRedirect' }> => f.type === 'RequestRedirect') ?? null,
    mirrors: compileMirrors(r.filters, picking),
    responseModifiers: r.filters.filter((f): f is Extract<FilterIR, { type: 'ResponseHeaderModifier' }> => f.type === 'ResponseHeaderModifier'),
    matches: r.matches.map((m) => compileMatch(m, limits.regex)),
    ...routeUpstreams(r),
  };
}

export interface CompiledRoute {
  readonly ir: RouteIR;
  /**
   * What the route compiled to by itself, whatever its listener (backend picker, redirect,
   * mirrors, response header modifiers, resilience): the next compile reuses it for the same
   * route object.
   */
  readonly parts: RouteParts;
  /** Route-level rate limits (its listener's that read the consumer, CompiledListener.afterAuth, run before them). */
  readonly policy: CompiledPolicy | null;
  /** Authentication and authorization checks, in order (route over Gateway level per kind); null: none. */
  readonly auth: readonly AuthCheck[] | null;
  /** The transformation (route over Gateway level); null: none. */
  readonly transformation: RouteTransformation | null;
  /** LLM tokens are counted on this route (a tokens limit or global limit here or on its listener). */
  readonly countsTokens: boolean;
  /** Cross-origin calls from browsers: the route's CORS filter, else its cors policy, else its Gateway's; null: none. */
  readonly cors: CompiledCors | null;
  /** The route's csrf policy, else its Gateway's; null: none. */
  readonly csrf: CompiledCsrf | null;
  /** The route's directResponse, else its Gateway's: answered in place of a backend; null: none. */
  readonly direct: CompiledDirectResponse | null;
  /** The route's extProc, else its Gateway's; null: none. */
  readonly extProc: ExtProcIR | null;
}

/** Where copies of a route's requests go, and which share of them. */
export interface CompiledMirror {
  readonly backend: BackendIR;
  readonly pick: BackendPicker;
  readonly numerator: number;
  readonly denominator: number;
}

function compileMirrors(filters: readonly FilterIR[], picking: PickerDeps): CompiledMirror[] | null {
  const mirrors: CompiledMirror[] = [];
  for (const f of filters) {
    // An unresolved backend, or a share of 0, sends no copies: nothing to compile.
    if (f.type !== 'RequestMirror' || f.backend.kind === 'invalid' || f.numerator === 0) continue;
    mirrors.push({ backend: f.backend, pick: backendPicker([{ ...f.backend, weight: 1 }], picking), numerator: f.numerator, denominator: f.denominator });
  }
  return mirrors.length ? mirrors : null;
}

export interface CompiledListener {
  readonly ir: ListenerIR;
  readonly bind: BindIR;
  /** Gateway-level rate limits, evaluated before routing. */
  readonly policy: CompiledPolicy | null;
  /**
   * Its limits that read the consumer: evaluated after authentication, before the route's. Read
   * from the listener, not copied into its routes: a compiled route is kept from one apply to the
   * next while the listener's policy is the same object, and the limits are compiled anew each time.
   */
  readonly afterAuth: CompiledPolicy | null;
  /** Its limits count LLM tokens (either part): each of its routes counts them. */
  readonly countsTokens: boolean;
  readonly routes: RouteView<CompiledRoute>;
  /** What its route list compiled to beyond the routes: the next compile keeps it with the list. */
  readonly list: ListenerRoutes;
}

/** What a listener's route list (the array object) compiles to besides its routes' own forms. */
interface ListenerRoutes {
  /** A route's policy transforms requests (the listener's limits that read the request wait for it). */
  readonly transforms: boolean;
  /** Positions of the routes with a policy of their own: compiled with each apply (their limits are the store's of that apply). */
  readonly ownPolicies: readonly number[];
  /** Positions of its routes whose hostnames share none with the listener's. */
  readonly detached: readonly number[];
}

/** How many routes a splice may take out and put in, for lists of `routes` in all: past it, the list is walked. */
function spliceLimit(routes: number): number {
  return 16 + (routes >> 3);
}

/**
 * The positions in `list` of the routes with a policy of their own and of the detached routes,
 * from those of the list `plan` is relative to (`last`): the head's kept, the tail's shifted,
 * the stretch between looked at. The detached ones between are the splice's to add.
 */
function splicedPositions(last: ListenerRoutes, plan: SplicePlan, list: readonly RouteIR[]): { readonly ownPolicies: number[]; readonly detached: number[] } {
  const { head, tail } = plan;
  return { ownPolicies: shifted(last.ownPolicies, head, plan.from.length - tail, list, list.length - tail, true), detached: shifted(last.detached, head, plan.from.length - tail, list, list.length - tail, false) };
}

/**
 * Positions in a list that shares its first `head` routes and the routes from `oldEnd` on with
 * `list` (whose routes from `end` on are those), as positions in `list`: those of the head kept,
 * those of the tail shifted, and (`between`) the routes of `list` between with a policy of their own.
 */
function shifted(positions: readonly number[], head: number, oldEnd: number, list: readonly RouteIR[], end: number, between: boolean): number[] {
  const out: number[] = [];
  let k = 0;
  while (k < positions.length && positions[k]! < head) out.push(positions[k++]!);
  if (between) for (let i = head; i < end; i++) if (list[i]!.policy) out.push(i);
  while (k < positions.length && positions[k]! < oldEnd) k++;
  const shift = end - oldEnd;
  while (k < positions.length) out.push(positions[k++]! + shift);
  return out;
}

/**
 * The policies `ir` lists, before it is compiled (what the runtime loads and keeps for them):
 * the routes' found by position where the serving snapshot `previous` has the listener (by
 * listenerKey()) with the same list, or one that differs from it between a common head and tail
 * that leave a short stretch; the other lists are walked.
 */
export function listedPoliciesFrom(ir: ProxySnapshot, previous: CompiledSnapshot | null): ListedPolicies {
  if (!previous) return listedPolicies(ir);
  const gateway: PolicyIR[] = [];
  const route: PolicyIR[] = [];
  for (const bind of ir.binds) {
    for (const l of bind.listeners) {
      if (l.policy) gateway.push(l.policy);
      const list = l.routes;
      const was = previous.listenersByKey.get(listenerKey(bind, l));
      let positions: readonly number[] | null = null;
      if (was?.ir.routes === list) positions = was.list.ownPolicies;
      else if (was) {
        const { head, tail } = commonEnds(was.ir.routes, list);
        const oldEnd = was.ir.routes.length - tail;
        const end = list.length - tail;
        if (oldEnd - head + end - head <= spliceLimit(was.ir.routes.length + list.length)) positions = shifted(was.list.ownPolicies, head, oldEnd, list, end, true);
      }
      if (positions) for (const i of positions) route.push(list[i]!.policy!);
      else for (const r of list) if (r.policy) route.push(r.policy);
    }
  }
  return { gateway, route };
}

export interface CompiledBind {
  readonly ir: BindIR;
  readonly listeners: HostTable<CompiledListener>;
  /** Certificates by SNI name; null on a plain HTTP bind. */
  readonly tls: BindTls | null;
}

export interface CompiledSnapshot {
  readonly ir: ProxySnapshot;
  readonly binds: ReadonlyMap<number, CompiledBind>;
  /** Routes whose hostnames share none with their listener's: not served, reported once. */
  readonly detached: readonly string[];
  /** Every endpoint address a route can send to: the endpoint state the runtime keeps. */
  readonly upstreams: ReadonlyKeys<string>;
  /** The ready endpoints of each Service port its routes send to (PickerDeps.services holds them once committed). */
  readonly serviceEndpoints: ReadonlyMap<string, readonly EndpointIR[]>;
  /** The names of its routes (their metrics series are kept). */
  readonly routeNames: ReadonlyKeys<string>;
  /** Each route's parts, by route object (the next compile reuses them). */
  readonly parts: ReadonlyMap<RouteIR, RouteParts>;
  /** What the routes gathered (parts, names, their upstreams and Services): the next compile changes a fork of it by what the lists gained and lost. */
  readonly gathered: RoutesGathered<RouteParts>;
  /** Each listener's routes by listenerKey(): the next compile updates the indexes still current. */
  readonly indexes: ReadonlyMap<string, RouteView<CompiledRoute>>;
  /** The listeners by listenerKey(), whose policy says which compiled routes the next compile may keep. */
  readonly listenersByKey: ReadonlyMap<string, CompiledListener>;
  /** Headers and query parameters its policies read credentials from, beyond the fixed list: traces and /debug/tasks redact them. */
  readonly credentials: ExtraCredentials;
  /** The policies it lists (its listeners' and its routes' own), found from the positions of the routes with one. */
  readonly policies: ListedPolicies;
  /** Routes whose matches, backends and filters this compile built; the others' are the previous snapshot's (same route objects). */
  readonly routesCompiled: number;
}

export interface RouteHit {
  readonly route: CompiledRoute;
  readonly matched: PathMatchIR;
}

/** Without `deps` (route-selection tests) no rate limits are compiled and endpoint state is the snapshot's own. */
export function compileSnapshot(ir: ProxySnapshot, deps: CompileDeps | null = null): CompiledSnapshot {
  const binds = new Map<number, CompiledBind>();
  const limits = ir.limits ?? DEFAULT_LIMITS;
  // Parts compiled under other bounds (a reload that changed config.regex) are compiled again.
  const previous = deps?.previous;
  const keptParts = previous && JSON.stringify(previous.ir.limits ?? DEFAULT_LIMITS) === JSON.stringify(limits) ? previous.parts : undefined;
  const indexes = new Map<string, RouteView<CompiledRoute>>();
  const listenersByKey = new Map<string, CompiledListener>();
  const picking = deps?.picking ?? standalonePickerDeps();
  const tlsContexts = deps?.tlsContexts ?? new TlsContextCache();
  // What the routes gather: the serving snapshot's, forked on the first change and changed by
  // what each listener's list gained and lost (routes-gathered.ts). Only while its lists can be
  // told apart by listener (no key listed twice) and its parts are this compile's.
  const base = keptParts && previous!.listenersByKey.size === listenerCount(previous!.ir) ? previous!.gathered : null;
  let forked: RoutesGathered<RouteParts> | null = base ? null : RoutesGathered.empty();
  const gathering = (): RoutesGathered<RouteParts> => (forked ??= base!.fork());
  // The previous listeners whose list this compile compared against (the others left).
  const compared = new Set<string>();
  const detached: string[] = [];
  const done: { gathered: RoutesGathered<RouteParts> | null } = { gathered: null };
  const matchesOf = matchesIn(done);
  // The routes whose parts this compile built.
  const compiled = new Map<RouteIR, RouteParts>();
  const gatewayPolicies: PolicyIR[] = [];
  const routePolicies: PolicyIR[] = [];
  for (const bind of ir.binds) {
    const listeners = new HostTable<CompiledListener>();
    for (const l of bind.listeners) {
      // The serving snapshot's index of this listener, unless its matches were compiled under other bounds.
      const key = listenerKey(bind, l);
      const before = keptParts && !indexes.has(key) ? previous?.indexes.get(key) : undefined;
      const updating = before?.current === true;
      const previousListener = updating ? previous?.listenersByKey.get(key) : undefined;
      // The route list is the array it was and the policy the object it was: what the list
      // compiled to is kept, and the index is not walked (an endpoint change).
      const kept = previousListener && previousListener.ir.routes === l.routes && previousListener.ir.policy === l.policy && !before!.shared.listedTwice ? previousListener.list : undefined;
      // The list this listener had in the serving snapshot, which what is gathered counts.
      const was = base && !compared.has(key) ? previous!.listenersByKey.get(key) : undefined;
      if (was) compared.add(key);
      // A route with no policy of its own, on a listener whose policy is the object it was at the
      // last compile, compiles to what it did then (its own object, that policy and the bounds
      // decide it all; its listener's compiled limits are read from the listener): the index's
      // compiled route is kept, so an apply that changed one route of thousands builds one.
      const keepsRoutes = previousListener !== undefined && previousListener.ir.policy === l.policy;
      // A list that differs from the serving one only between their common head and tail (a
      // route added, removed or replaced): only that stretch is compiled and placed, the rest of
      // what the list compiled to is taken by position (route-index.ts splice()).
      const plan = !kept && keepsRoutes && !before!.shared.listedTwice ? before!.shared.spliceable(l.routes, spliceLimit(previousListener.ir.routes.length + l.routes.length)) : null;
      const spliced = plan !== null && plan.from === previousListener!.ir.routes ? splicedPositions(previousListener!.list, plan, l.routes) : null;
      // Where a transformation changes requests, the listener's limits that read the request wait for it.
      const routesTransform = kept ? kept.transforms : spliced ? spliced.ownPolicies.some((i) => transformsRequests(l.routes[i]!.policy)) : l.routes.some((r) => transformsRequests(r.policy));
      const gateway = deps ? compileGatewayPolicy(gatewayPolicyScope(l), l.policy, deps.limiters, deps.makeGlobal, limits, transformsRequests(l.policy) || routesTransform) : null;
      const listenerPolicy = gateway?.beforeRouting ?? null;
      const afterAuth = gateway?.afterAuth ?? null;
      const countsTokens = (listenerPolicy?.countsTokens ?? false) || (afterAuth?.countsTokens ?? false);
      const context: RouteContext = { listener: l, countsTokens, deps, limits };
      // The parts of route `r`, kept (from its compiled route, what is gathered or the serving snapshot) or built.
      const partsOf = (r: RouteIR, keptRoute: CompiledRoute | undefined): RouteParts => {
        // (What is gathered changes after the walk: a route listed twice finds its parts in `compiled`.)
        let own = keptRoute?.parts ?? gathering().parts.get(r) ?? keptParts?.get(r) ?? compiled.get(r);
        if (!own) {
          own = compileRouteParts(r, picking, limits);
          compiled.set(r, own);
        }
        return own;
      };
      let view: RouteView<CompiledRoute>;
      let list: ListenerRoutes;
      if (kept) {
        const last = before!;
        // Only the routes with a policy of their own are compiled again (their limits are this
        // apply's); with none, the index is left as it is and the serving snapshot's view stays valid too.
        let values = last.values;
        let epoch = last.epoch;
        if (kept.ownPolicies.length) {
          const changed = values.slice();
          for (const i of kept.ownPolicies) {
            const r = l.routes[i]!;
            changed[i] = compileRoute(r, keptParts!.get(r)!, context);
          }
          epoch = last.shared.revalue(kept.ownPolicies.map((i) => [l.routes[i]!, changed[i]!] as const));
          values = changed;
        }
        view = new RouteView(last.shared, epoch, values, matchesOf);
        list = kept;
      } else if (spliced) {
        const last = before!;
        const index = last.shared;
        const { head, tail } = plan!;
        const end = l.routes.length - tail;
        // The routes between head and tail: kept compiled routes where the index holds them (a route moved within the stretch), else built.
        const middle: CompiledRoute[] = [];
        const middleMatches: (readonly CompiledMatch[])[] = [];
        for (let i = head; i < end; i++) {
          const r = l.routes[i]!;
          const keptRoute = r.policy ? undefined : index.valueOf(r);
          const own = partsOf(r, keptRoute);
          middle.push(keptRoute ?? compileRoute(r, own, context));
          middleMatches.push(own.matches);
        }
        const values = last.values.slice(0, head).concat(middle, last.values.slice(last.values.length - tail));
        // The routes of the head and tail with a policy of their own are compiled again (their limits are this apply's).
        const revalued: (readonly [number, CompiledRoute])[] = [];
        for (const i of spliced.ownPolicies) {
          if (i >= head && i < end) continue;
          values[i] = compileRoute(l.routes[i]!, values[i]!.parts, context);
          revalued.push([i, values[i]]);
        }
        const done = index.splice(plan!, middleMatches, middle, revalued);
        const listDetached = spliced.detached;
        done.hosts.forEach((hosts, k) => {
          if (!hosts.length) listDetached.push(head + k);
        });
        listDetached.sort((a, b) => a - b);
        view = new RouteView(index, done.epoch, values, matchesOf);
        list = { transforms: routesTransform, ownPolicies: spliced.ownPolicies, detached: listDetached };
      } else {
        const index = updating ? before.shared : new RouteIndex<CompiledRoute>(l.hostname);
        const values: CompiledRoute[] = [];
        view = new RouteView(index, index.begin(l.routes), values, matchesOf);
        const ownPolicies: number[] = [];
        const listDetached: number[] = [];
        l.routes.forEach((r, i) => {
          const keptRoute = keepsRoutes && !r.policy ? index.valueOf(r) : undefined;
          const own = partsOf(r, keptRoute);
          if (r.policy) ownPolicies.push(i);
          const route = keptRoute ?? compileRoute(r, own, context);
          values.push(route);
          if (!index.place(r, own.matches, route).length) listDetached.push(i);
        });
        index.finish();
        list = { transforms: routesTransform, ownPolicies, detached: listDetached };
      }
      for (const i of list.detached) detached.push(l.routes[i]!.name);
      if (l.policy) gatewayPolicies.push(l.policy);
      for (const i of list.ownPolicies) routePolicies.push(l.routes[i]!.policy!);
      // What is gathered: the listings this list gained and lost against the serving one (a
      // listener taken whole, against its own list: none).
      if (!kept || !was) {
        const into = gathering();
        const values = view.values;
        if (was) {
          const { gained, lost } = listingChanges(was.ir.routes, l.routes);
          for (const i of gained) into.add(l.routes[i]!, values[i]!.parts);
          for (const r of lost) into.remove(r);
        } else l.routes.forEach((r, i) => into.add(r, values[i]!.parts));
      }
      indexes.set(key, view);
      const listener: CompiledListener = { ir: l, bind, routes: view, policy: listenerPolicy, afterAuth, countsTokens, list };
      listenersByKey.set(key, listener);
      listeners.upsert(l.hostname, () => listener);
    }
    binds.set(bind.port, { ir: bind, listeners, tls: compileBindTls(bind, tlsContexts) });
  }
  // The listeners that left take their listings along.
  if (base) for (const [key, l] of previous!.listenersByKey) if (!compared.has(key)) for (const r of l.ir.routes) gathering().remove(r);
  const gathered = forked ?? base!;
  done.gathered = gathered;
  // The serving snapshot's tables stay as they were; this one's let go of what it replaced.
  if (base && forked) forked.settle();
  // The endpoints of the Service ports in use, as this snapshot lists them, each in every way
  // of speaking to it that a route uses (one pool each).
  const ofServices = new Set<string>();
  const table = endpointsByName(ir.endpoints);
  const serviceEndpoints = new Map<string, readonly EndpointIR[]>();
  for (const [name, suffixes] of gathered.services) {
    const endpoints = table.get(name) ?? [];
    serviceEndpoints.set(name, endpoints);
    for (const e of endpoints) {
      const address = hostPort(e.address, e.port);
      for (const suffix of suffixes) ofServices.add(address + suffix);
    }
  }
  // Copied only when both kinds are in use: the routes' own set is kept from one compile to the next.
  const upstreams: ReadonlyKeys<string> = !ofServices.size ? gathered.upstreams : !gathered.upstreams.size ? ofServices : new Set([...gathered.upstreams, ...ofServices]);
  // Without a runtime (routing tests) nothing else commits: the snapshot's own sets serve it.
  if (!deps) picking.services.commit(serviceEndpoints);
  const { parts, routeNames } = gathered;
  const policies: ListedPolicies = { gateway: gatewayPolicies, route: routePolicies };
  return { ir, binds, detached, upstreams, serviceEndpoints, routeNames, parts, gathered, indexes, listenersByKey, credentials: credentialNames(policies), policies, routesCompiled: compiled.size };
}

/** What a route's compiled form takes from its listener and the compile. */
interface RouteContext {
  readonly listener: ListenerIR;
  /** The listener's limits count tokens (CompiledListener.countsTokens). */
  readonly countsTokens: boolean;
  readonly deps: CompileDeps | null;
  readonly limits: EvaluationLimits;
}

/**
 * The matches of a route, from what a compile gathered (set once it is done), for the route
 * views it makes. Made out here: a closure made in compileSnapshot would share its scope, and
 * with it the serving snapshot's parts, for as long as the views live (the whole next config).
 */
function matchesIn(done: { readonly gathered: RoutesGathered<RouteParts> | null }): (r: RouteIR) => readonly CompiledMatch[] {
  return (r) => done.gathered!.parts.get(r)!.matches;
}

/** A route's compiled form: its own parts, its policy's limits and checks over its listener's. */
function compileRoute(r: RouteIR, own: RouteParts, c: RouteContext): CompiledRoute {
  const { listener: l, deps, limits } = c;
  const routePolicy = deps ? compilePolicy('route', r.name, r.policy, deps.limiters, deps.makeGlobal, limits) : null;
  return {
    ir: r,
    parts: own,
    policy: routePolicy,
    auth: deps?.auth ? effectiveAuth(l.policy, r.policy, deps.auth, limits) : null,
    transformation: deps ? effectiveTransformation(l.policy, r.policy, limits) : null,
    countsTokens: (routePolicy?.countsTokens ?? false) || c.countsTokens,
    ...browserPolicies(l, r),
    extProc: r.policy?.extProc ?? l.policy?.extProc ?? null,
  };
}

/** How many listeners a snapshot has (listenersByKey has fewer when a key is listed twice). */
function listenerCount(ir: ProxySnapshot): number {
  return ir.binds.reduce((n, b) => n + b.listeners.length, 0);
}

/** A listener as the next snapshot finds its index: a listener whose hostname changed starts a new one. */
function listenerKey(bind: BindIR, l: ListenerIR): string {
  return JSON.stringify([bind.address, bind.port, l.name, l.hostname]);
}

/**
 * A route's cors, csrf and directResponse: each the route's own setting over its Gateway's
 * (as the authentication kinds); for cors, the route's CORS filter over both.
 */
function browserPolicies(l: ListenerIR, r: RouteIR): Pick<CompiledRoute, 'cors' | 'csrf' | 'direct'> {
  const filter = r.filters.find((f): f is Extract<FilterIR, { type: 'CORS' }> => f.type === 'CORS');
  const own = r.policy;
  const inherited = l.policy;
  const cors = filter ? compileCors(filter, 'filter') : own?.cors ? compileCors(own.cors, 'route') : inherited?.cors ? compileCors(inherited.cors, 'gateway') : null;
  const csrf = own?.csrf ?? inherited?.csrf ?? null;
  const direct = own?.directResponse ?? inherited?.directResponse ?? null;
  return { cors, csrf: csrf && compileCsrf(csrf), direct: direct && compileDirectResponse(direct) };
}

/** Names of the routes serving `host` on a listener, most specific host first (for traces of a 404). */
export function routesServing(listener: CompiledListener, host: string): string[] {
  return [...new Set(listener.routes.index.serving(host).map((c) => c.route.ir.name))];
}

/**
 * Selects the route for a request on a listener, by Gateway API precedence: the most specific
 * hostname that has a matching route, then path rank, method, headers, query params, order.
 * `evaluated` (when given, e.g. by a trace) receives each route tried, in order.
 */
export function selectRoute(listener: CompiledListener, host: string, req: RouteRequest, evaluated?: string[]): RouteHit | null {
  let params: URLSearchParams | undefined;
  const query = () => (params ??= new URLSearchParams(req.query));
  const accept = (c: Candidate<RouteCell<CompiledRoute>>): boolean => {
    if (evaluated && evaluated[evaluated.length - 1] !== c.route.ir.name) evaluated.push(c.route.ir.name);
    return c.test(req, query);
  };
  const hit = listener.routes.index.find(host, req.path, accept);
  return hit ? { route: hit.route.value, matched: hit.match.path } : null;
}
