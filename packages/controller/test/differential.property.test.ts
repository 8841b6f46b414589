// Property: one IR, two front ends. A generated standalone config and the Kubernetes objects
// that say the same thing (a Gateway listener per config listener, an HTTPRoute per config
// route, Services whose ready endpoints are the config's backends, GatewayPolicies for the
// config's policies) compile to proxies that, for every generated request, select the same
// listener policy, route, route policy and weighted endpoints.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { standaloneToSnapshot, validateStandaloneConfig, type BackendIR, type PolicyIR } from '@tollgate/api';
import { compileSnapshot, selectRoute, type CompiledSnapshot } from '@tollgate/proxy';
import type { V1EndpointSlice, V1Service } from '@kubernetes/client-node';
import { translate } from '../src/translate/index.js';
import type { Gateway, GatewayPolicy, HTTPRoute } from '../src/types/gateway-api.js';
import { CONTROLLER_NAME, emptyResources } from './support.js';

const LISTENER_HOSTS = [null, 'a.example.com', '*.example.com', '*.a.example.com'];
const ROUTE_HOSTS = ['a.example.com', '*.example.com', 'b.a.example.com', '*.a.example.com', 'other.org'];
const REQ_HOSTS = ['a.example.com', 'b.a.example.com', 'c.example.com', 'other.org', 'x.y.a.example.com'];
const PATHS = ['/', '/a', '/a/b', '/ab', '/v1/chat'];
const BACKENDS = ['198.18.0.1:9000', '198.18.0.2:9000', '198.18.0.3:9001', '198.18.1.4:8080'];
const PORTS = [8080, 8081];

const arbLimit = fc.oneof(
  fc.record({ requests: fc.integer({ min: 1, max: 100 }), unit: fc.constantFrom('Seconds', 'Minutes'), burst: fc.integer({ min: 0, max: 5 }) }),
  fc.record({ tokens: fc.integer({ min: 1, max: 1000 }), unit: fc.constantFrom('Minutes', 'Hours') }),
);
const arbPolicies = fc.option(fc.record({ traffic: fc.record({ rateLimit: fc.record({ local: fc.array(arbLimit, { minLength: 1, maxLength: 2 }) }) }) }), { nil: undefined });

const arbMatch = fc.record(
  {
    path: fc.oneof(
      fc.constantFrom(...PATHS).map((value) => ({ type: 'PathPrefix' as const, value })),
      fc.constantFrom(...PATHS).map((value) => ({ type: 'Exact' as const, value })),
      fc.constant({ type: 'RegularExpression' as const, value: '/a/.*' }),
    ),
    method: fc.constantFrom('GET', 'POST'),
    headers: fc.subarray([{ name: 'x-a', value: '1' }]),
  },
  { requiredKeys: ['path'] },
);

const arbRoute = fc.record({
  hostnames: fc.subarray(ROUTE_HOSTS, { maxLength: 2 }),
  matches: fc.array(arbMatch, { maxLength: 2 }),
  backends: fc.subarray(BACKENDS, { minLength: 1, maxLength: 3 }).chain((hosts) =>
    fc.tuple(...hosts.map((host) => fc.integer({ min: 0, max: 3 }).map((weight) => ({ host, weight })))),
  ),
  policies: arbPolicies,
});

const arbListeners = fc.uniqueArray(fc.constantFrom(...LISTENER_HOSTS), { minLength: 1, maxLength: 3 }).chain((hosts) =>
  fc.tuple(...hosts.map((hostname) => fc.record({ hostname: fc.constant(hostname), policies: arbPolicies, routes: fc.array(arbRoute, { minLength: 1, maxLength: 3 }) }))),
);

const arbConfig = fc.uniqueArray(fc.constantFrom(...PORTS), { minLength: 1, maxLength: 2 }).chain((ports) => fc.tuple(...ports.map((port) => arbListeners.map((listeners) => ({ port, listeners })))));

