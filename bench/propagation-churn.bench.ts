// Scale and churn: HTTPRoutes spread over namespaces (each with its Service and EndpointSlice),
// one Gateway accepting routes from all of them, proxy processes in cluster mode, and the
// EndpointSlices changing continuously at a bounded rate for BENCH_MINUTES. Every interval it
// prints, for the controller and each proxy, the lowest heap-used sample of the interval (from
// their own /metrics, sampled every second: the trough approximates the heap right after a GC;
// a forced GC would need the inspector), the RSS and the CPU used. Printed, not asserted. Run through `node bench/propagation-churn.mjs`.
import { afterAll, beforeAll, describe, it } from 'vitest';
import { sumMetric } from '../e2e/controller-process.js';
import { run } from '../e2e/lib/exec.js';
import { e2eAvailability } from '../e2e/lib/tools.js';
import { useCluster } from '../e2e/lib/use-cluster.js';
import { canIsolateProxies, PROXY_PORTS, SnapshotFleet } from '../e2e/snapshot-propagation-harness.js';
import { createAll, httpRoute, KubeApi, routesPath } from './propagation-kube.js';

const MINUTES = Number(process.env.BENCH_MINUTES ?? 2);
const ROUTES = Number(process.env.BENCH_ROUTES ?? 500);
const NAMESPACES = Number(process.env.BENCH_NAMESPACES ?? 10);
const PROXIES = Number(process.env.BENCH_PROXIES ?? 2);
/** EndpointSlice updates per second (bounded load). */
const RATE = Number(process.env.BENCH_RATE ?? 5);
const INTERVAL_S = Number(process.env.BENCH_INTERVAL ?? 30);
const GW_NS = 'churn';

const mib = (b: number) => `${(b / 1048576).toFixed(1)}`;

interface Sample {
  heap: number;
  rss: number;
  cpu: number;
}

/** `prefix`: the proxy registers Node's default metrics as tollgate_process_*. */
async function sample(url: string, prefix: string): Promise<Sample> {
  const text = await (await fetch(url)).text();
  return { heap: sumMetric(text, `${prefix}nodejs_heap_size_used_bytes`), rss: sumMetric(text, `${prefix}process_resident_memory_bytes`), cpu: sumMetric(text, `${prefix}process_cpu_seconds_total`) };
}

