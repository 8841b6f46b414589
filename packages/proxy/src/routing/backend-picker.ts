// Chooses where one request goes: a backend of the route by weight (the Gateway API's
// backendRef weights, across backends), then, within a Service, one of its ready endpoints by
// the balancing policy. Everything a pick reads is prepared once per config (cumulative
// weights, target objects holding their endpoint state), a Service's targets once per change
// of its endpoints; a pick allocates nothing.
import type { BackendFilterIR, BackendIR, EndpointIR, RouteIR, ServiceBackendIR } from '@tollgate/api';
import type { Clock } from '../ratelimit/clock.js';
import { systemClock } from '../ratelimit/clock.js';
import { EndpointTable, endpointKey, endpointKeySuffix, type Endpoint } from '../upstream/endpoints.js';
import { ServiceEndpoints } from './service-endpoints.js';
import { hostPort } from '../upstream/host-port.js';
import { CoolDowns } from '../upstream/cool-downs.js';
import { DEFAULT_COOL_DOWN_MS, DEFAULT_MAX_COOL_DOWN_MS } from '@tollgate/api';

export { hostPort };

/** The address a request is sent to, and the backend it belongs to. */
export interface UpstreamTarget {
  /** `<address>:<port>` of the endpoint (the trace's backendCallStart target). */
  readonly name: string;
  readonly host: string;
  readonly port: number;
  readonly backend: BackendIR;
  /** Its pool, requests in flight and scores. */
  readonly endpoint: Endpoint;
  /** Every endpoint of the same backend, this one included: where a request that was not sent may go instead. */
  readonly siblings: readonly UpstreamTarget[];
}

/**
 * Where a request goes: an endpoint; `INVALID_BACKEND` when it falls on a backend that cannot
 * exist (an unresolved reference) or the route has no backend with a weight (the Gateway API
 * answers 500 then); null when its backend has no ready endpoint now (503).
 */
export type BackendPicker = () => UpstreamTarget | typeof INVALID_BACKEND | null;

/**
 * How the endpoints of one Service share its requests.
 *
 * `LeastRequest` is the power of two choices: two candidates per pick, the cheaper one wins
 * (cost = requests in flight, latency and failures: Endpoint#cost). Comparing two instead of
 * scanning all keeps a pick O(1) whatever the number of endpoints, and picking the best of two
 * rather than the best of all avoids the herd effect of every proxy replica (whose in-flight
 * counts are only its own) sending to the same momentarily best endpoint; two choices already
 * spread load exponentially better than one random choice. One candidate is the round-robin
 * cursor's endpoint and the other a random one, and the random one must be cheaper by more
 * than `tolerance` to win: endpoints that cost about the same (the usual case, and a fresh
 * Service, where nothing is known yet) are served round robin.
 *
 * `RoundRobin` ignores the scores (endpoint ejection still applies).
 */
export type BalancingPolicy = { readonly kind: 'LeastRequest'; readonly choices: 2; readonly tolerance: number } | { readonly kind: 'RoundRobin' };

export const INVALID_BACKEND = 'invalid-backend';

/** What Service backends use. */
export const SERVICE_BALANCING: BalancingPolicy = { kind: 'LeastRequest', choices: 2, tolerance: 0.2 };

export interface PickerDeps {
  /** Where endpoint state lives across configs (the runtime's table). */
  readonly endpoints: EndpointTable;
  readonly clock: Clock;
  readonly balancing: BalancingPolicy;
  /** The backends cooling down (kept across configs), read by routes that fail over or retry. */
  readonly coolDowns: CoolDowns;
  /** The ready endpoints of each Service port (kept across configs): what a Service backend's picker reads. */
  readonly services: ServiceEndpoints;
}

type TargetPicker = BackendPicker;

/**
 * The endpoints a backend can dial, by endpointKey() (address and TLS setting): what a new
 * config keeps of the endpoint state. `endpointsOf` gives a Service port's ready endpoints.
 */