type ValueOf<A> = A extends fc.Arbitrary<infer T> ? T : never;
type GenConfig = ValueOf<typeof arbConfig>;

const arbRequest = fc.record({
  port: fc.constantFrom(...PORTS),
  host: fc.constantFrom(...REQ_HOSTS),
  path: fc.constantFrom(...PATHS, '/a/x', '/v1/chat/completions'),
  method: fc.constantFrom('GET', 'POST'),
  headers: fc.constantFrom({}, { 'x-a': '1' }),
});

/** Listener and route names, as both front ends will know them. */
function named(cfg: GenConfig) {
  return cfg.flatMap((bind, b) =>
    bind.listeners.map((l, li) => ({ ...l, port: bind.port, name: `l${b}${li}`, routes: l.routes.map((r, ri) => ({ ...r, name: `r${ri}` })) })),
  );
}

function standalone(cfg: GenConfig): CompiledSnapshot {
  const listeners = named(cfg);
  const config = validateStandaloneConfig({
    binds: cfg.map((bind) => ({
      port: bind.port,
      address: '127.0.0.1',
      listeners: listeners
        .filter((l) => l.port === bind.port)
        .map((l) => ({
          name: l.name,
          protocol: 'HTTP',
          ...(l.hostname ? { hostname: l.hostname } : {}),
          ...(l.policies ? { policies: l.policies } : {}),
          routes: l.routes.map((r) => ({
            name: r.name,
            ...(r.hostnames.length ? { hostnames: r.hostnames } : {}),
            ...(r.matches.length ? { matches: r.matches } : {}),
            ...(r.policies ? { policies: r.policies } : {}),
            backends: r.backends,
          })),
        })),
    })),
  });
  return compileSnapshot(standaloneToSnapshot(config, { kind: 'file', path: 'generated.yaml' }));
}

const NS = 'default';
const meta = (name: string, i = 0) => ({ name, namespace: NS, generation: 1, creationTimestamp: new Date(Date.UTC(2026, 0, 1, 0, 0, i)).toISOString() });
const serviceName = (host: string) => `b-${host.replace(/[.:]/g, '-')}`;

function cluster(cfg: GenConfig): CompiledSnapshot {
  const listeners = named(cfg);
  const r = emptyResources();
  r.gatewayClasses.push({ apiVersion: 'gateway.networking.k8s.io/v1', kind: 'GatewayClass', metadata: { name: 'tollgate', generation: 1 }, spec: { controllerName: CONTROLLER_NAME } });
  const gateway: Gateway = {
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'Gateway',
    metadata: meta('gw'),
    spec: { gatewayClassName: 'tollgate', listeners: listeners.map((l) => ({ name: l.name, port: l.port, protocol: 'HTTP', ...(l.hostname ? { hostname: l.hostname } : {}) })) },
  };
  r.gateways.push(gateway);
  // A Service per backend address, its one ready endpoint being that address.
  for (const host of BACKENDS) {
    const [address, port] = host.split(':') as [string, string];
    const svc: V1Service = { apiVersion: 'v1', kind: 'Service', metadata: { name: serviceName(host), namespace: NS }, spec: { ports: [{ name: 'http', port: 80 }] } };
    const slice: V1EndpointSlice = {
      apiVersion: 'discovery.k8s.io/v1',
      kind: 'EndpointSlice',
      metadata: { name: `${serviceName(host)}-1`, namespace: NS, labels: { 'kubernetes.io/service-name': serviceName(host) } },
      addressType: 'IPv4',
      endpoints: [{ addresses: [address], conditions: { ready: true } }],
      ports: [{ name: 'http', port: Number(port) }],
    };
    r.services.push(svc);
    r.endpointSlices.push(slice);
  }
  let age = 0;
  for (const l of listeners) {
    if (l.policies) r.gatewayPolicies.push(policy(`${l.name}-policy`, 'Gateway', 'gw', l.name, l.policies.traffic));
    for (const route of l.routes) {
      const name = `${l.name}-${route.name}`;
      // Standalone breaks precedence ties by config order; Gateway API by age: the same order here.
      const httpRoute: HTTPRoute = {
        apiVersion: 'gateway.networking.k8s.io/v1',
        kind: 'HTTPRoute',
        metadata: meta(name, age++),
        spec: {
          parentRefs: [{ name: 'gw', sectionName: l.name }],
          ...(route.hostnames.length ? { hostnames: route.hostnames } : {}),
          rules: [{ ...(route.matches.length ? { matches: route.matches } : {}), backendRefs: route.backends.map((b) => ({ name: serviceName(b.host), port: 80, weight: b.weight })) }],
        },
      };
      r.httpRoutes.push(httpRoute);
      if (route.policies) r.gatewayPolicies.push(policy(`${name}-policy`, 'HTTPRoute', name, undefined, route.policies.traffic));
    }
  }
  const result = translate(r, { controllerName: CONTROLLER_NAME, gatewayApiVersion: 'v1.6.1' });
  const snap = result.snapshots.get(`${NS}/gw`);
  if (!snap) throw new Error(`no snapshot: ${JSON.stringify(Object.fromEntries(result.status.gateways))}`);
  return compileSnapshot(snap);
}

