#!/usr/bin/env node
// translate() time and heap for a cluster of 1k and 10k HTTPRoutes with 1k GatewayPolicies:
// 10 namespaces, 4 Gateways (one listener each allowing all namespaces, one of them with two
// more listeners), a Service with 3 ready endpoints per 10 routes, policies on routes and
// Gateways. Cold: every object new to translate(), as after a start; warm: the objects of the
// previous call with one HTTPRoute edited, as after one kubectl apply (translate() reuses the
// work done for objects it has seen), or with one HTTPRoute added. Prints medians; asserts nothing.
// CPU time is printed beside wall time: on a shared machine the wall clock also counts the
// time other processes held the cores. Run `pnpm build` first; `node --expose-gc
// bench/translate.mjs` for the heap figures; BENCH_ONLY=cold, warm (an edit), endpoints (one
// EndpointSlice changed), echoes (every route's and policy's status written) or add runs one of
// the five, e.g. under `node --cpu-prof`.
/* global structuredClone */
import { performance } from 'node:perf_hooks';
import { encodeSnapshot } from '../packages/api/dist/index.js';
import { translate } from '../packages/controller/dist/index.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const SIZES = (process.env.BENCH_ROUTES ?? '1000,10000').split(',').map(Number);
const POLICIES = Number(process.env.BENCH_POLICIES ?? 1000);
const ONLY = process.env.BENCH_ONLY ?? '';
const NAMESPACES = 10;
const GATEWAYS = 4;
const controllerName = 'tollgate.dev/gateway-controller';
const ts = (i) => new Date(Date.UTC(2026, 0, 1) + i * 1000).toISOString();

function resources(routes, policies) {
  const gatewayClasses = [{ apiVersion: 'gateway.networking.k8s.io/v1', kind: 'GatewayClass', metadata: { name: 'tollgate', generation: 1 }, spec: { controllerName } }];
  const gateways = Array.from({ length: GATEWAYS }, (_, g) => ({
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'Gateway',
    metadata: { name: `gw${g}`, namespace: 'infra', generation: 1, creationTimestamp: ts(0) },
    spec: {
      gatewayClassName: 'tollgate',
      listeners: [
        { name: 'http', port: 8080, protocol: 'HTTP', allowedRoutes: { namespaces: { from: 'All' } } },
        ...(g === 0
          ? [
              { name: 'api', port: 8081, protocol: 'HTTP', hostname: '*.example.com', allowedRoutes: { namespaces: { from: 'All' } } },
              { name: 'eu', port: 8081, protocol: 'HTTP', hostname: '*.eu.example.com', allowedRoutes: { namespaces: { from: 'All' } } },
            ]
          : []),
      ],
    },
  }));
  const namespaces = Array.from({ length: NAMESPACES }, (_, n) => ({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: `team-${n}`, labels: { team: String(n) } } }));
  const services = [];
  const endpointSlices = [];
  const httpRoutes = [];
  for (let i = 0; i < routes; i++) {
    const ns = `team-${i % NAMESPACES}`;
    const svc = `llm-${Math.floor(i / 10)}`;
    httpRoutes.push({
      apiVersion: 'gateway.networking.k8s.io/v1',
      kind: 'HTTPRoute',
      metadata: { name: `route-${i}`, namespace: ns, generation: 1, creationTimestamp: ts(i) },
      spec: {
        parentRefs: [{ name: `gw${i % GATEWAYS}`, namespace: 'infra' }],
        hostnames: [`r${i}.example.com`],
        rules: [
          {
            matches: [{ path: { type: 'PathPrefix', value: `/v1/${i}` }, headers: [{ name: 'x-tenant', value: String(i % 7) }] }],
            filters: [{ type: 'RequestHeaderModifier', requestHeaderModifier: { set: [{ name: 'authorization', value: `Bearer key-${i}` }] } }],
            backendRefs: [{ name: svc, port: 80, weight: 3 }, { name: `llm-${(Math.floor(i / 10) + 1) % Math.ceil(routes / 10)}`, port: 80 }],
          },
          { matches: [{ path: { type: 'Exact', value: `/models/${i}` }, method: 'GET' }], backendRefs: [{ name: svc, port: 80 }] },
        ],
      },
    });
  }
  for (let s = 0; s < Math.ceil(routes / 10); s++) {
    for (let n = 0; n < NAMESPACES; n++) {
      const ns = `team-${n}`;
      services.push({ apiVersion: 'v1', kind: 'Service', metadata: { name: `llm-${s}`, namespace: ns }, spec: { ports: [{ name: 'http', port: 80, targetPort: 9000 }] } });
      endpointSlices.push({
        apiVersion: 'discovery.k8s.io/v1',
        kind: 'EndpointSlice',
        metadata: { name: `llm-${s}-x`, namespace: ns, labels: { 'kubernetes.io/service-name': `llm-${s}` } },
        addressType: 'IPv4',
        endpoints: [1, 2, 3].map((e) => ({ addresses: [`198.18.${s % 250}.${e + n * 3}`], conditions: { ready: e !== 3 || s % 2 === 0 } })),
        ports: [{ name: 'http', port: 9000 }],
      });
    }
  }
  const gatewayPolicies = Array.from({ length: policies }, (_, p) => {
    const onGateway = p < GATEWAYS;
    const route = (p * 7) % routes;
    return {
      apiVersion: 'tollgate.dev/v1alpha1',
      kind: 'GatewayPolicy',
      metadata: { name: `policy-${p}`, namespace: onGateway ? 'infra' : `team-${route % NAMESPACES}`, generation: 1, creationTimestamp: ts(p) },
      spec: {
        targetRefs: [{ group: 'gateway.networking.k8s.io', kind: onGateway ? 'Gateway' : 'HTTPRoute', name: onGateway ? `gw${p}` : `route-${route}` }],
        traffic: { rateLimit: { local: [{ requests: 100, unit: 'Minutes', burst: 10 }, { tokens: 10_000, unit: 'Hours' }] } },
      },
    };
  });
  return { gatewayClasses, gateways, httpRoutes, grpcRoutes: [], referenceGrants: [], gatewayPolicies, backendTLSPolicies: [], services, endpointSlices, namespaces, secrets: [], configMaps: [] };
}