describe.runIf(e2eAvailability().run && canIsolateProxies())('scale and churn', () => {
  const cluster = useCluster({ tollgateCrds: false });
  let fleet: SnapshotFleet;
  let api: KubeApi;
  const kubectl = (args: string[], input?: string) => run(cluster.current.tools.kubectl, args, { env: cluster.current.env, input, timeoutMs: 600_000 });

  beforeAll(async () => {
    fleet = await SnapshotFleet.start(cluster.current, { gateway: `${GW_NS}/gw`, controllerArgs: ['--log-level=info'] });
    api = new KubeApi(cluster.current);
    const docs = [`apiVersion: v1\nkind: Namespace\nmetadata: { name: ${GW_NS} }`];
    for (let n = 0; n < NAMESPACES; n++) {
      docs.push(`apiVersion: v1\nkind: Namespace\nmetadata: { name: ns${n} }`);
      docs.push(`apiVersion: v1
kind: Service
metadata: { name: be, namespace: ns${n} }
spec: { ports: [ { name: http, port: 80, targetPort: 8080 } ] }`);
      docs.push(`apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: { name: be-1, namespace: ns${n}, labels: { kubernetes.io/service-name: be } }
addressType: IPv4
ports: [ { name: http, port: 8080, protocol: TCP } ]
endpoints: [ { addresses: [ 198.18.${fleet.net.prefix.split('.')[2]}.200 ], conditions: { ready: true } } ]`);
    }
    docs.push(`apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: { name: gw, namespace: ${GW_NS} }
spec:
  gatewayClassName: tollgate
  listeners: [ { name: http, protocol: HTTP, port: 8080, allowedRoutes: { namespaces: { from: All } } } ]`);
    await kubectl(['apply', '-f', '-'], docs.join('\n---\n'));
    const objects = Array.from({ length: ROUTES }, (_, i) => httpRoute(`ns${i % NAMESPACES}`, `r${i}`, 'gw', `/r${i}/`, 'be'));
    for (const o of objects) (o.spec.parentRefs[0] as Record<string, string>).namespace = GW_NS;
    await createAll(api, (o) => routesPath(o.metadata.namespace), objects);
    for (let i = 0; i < PROXIES; i++) await fleet.startProxy();
    await fleet.nextVersion(0, 300_000);
    await fleet.waitSettled(PROXIES, 600_000);
  }, 900_000);

  afterAll(async () => {
    api?.close();
    await fleet?.stop();
  });

  it('memory and CPU under endpoint churn', { timeout: (MINUTES + 10) * 60_000 }, async () => {
    const targets = [
      { name: 'controller', url: () => `http://${fleet.controller.metricsAddr}/metrics`, prefix: '' },
      ...fleet.proxies.map((p) => ({ name: p.name, url: () => `http://${p.address}:${PROXY_PORTS.metrics}/metrics`, prefix: 'tollgate_process_' })),
    ];
    const end = Date.now() + MINUTES * 60_000;
    let updates = 0;
    let failures = 0;
    const churn = (async () => {
      const third = fleet.net.prefix.split('.')[2];
      for (let k = 0; Date.now() < end; k++) {
        const t = performance.now();
        const ns = `ns${k % NAMESPACES}`;
        // Two to four endpoints, one of them not ready, at changing addresses (never dialed).
        const count = 2 + (k % 3);
        const endpoints = Array.from({ length: count }, (_, e) => ({ addresses: [`198.18.${third}.${100 + ((k + e * 7) % 100)}`], conditions: { ready: e !== 0 } }));
        await api.mergePatch(`/apis/discovery.k8s.io/v1/namespaces/${ns}/endpointslices/be-1`, { endpoints }).then(
          () => updates++,
          () => failures++,
        );
        const wait = 1000 / RATE - (performance.now() - t);
        if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      }
    })();
    console.log(`churn: ${ROUTES} routes in ${NAMESPACES} namespaces, ${PROXIES} proxies, ${RATE} EndpointSlice updates/s for ${MINUTES} min`);
    console.log('  minute  process      heap low MiB       RSS MiB  CPU %   (updates so far)');
    const first = new Map<string, number>();
    const last = new Map<string, number>();
    const cpuBefore = new Map<string, number>();
    for (const t of targets) cpuBefore.set(t.name, (await sample(t.url(), t.prefix)).cpu);
    while (Date.now() < end) {
      const windowEnd = Math.min(end, Date.now() + INTERVAL_S * 1000);
      const lows = new Map<string, Sample>();
      while (Date.now() < windowEnd) {
        for (const t of targets) {
          const s = await sample(t.url(), t.prefix).catch(() => null);
          if (!s) continue;
          const low = lows.get(t.name);
          lows.set(t.name, { heap: Math.min(low?.heap ?? Infinity, s.heap), rss: s.rss, cpu: s.cpu });
        }
        await new Promise((r) => setTimeout(r, 1000));
      }
      const minute = ((MINUTES * 60_000 - (end - Date.now())) / 60_000).toFixed(1);
      for (const [name, s] of lows) {
        const cpuPct = ((s.cpu - cpuBefore.get(name)!) / INTERVAL_S) * 100;
        cpuBefore.set(name, s.cpu);
        if (!first.has(name)) first.set(name, s.heap);
        last.set(name, s.heap);
        console.log(`  ${minute.padStart(6)}  ${name.padEnd(11)}  ${mib(s.heap).padStart(17)}  ${mib(s.rss).padStart(7)}  ${cpuPct.toFixed(0).padStart(5)}   (${updates})`);
      }
    }
    await churn;
    console.log(`  ${updates} EndpointSlice updates, ${failures} failed`);
    for (const [name, h] of last) console.log(`  ${name}: heap low ${mib(first.get(name)!)} MiB in the first interval, ${mib(h)} MiB in the last (${(((h - first.get(name)!) / first.get(name)!) * 100).toFixed(1)}%)`);
  });
});