function policy(name: string, kind: 'Gateway' | 'HTTPRoute', target: string, sectionName: string | undefined, traffic: GatewayPolicy['spec']['traffic']): GatewayPolicy {
  return {
    apiVersion: 'tollgate.dev/v1alpha1',
    kind: 'GatewayPolicy',
    metadata: meta(name),
    spec: { targetRefs: [{ group: 'gateway.networking.k8s.io', kind, name: target, ...(sectionName ? { sectionName } : {}) }], traffic },
  };
}

/** What a request meets, in front-end-neutral terms. */
function outcome(snap: CompiledSnapshot, req: ValueOf<typeof arbRequest>, routeName: (name: string) => string) {
  const listener = snap.binds.get(req.port)?.listeners.first(req.host);
  if (!listener) return { listener: null };
  const hit = selectRoute(listener, req.host, { method: req.method, path: req.path, query: '', headers: req.headers });
  const limits = (p: PolicyIR | null) => p?.localRateLimit ?? null;
  // A Service's endpoints are the snapshot's entry of its name.
  const ready = (name: string) => snap.ir.endpoints?.find((e) => e.name === name)?.endpoints ?? [];
  const endpoints = (backends: readonly BackendIR[]) =>
    backends
      .flatMap((b) =>
        b.kind === 'static' ? [`${b.name} w${b.weight}`] : b.kind === 'service' ? ready(b.name).map((e) => `${e.address}:${e.port} w${b.weight}`) : [`invalid w${b.weight}`],
      )
      .sort();
  return {
    listener: listener.ir.name,
    listenerPolicy: limits(listener.ir.policy),
    route: hit ? routeName(hit.route.ir.name) : null,
    routePolicy: hit ? limits(hit.route.ir.policy) : null,
    endpoints: hit ? endpoints(hit.route.ir.backends) : null,
  };
}

describe('standalone and Kubernetes front ends (differential property)', () => {
  it('select the same route, policies and endpoints for every request', () => {
    fc.assert(
      fc.property(arbConfig, fc.array(arbRequest, { minLength: 1, maxLength: 12 }), (cfg, requests) => {
        const a = standalone(cfg);
        const b = cluster(cfg);
        for (const req of requests) {
          // `<listener>/<route>` in the file; `default/<listener>-<route>/rule/0` from the controller.
          const fromFile = outcome(a, req, (n) => n.replace('/', '-'));
          const fromCluster = outcome(b, req, (n) => n.replace(/^default\/(.*)\/rule\/0$/, '$1'));
          expect(fromCluster).toEqual(fromFile);
        }
      }),
      { numRuns: 300 },
    );
  });
});