export function upstreamNames(backend: BackendIR, endpointsOf: (name: string) => readonly EndpointIR[]): string[] {
  switch (backend.kind) {
    case 'static':
      return [endpointKey(backend.host, backend.port, backend.tls, backend.protocol)];
    case 'external':
      return [endpointKey(backend.hostname, backend.port, backend.tls, backend.protocol)];
    case 'service':
      return endpointsOf(backend.name).map((e) => endpointKey(e.address, e.port, backend.tls, backend.protocol));
    case 'invalid':
      return [];
  }
}

/** How a route sends to a Service port: its name, and the endpointKey() suffix of its TLS setting and protocol. */
export interface ServiceUse {
  readonly name: string;
  readonly suffix: string;
}

/**
 * What a route can send to, backends and mirrors: the endpoint keys of its static and external
 * backends, and the Service ports it uses (whose endpoints the snapshot lists apart).
 */
export function routeUpstreams(route: RouteIR): { readonly upstreams: readonly string[]; readonly services: readonly ServiceUse[] } {
  const upstreams: string[] = [];
  const services: ServiceUse[] = [];
  const add = (b: BackendIR): void => {
    if (b.kind === 'service') services.push({ name: b.name, suffix: endpointKeySuffix(b.tls, b.protocol) });
    else upstreams.push(...upstreamNames(b, () => []));
  };
  for (const b of route.backends) add(b);
  for (const f of route.filters) if (f.type === 'RequestMirror') add(f.backend);
  return { upstreams, services };
}

/** The backendRef's own filters (absent on most backends). */
export function backendFilters(backend: BackendIR): readonly BackendFilterIR[] | undefined {
  return backend.kind === 'service' || backend.kind === 'external' ? backend.filters : undefined;
}

/** The first endpoint from `start` on that is not ejected, or null when all are. */
function firstAvailable(targets: readonly UpstreamTarget[], start: number, now: number): UpstreamTarget | null {
  for (let i = 0; i < targets.length; i++) {
    const t = targets[(start + i) % targets.length]!;
    if (t.endpoint.cost(now) !== Infinity) return t;
  }
  return null;
}

/**
 * A Service backend's picker: over the endpoints its set holds (./service-endpoints.ts), built
 * again at the first pick after the set changed, so that an endpoint change reaches the
 * compiled routes the runtime kept; between changes a pick costs one comparison more.
 */
function serviceTargets(backend: ServiceBackendIR, deps: PickerDeps): TargetPicker {
  const set = deps.services.set(backend.name);
  let generation = -1;
  let pick: TargetPicker = () => null;
  return () => {
    if (set.generation !== generation) {
      generation = set.generation;
      pick = balanced(backend, set.endpoints, deps);
    }
    return pick();
  };
}

function balanced(backend: ServiceBackendIR, endpoints: readonly EndpointIR[], deps: PickerDeps): TargetPicker {
  const targets: UpstreamTarget[] = [];
  for (const e of endpoints) {
    const endpoint = deps.endpoints.acquire(e.address, e.port, backend.tls, false, backend.protocol);
    targets.push({ name: endpoint.name, host: e.address, port: e.port, backend, endpoint, siblings: targets });
  }
  const n = targets.length;
  if (n === 0) return () => null;
  if (n === 1) {
    const only = targets[0]!;
    return () => only;
  }
  const { clock } = deps;
  const policy = deps.balancing;
  let cursor = 0;
  if (policy.kind === 'RoundRobin') {
    return () => {
      const at = cursor;
      cursor = at + 1 === n ? 0 : at + 1;
      const t = targets[at]!;
      // With every endpoint ejected one is still tried rather than failing the request.
      return t.endpoint.cost(clock()) !== Infinity ? t : (firstAvailable(targets, at, clock()) ?? t);
    };
  }
  const margin = 1 + policy.tolerance;
  return () => {
    const now = clock();
    const at = cursor;
    cursor = at + 1 === n ? 0 : at + 1;
    // Any endpoint but the cursor's, uniformly.
    const other = (at + 1 + Math.floor(Math.random() * (n - 1))) % n;
    const a = targets[at]!;
    const b = targets[other]!;
    const costA = a.endpoint.cost(now);
    const costB = b.endpoint.cost(now);
    const pick = costB * margin < costA ? b : a;
    if ((pick === a ? costA : costB) !== Infinity) return pick;
    // Both candidates ejected (or retired): any endpoint that is not, else one of them anyway.
    return firstAvailable(targets, other, now) ?? pick;
  };
}

