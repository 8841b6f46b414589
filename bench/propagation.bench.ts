// Snapshot propagation on a real kube-apiserver: the controller out of cluster, proxy processes
// in cluster mode (each in its own network namespace, e2e/snapshot-propagation-harness.ts),
// a fixed-response backend behind a Service and an EndpointSlice. Printed, not asserted.
// Run through `node bench/propagation.mjs` (flags there), which sets the BENCH_* variables.
//
// - Route propagation: HTTPRoutes created one at a time (POST to the API server), each timed
//   from the POST to the first 200 through a proxy that polls it back to back; any answer other
//   than 404 (not there yet) or 200 is an error. Per route, the time is split by the log
//   timestamps: API server (POST), controller (stored -> `new snapshot`), delivery (-> the
//   proxy's `serving snapshot`: push, decode, validate, compile, swap), first 200.
// - Policy propagation: a GatewayPolicy merge-patched, timed from the PATCH to the moment every
//   proxy serves the new version (the last proxy's `serving snapshot` line; its ACK follows at
//   once) and to the controller's metrics showing every ACK, for each proxy count.
// - Budget propagation: the same, for an edit of a keyed token budget (`by: { type: Consumer }`,
//   a budget per consumer) in that GatewayPolicy: the size of everyone's daily budget changes.
import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer, get as httpGet, type Server } from 'node:http';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { send } from '@tollgate/testkit';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { sumMetric } from '../e2e/controller-process.js';
import { run } from '../e2e/lib/exec.js';
import { e2eAvailability } from '../e2e/lib/tools.js';
import { useCluster } from '../e2e/lib/use-cluster.js';
import { canIsolateProxies, PROXY_PORTS, SnapshotFleet, type ProxyProcess } from '../e2e/snapshot-propagation-harness.js';
import { createAll, httpRoute, KubeApi, pct, routesPath } from './propagation-kube.js';

const NS = 'bench';
const GATEWAY = `${NS}/gw`;
const PORT = 8080;
const ROUTES = Number(process.env.BENCH_ROUTES ?? 300);
/** Routes created in bulk before the one-at-a-time part (so that part is timed at a size). */
const PREFILL = Number(process.env.BENCH_PREFILL ?? 0);
const POLICY_ROUTES = (process.env.BENCH_POLICY_ROUTES ?? '1000').split(',').map(Number);
const PROXIES = (process.env.BENCH_PROXIES ?? '1,10').split(',').map(Number);
const PATCHES = Number(process.env.BENCH_PATCHES ?? 20);
/** Pause after each route's first 200 (or patch's ACKs) before the next apply (0: back to back). */
const GAP_MS = Number(process.env.BENCH_GAP_MS ?? 0);
const PARTS = new Set((process.env.BENCH_ONLY ?? 'routes,policy,budget').split(','));
/** Where to write CPU profiles (pprof format) of the controller and the proxy taken during the timed routes. */
const PROFILE_DIR = process.env.BENCH_PROFILE_DIR;
const PROFILE_SECONDS = Number(process.env.BENCH_PROFILE_SECONDS ?? 60);
/** Threads of each proxy (its --workers). */
const PROXY_WORKERS = Number(process.env.BENCH_PROXY_WORKERS ?? 1);
/** Longest wait for one route or one patch before it counts as an error. */
const GIVE_UP_MS = 30_000;

const ms = (x: number) => `${x.toFixed(0)} ms`;
/** The machine's load average, printed beside each figure (the figures depend on it). */
const load = () => `load average ${loadavg().map((x) => x.toFixed(1)).join(', ')}`;
const summary = (xs: readonly number[]) => `p50 ${ms(pct(xs, 50))}, p99 ${ms(pct(xs, 99))}, max ${ms(Math.max(...xs))}`;
// pino's isoTime: an ISO 8601 string, millisecond precision.
const logTime = (l: Record<string, unknown>) => Date.parse(String(l.time));