function mib(bytes) {
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

function run(label, n, make) {
  const times = [];
  const cpu = [];
  let result;
  globalThis.gc?.();
  const before = process.memoryUsage().heapUsed;
  for (let r = 0; r < ROUNDS; r++) {
    const input = make(r);
    result = undefined;
    const t0 = performance.now();
    const c0 = process.cpuUsage();
    result = translate(input, { controllerName, gatewayApiVersion: 'v1.6.1' });
    const c = process.cpuUsage(c0);
    times.push(performance.now() - t0);
    cpu.push((c.user + c.system) / 1000);
  }
  globalThis.gc?.();
  const held = process.memoryUsage().heapUsed - before;
  console.log(
    `${String(n).padStart(6)} HTTPRoutes, ${label}: ${median(times).toFixed(0)} ms wall (min ${Math.min(...times).toFixed(0)}, max ${Math.max(...times).toFixed(0)}), ` +
      `${median(cpu).toFixed(0)} ms CPU${globalThis.gc ? `; heap after: ${held >= 0 ? '+' : ''}${mib(held)}` : ''}`,
  );
  return result;
}

console.log(`translate(): ${ROUNDS} runs per line, median; ${POLICIES} GatewayPolicies; node ${process.version}${globalThis.gc ? '' : ' (run with --expose-gc for heap figures)'}`);
for (const n of SIZES) {
  const input = resources(n, POLICIES);
  translate(structuredClone(input), { controllerName, gatewayApiVersion: 'v1.6.1' }); // warm-up of the code, not of the caches
  // Cold: every object new to translate() (first translation after a start).
  if (!ONLY || ONLY === 'cold') run('cold (all objects new)', n, () => structuredClone(input));
  // Warm: the objects of the last call, one HTTPRoute replaced by an edited copy (one apply).
  translate(input, { controllerName, gatewayApiVersion: 'v1.6.1' });
  if (ONLY === 'cold') continue;
  let result;
  if (!ONLY || ONLY === 'warm')
    result = run('warm (one HTTPRoute changed)', n, (r) => {
      const i = (r * 7919) % input.httpRoutes.length;
      const edited = structuredClone(input.httpRoutes[i]);
      edited.spec.rules[0].backendRefs[0].weight = 3 + r + 1;
      input.httpRoutes[i] = edited;
      return { ...input, httpRoutes: [...input.httpRoutes] };
    });
  // Warm: the objects of the last call, one EndpointSlice replaced by a copy with an endpoint
  // become ready or not ready (a pod of a rollout): the routes to that Service are unchanged.
  if (!ONLY || ONLY === 'endpoints')
    result = run('warm (one EndpointSlice changed)', n, (r) => {
      const i = (r * 31) % input.endpointSlices.length;
      const edited = structuredClone(input.endpointSlices[i]);
      const e = edited.endpoints[2];
      e.conditions = { ready: !(e.conditions?.ready ?? true) };
      input.endpointSlices[i] = edited;
      return { ...input, endpointSlices: [...input.endpointSlices] };
    });
  // Warm: every HTTPRoute and GatewayPolicy replaced by the API server's echo of its status
  // write (a new object, its status and resourceVersion alone new), as after a bulk apply.
  if (!ONLY || ONLY === 'echoes')
    result = run('warm (every route and policy status written)', n, (r) => {
      const echo = (o) => ({ ...structuredClone(o), metadata: { ...structuredClone(o.metadata), resourceVersion: String(100 + r) }, status: { written: r } });
      input.httpRoutes = input.httpRoutes.map(echo);
      input.gatewayPolicies = input.gatewayPolicies.map(echo);
      return { ...input };
    });
  // Warm: the objects of the last call and one new HTTPRoute, the newest (one route created).
  if (ONLY !== 'warm' && ONLY !== 'endpoints' && ONLY !== 'echoes') {
    const template = input.httpRoutes[0];
    result = run('warm (one HTTPRoute added)', n, (r) => {
      const added = structuredClone(template);
      added.metadata = { ...added.metadata, name: `added-${n}-${r}`, creationTimestamp: ts(1_000_000 + r) };
      input.httpRoutes.push(added);
      return { ...input, httpRoutes: [...input.httpRoutes] };
    });
    input.httpRoutes.splice(n);
  }
  const routesOut = [...result.snapshots.values()].reduce((a, s) => a + s.binds.reduce((b, x) => b + x.listeners.reduce((c, l) => c + l.routes.length, 0), 0), 0);
  const t0 = performance.now();
  const bytes = [...result.snapshots.values()].reduce((a, s) => a + encodeSnapshot(s).length, 0);
  const encodeMs = performance.now() - t0;
  const attached = [...result.status.gatewayPolicies.values()].filter((p) => p.ancestors.some((a) => a.conditions.every((c) => c.status === 'True'))).length;
  console.log(`        ${result.snapshots.size} snapshots, ${routesOut} IR routes, ${attached} policies attached; the snapshots encode to ${mib(bytes)} in ${encodeMs.toFixed(0)} ms`);
}