/**
 * Another endpoint of the same backend for a request that could not be sent to `tried`'s last:
 * the cheapest one not tried yet and not ejected (an ejected one failed to connect moments ago),
 * starting after the last tried so that retries spread; null when there is none.
 */
export function anotherEndpoint(tried: readonly UpstreamTarget[]): UpstreamTarget | null {
  const last = tried[tried.length - 1]!;
  const now = last.endpoint.options.clock();
  const all = last.siblings;
  const from = all.indexOf(last);
  let best: UpstreamTarget | null = null;
  let bestCost = Infinity;
  for (let i = 1; i < all.length; i++) {
    const t = all[(from + i) % all.length]!;
    if (tried.includes(t)) continue;
    const cost = t.endpoint.cost(now);
    if (cost < bestCost) {
      best = t;
      bestCost = cost;
    }
  }
  return best;
}

/** The picker of one backend's endpoints (a static or external backend has one; a Service its ready ones). */
export function targetsOf(backend: BackendIR, deps: PickerDeps): TargetPicker {
  switch (backend.kind) {
    case 'static': {
      const endpoint = deps.endpoints.acquire(backend.host, backend.port, backend.tls, false, backend.protocol);
      const siblings: UpstreamTarget[] = [];
      const only: UpstreamTarget = { name: endpoint.name, host: backend.host, port: backend.port, backend, endpoint, siblings };
      siblings.push(only);
      return () => only;
    }
    case 'external': {
      // One endpoint: its pool dials the addresses the DNS cache holds for the name.
      const endpoint = deps.endpoints.acquire(backend.hostname, backend.port, backend.tls, true, backend.protocol);
      const siblings: UpstreamTarget[] = [];
      const only: UpstreamTarget = { name: endpoint.name, host: backend.hostname, port: backend.port, backend, endpoint, siblings };
      siblings.push(only);
      return () => only;
    }
    case 'service':
      return serviceTargets(backend, deps);
    case 'invalid':
      return () => INVALID_BACKEND;
  }
}

/** Pickers compiled without a runtime (routing tests) get endpoint state of their own. */
export function standalonePickerDeps(): PickerDeps {
  return {
    endpoints: new EndpointTable({ connectTimeoutMs: 5_000, clock: systemClock }),
    clock: systemClock,
    balancing: SERVICE_BALANCING,
    coolDowns: new CoolDowns({ defaultMs: DEFAULT_COOL_DOWN_MS, maxMs: DEFAULT_MAX_COOL_DOWN_MS }, systemClock),
    services: new ServiceEndpoints(),
  };
}

export function backendPicker(backends: readonly BackendIR[], deps: PickerDeps): BackendPicker {
  const live = backends.filter((b) => b.weight > 0);
  if (!live.length) return () => INVALID_BACKEND;
  const pickers = live.map((b) => targetsOf(b, deps));
  if (pickers.length === 1) return pickers[0]!;
  const cumulative: number[] = [];
  let total = 0;
  for (const b of live) cumulative.push((total += b.weight));
  return () => {
    const r = Math.random() * total;
    for (let i = 0; i < cumulative.length; i++) if (r < cumulative[i]!) return pickers[i]!();
    return pickers[pickers.length - 1]!();
  };
}