describe.runIf(e2eAvailability().run && canIsolateProxies())('snapshot propagation', () => {
  const cluster = useCluster({ tollgateCrds: false });
  let fleet: SnapshotFleet;
  let api: KubeApi;
  let backend: Server;
  let routes = 0;

  const kubectl = (args: string[], input?: string) => run(cluster.current.tools.kubectl, args, { env: cluster.current.env, input, timeoutMs: 600_000 });

  beforeAll(async () => {
    fleet = await SnapshotFleet.start(cluster.current, { gateway: GATEWAY, controllerArgs: ['--log-level=info'], proxyWorkers: PROXY_WORKERS });
    api = new KubeApi(cluster.current);
    backend = createServer((_req, res) => res.end('ok'));
    await new Promise<void>((r) => backend.listen(0, fleet.net.hostAddress, r));
    const port = (backend.address() as { port: number }).port;
    await kubectl(['create', 'namespace', NS]);
    await kubectl(
      ['apply', '-f', '-'],
      `apiVersion: v1
kind: Service
metadata: { name: be, namespace: ${NS} }
spec: { ports: [ { name: http, port: 80, targetPort: ${port} } ] }
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: { name: be-1, namespace: ${NS}, labels: { kubernetes.io/service-name: be } }
addressType: IPv4
ports: [ { name: http, port: ${port}, protocol: TCP } ]
endpoints: [ { addresses: [ ${fleet.net.hostAddress} ], conditions: { ready: true } } ]
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: { name: gw, namespace: ${NS} }
spec:
  gatewayClassName: tollgate
  listeners: [ { name: http, protocol: HTTP, port: ${PORT} } ]
---
apiVersion: tollgate.dev/v1alpha1
kind: GatewayPolicy
metadata: { name: limits, namespace: ${NS} }
spec:
  targetRefs: [ { group: gateway.networking.k8s.io, kind: Gateway, name: gw } ]
  traffic: { rateLimit: { local: [ { requests: 1000000, unit: Hours } ] } }
`,
    );
    await fleet.nextVersion(0);
    await fleet.startProxy();
    await fleet.waitSettled(1);
  }, 300_000);

  afterAll(async () => {
    api?.close();
    await fleet?.stop();
    backend?.close();
  });

  /** The proxy's admin server answers loopback Host names only. */
  const PROXY_ADMIN_HOST = { host: `127.0.0.1:${PROXY_PORTS.admin}` };

  /** A 200 answer's body from an admin server. node:http, not fetch: fetch does not send a Host header of the caller's choosing. */
  function adminGet(what: string, url: string, headers: Record<string, string> = {}): Promise<Buffer> {
    return new Promise<Buffer>((resolve, reject) => {
      httpGet(url, { headers }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => (res.statusCode === 200 ? resolve(Buffer.concat(chunks)) : reject(new Error(`${what}: ${res.statusCode} ${Buffer.concat(chunks).toString()}`))));
      }).on('error', reject);
    });
  }

  /** CPU profiles of the controller and one proxy over PROFILE_SECONDS, written to `dir`. */
  async function takeProfiles(dir: string, proxy: ProxyProcess): Promise<void> {
    mkdirSync(dir, { recursive: true });
    const take = async (name: string, url: string, headers: Record<string, string> = {}) => {
      const body = await adminGet(`${name} profile`, `${url}/debug/pprof/profile?seconds=${PROFILE_SECONDS}`, headers);
      const file = join(dir, `${name}.pb.gz`);
      writeFileSync(file, body);
      console.log(`  ${name} CPU profile (${PROFILE_SECONDS} s): ${file} (go tool pprof -top ${file})`);
    };
    await Promise.all([
      take('controller', `http://${fleet.controller.admin}`),
      take(proxy.name, proxy.adminUrl, PROXY_ADMIN_HOST),
    ]);
  }

  async function addRoutesUpTo(n: number): Promise<void> {
    if (n <= routes) return;
    const from = fleet.controller.lines.length;
    const objects = Array.from({ length: n - routes }, (_, k) => httpRoute(NS, `r${routes + k}`, 'gw', `/r${routes + k}/`, 'be'));
    await createAll(api, () => routesPath(NS), objects);
    routes = n;
    await fleet.nextVersion(from, 300_000);
    // Settled: the newest version includes every route once the last route answers.
    const last = fleet.proxies[0]!;
    for (const deadline = Date.now() + 600_000; (await send(last.url(PORT, `/r${n - 1}/x`))).status !== 200; ) {
      if (Date.now() > deadline) throw new Error(`route r${n - 1} never served`);
      await new Promise((r) => setTimeout(r, 50));
    }
    await fleet.waitSettled(fleet.proxies.length, 600_000);
  }

  it.runIf(PARTS.has('routes'))('route propagation: apply to first 200, one route at a time', { timeout: 24 * 3600_000 }, async () => {
    if (PREFILL) await addRoutesUpTo(Math.min(PREFILL, ROUTES));
    const proxy = fleet.proxies[0]!;
    const total: number[] = [];
    const stored: number[] = [];
    const stage = { api: [] as number[], controller: [] as number[], delivery: [] as number[], first200: [] as number[] };
    let errors = 0;
    let lastPrint = performance.now();
    const window: number[] = [];
    console.log(`route propagation: HTTPRoutes ${routes + 1} to ${ROUTES} added one at a time to ${GATEWAY}, 1 proxy, ${GAP_MS} ms between a route's first 200 and the next apply`);
    const metricsBefore = await fleet.controller.metrics();
    const profiles = PROFILE_DIR ? takeProfiles(PROFILE_DIR, proxy) : Promise.resolve();
    for (let i = routes; i < ROUTES; i++) {
      const fromController = fleet.controller.lines.length;
      const fromProxy = proxy.lines.length;
      const wall0 = Date.now();
      const t0 = performance.now();
      await api.create(routesPath(NS), httpRoute(NS, `r${i}`, 'gw', `/r${i}/`, 'be'));
      const t1 = performance.now();
      const wall1 = Date.now();
      let ok = false;
      while (performance.now() - t0 < GIVE_UP_MS) {
        const status = await send(proxy.url(PORT, `/r${i}/x`)).then(
          (r) => r.status,
          () => -1,
        );
        if (status === 200) {
          ok = true;
          break;
        }
        if (status !== 404) errors++;
      }
      const t2 = performance.now();
      routes = i + 1;
      if (!ok) {
        errors++;
        continue;
      }
      total.push(t2 - t0);
      stored.push(t2 - t1);
      window.push(t2 - t0);
      // The stages, from the processes' own log timestamps (one clock: the same machine).
      const built = fleet.controller.lines.slice(fromController).find((l) => l.msg === 'new snapshot' && l.gateway === GATEWAY);
      const served = built && proxy.lines.slice(fromProxy).find((l) => l.msg === `serving snapshot ${String(built.version)} from the controller`);
      if (built && served) {
        const wall2 = wall0 + (t2 - t0);
        stage.api.push(wall1 - wall0);
        stage.controller.push(logTime(built) - wall1);
        stage.delivery.push(logTime(served) - logTime(built));
        stage.first200.push(wall2 - logTime(served));
      }
      if (GAP_MS) await new Promise((r) => setTimeout(r, GAP_MS));
      if ((i + 1) % 250 === 0 || performance.now() - lastPrint > 60_000) {
        console.log(`  routes ${String(i + 1).padStart(5)}: last ${window.length}: ${summary(window)}`);
        window.length = 0;
        lastPrint = performance.now();
      }
    }
    console.log(`  apply (POST start) -> first 200: ${summary(total)}; errors ${errors}; ${load()}`);
    console.log(`  stored (POST done) -> first 200: ${summary(stored)}`);
    console.log(`  stages (p50 / p99): API POST ${ms(pct(stage.api, 50))} / ${ms(pct(stage.api, 99))}; ` +
      `controller (watch, debounce, translate) ${ms(pct(stage.controller, 50))} / ${ms(pct(stage.controller, 99))}; ` +
      `delivery (push, decode, validate, compile, swap) ${ms(pct(stage.delivery, 50))} / ${ms(pct(stage.delivery, 99))}; ` +
      `to the first 200 ${ms(pct(stage.first200, 50))} / ${ms(pct(stage.first200, 99))} (${stage.api.length} routes with both log lines)`);
    await profiles;
    const metricsAfter = await fleet.controller.metrics();
    const delta = (name: string) => sumMetric(metricsAfter, name) - sumMetric(metricsBefore, name);
    const runs = delta('tollgate_controller_reconcile_duration_seconds_count');
    console.log(`  controller: ${runs} reconciles, mean ${ms((delta('tollgate_controller_reconcile_duration_seconds_sum') / runs) * 1000)} each (translate, snapshots, status)`);
  });

  const LIMITS_PATH = `/apis/tollgate.dev/v1alpha1/namespaces/${NS}/gatewaypolicies/limits`;
  /** Every patch differs from the one before it, whatever the part, route count and proxy count. */
  let patchNo = 0;

  /**
   * Times PATCHES merge patches of the `limits` GatewayPolicy at each (routes, proxies) pair:
   * from the PATCH to every proxy serving the version it made (the last proxy's `serving
   * snapshot` line) and to the controller's metrics showing every ACK.
   */
  async function timePatches(what: string, patch: (n: number) => object): Promise<void> {
    for (const r of POLICY_ROUTES) {
      await addRoutesUpTo(r);
      for (const n of PROXIES) {
        while (fleet.proxies.length < n) await fleet.startProxy();
        while (fleet.proxies.length > n) await fleet.removeProxy(fleet.proxies.at(-1)!);
        await fleet.waitSettled(n, 600_000);
        const serving: number[] = [];
        const acked: number[] = [];
        let errors = 0;
        for (let k = 0; k < PATCHES; k++) {
          // Before each patch (the first too: creating the routes and proxies was a burst).
          if (GAP_MS) await new Promise((r) => setTimeout(r, GAP_MS));
          const from = fleet.controller.lines.length;
          const fromProxy = fleet.proxies.map((p: ProxyProcess) => p.lines.length);
          const wall0 = Date.now();
          const t0 = performance.now();
          await api.mergePatch(LIMITS_PATH, patch(++patchNo));
          try {
            const version = await fleet.nextVersion(from, GIVE_UP_MS);
            const lines = await Promise.all(fleet.proxies.map((p, i) => p.waitForLog((l) => l.msg === `serving snapshot ${version} from the controller`, GIVE_UP_MS, fromProxy[i])));
            serving.push(Math.max(...lines.map(logTime)) - wall0);
            await fleet.waitAcked(version, n, GIVE_UP_MS);
            acked.push(performance.now() - t0);
          } catch {
            errors++;
          }
        }
        console.log(`${what} propagation: ${r} routes, ${n} prox${n === 1 ? 'y' : 'ies'}, ${PATCHES} patches, ${GAP_MS} ms between an ACK and the next patch`);
        console.log(`  PATCH -> every proxy serving it: ${summary(serving)}; errors ${errors}; ${load()}`);
        console.log(`  PATCH -> every ACK seen in the controller's metrics (polled): ${summary(acked)}`);
      }
    }
  }

  it.runIf(PARTS.has('policy'))('policy propagation: GatewayPolicy patch to every proxy ACKed', { timeout: 24 * 3600_000 }, async () => {
    await timePatches('policy', (n) => ({ spec: { traffic: { rateLimit: { local: [{ requests: 1000 + n, unit: 'Hours' }] } } } }));
  });

  // A consumer budget edit: the Gateway's policy keeps a token budget per consumer (a keyed
  // entry, one budget per key value in each proxy), and each patch changes its size, as an
  // operator raising everyone's daily budget would. The first patch of the part adds the entry.
  it.runIf(PARTS.has('budget'))('budget propagation: a keyed token budget edit to every proxy ACKed', { timeout: 24 * 3600_000 }, async () => {
    const budget = (n: number) => ({
      spec: {
        traffic: {
          rateLimit: {
            local: [
              { requests: 1000000, unit: 'Hours' },
              { tokens: 100000 + n, unit: 'Days', by: { type: 'Consumer' } },
            ],
          },
        },
      },
    });
    await timePatches('budget', budget);
    // What the proxies enforce now: the gateway-level policy of each carries the last budget.
    const last = 100000 + patchNo;
    const carrying = await Promise.all(
      fleet.proxies.map(async (p) => {
        const dump = JSON.parse((await adminGet(`${p.name} config_dump`, `${p.adminUrl}/config_dump`, PROXY_ADMIN_HOST)).toString()) as {
          policies: { level: string; policy: { localRateLimit?: { kind: string; tokens?: number; by?: { type: string } }[] | null } }[];
        };
        return dump.policies.some((x) => x.level === 'gateway' && x.policy.localRateLimit?.some((e) => e.kind === 'tokens' && e.tokens === last && e.by?.type === 'Consumer'));
      }),
    );
    console.log(`  proxies whose config_dump has the last budget (tokens ${last} by Consumer): ${carrying.filter(Boolean).length} of ${carrying.length}`);
  });
});
