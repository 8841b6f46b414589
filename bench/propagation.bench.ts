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
// - Churn (BENCH_ONLY=churn): with BENCH_ROUTES routes present, for BENCH_CHURN_SECONDS,
//   client loops (CHURN_CLIENTS, one request in flight each) send requests spread over the
//   routes through the proxies, and every answer other than 200 is an error, while the
//   Service's endpoints roll as a Deployment's rollout rolls them (a new backend ready, the
//   oldest marked terminating, then removed; every third roll replaces the EndpointSlice by one
//   of a new name, created before the old one is deleted), routes are edited (a filter, a
//   header match, another path match; each edit still matches the traffic) and routes are
//   added. The backends are HTTP servers on distinct host addresses and one port; a removed
//   one stops only once every proxy serves a snapshot without it (a pod's grace period), so
//   an error is the gateway's, not the bench's.
import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer, get as httpGet, type IncomingMessage, type Server } from 'node:http';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { send } from '@tollgate/testkit';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { sumMetric } from '../e2e/controller-process.js';
import { run } from '../e2e/lib/exec.js';
import { e2eAvailability } from '../e2e/lib/tools.js';
import { useCluster } from '../e2e/lib/use-cluster.js';
import { canIsolateProxies, HostNet, PROXY_PORTS, SnapshotFleet, type ProxyProcess } from '../e2e/snapshot-propagation-harness.js';
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
/** How long the route part waits for a log line that should already be written (it may be in the pipe). */
const LOG_WAIT_MS = 2_000;
/** How long the churn part runs (the wrapper bounds it to 1-600 s). */
const CHURN_SECONDS = Number(process.env.BENCH_CHURN_SECONDS ?? 60);
/** Proxies the churn part's requests go through. */
const CHURN_PROXIES = Number(process.env.BENCH_CHURN_PROXIES ?? 1);
/** Client loops of the churn part, each with one request in flight. */
const CHURN_CLIENTS = 6;
/** Backends behind the Service while it rolls (one more during each roll). */
const REPLICAS = 2;
/** Every REPLACE_EVERY-th roll replaces the EndpointSlice by one of a new name. */
const REPLACE_EVERY = 3;
/** Pause between one roll and the next, between route edits and between routes added. */
const ROLL_GAP_MS = 200;
const EDIT_GAP_MS = 1_000;
const ADD_GAP_MS = 5_000;

const ms = (x: number) => `${x.toFixed(0)} ms`;
/** The machine's load average, printed beside each figure (the figures depend on it). */
const load = () => `load average ${loadavg().map((x) => x.toFixed(1)).join(', ')}`;
const summary = (xs: readonly number[]) => `p50 ${ms(pct(xs, 50))}, p99 ${ms(pct(xs, 99))}, max ${ms(xs.reduce((a, b) => Math.max(a, b), -Infinity))}`;
// pino's isoTime: an ISO 8601 string, millisecond precision.
const logTime = (l: Record<string, unknown>) => Date.parse(String(l.time));

/** A backend of the churn part: an HTTP server on an address of its own, as a pod. */
interface Pod {
  readonly address: string;
  /** Which of the host's backend addresses it holds (HostNet.backendAddress). */
  readonly slot: number;
  readonly server: Server;
  requests: number;
  /** Set once every proxy serves a snapshot without it: requests from then on count as late. */
  gone: boolean;
  late: number;
}

/** An EndpointSlice endpoint's conditions, as the EndpointSlice controller writes them. */
type Conditions = { ready: boolean; serving: boolean; terminating: boolean };
const READY: Conditions = { ready: true, serving: true, terminating: false };

/** A route's rule after edit `k`: each variant still matches `/r<i>/...` with the churn traffic's header. */
function editedRule(i: number, k: number): object {
  const backendRefs = [{ name: 'be', port: 80 }];
  const own = { path: { type: 'PathPrefix', value: `/r${i}/` } };
  switch (k % 3) {
    case 0:
      return { matches: [own], filters: [{ type: 'ResponseHeaderModifier', responseHeaderModifier: { set: [{ name: 'x-edit', value: String(k) }] } }], backendRefs };
    case 1:
      return { matches: [{ ...own, headers: [{ name: 'x-bench', value: 'churn' }] }], backendRefs };
    default:
      return { matches: [{ path: { type: 'PathPrefix', value: `/e${k}/` } }, own], filters: [{ type: 'RequestHeaderModifier', requestHeaderModifier: { set: [{ name: 'x-edit', value: String(k) }] } }], backendRefs };
  }
}

const sleepUntil = (deadline: number, ms: number) => new Promise((r) => setTimeout(r, Math.max(0, Math.min(ms, deadline - Date.now()))));

describe.runIf(e2eAvailability().run && canIsolateProxies())('snapshot propagation', () => {
  const cluster = useCluster({ tollgateCrds: false });
  let fleet: SnapshotFleet;
  let api: KubeApi;
  let backend: Server;
  /** The port of the backend (and of every backend of the churn part, each on its own address). */
  let backendPort = 0;
  let routes = 0;
  /** The churn part's backends, running or stopped (afterAll closes what is left). */
  const pods: Pod[] = [];

  const kubectl = (args: string[], input?: string) => run(cluster.current.tools.kubectl, args, { env: cluster.current.env, input, timeoutMs: 600_000 });

  beforeAll(async () => {
    fleet = await SnapshotFleet.start(cluster.current, { gateway: GATEWAY, controllerArgs: ['--log-level=info'], proxyWorkers: PROXY_WORKERS });
    api = new KubeApi(cluster.current);
    backend = createServer((_req, res) => res.end('ok'));
    await new Promise<void>((r) => backend.listen(0, fleet.net.hostAddress, r));
    const port = (backendPort = (backend.address() as { port: number }).port);
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
    for (const pod of pods) pod.server.closeAllConnections();
    await Promise.all(pods.map((pod) => new Promise((r) => pod.server.close(r))));
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

  /** CPU profiles of the controller and one proxy (with workers, its first worker thread's too) over `seconds`, written to `dir`. */
  async function takeProfiles(dir: string, proxy: ProxyProcess, seconds = PROFILE_SECONDS): Promise<void> {
    mkdirSync(dir, { recursive: true });
    const take = async (name: string, url: string, headers: Record<string, string> = {}) => {
      const body = await adminGet(`${name} profile`, `${url}/debug/pprof/profile?seconds=${seconds}`, headers);
      const file = join(dir, `${name}.pb.gz`);
      writeFileSync(file, body);
      console.log(`  ${name} CPU profile (${seconds} s): ${file} (go tool pprof -top ${file})`);
    };
    const takeWorker = async () => {
      const name = `${proxy.name}-worker-1`;
      const body = await adminGet(`${name} profile`, `${proxy.adminUrl}/debug/workers/1/cpuprofile?seconds=${seconds}`, PROXY_ADMIN_HOST);
      const file = join(dir, `${name}.cpuprofile`);
      writeFileSync(file, body);
      console.log(`  ${name} CPU profile (${seconds} s): ${file} (node bench/lib/profile-summary.mjs ${file})`);
    };
    await Promise.all([take('controller', `http://${fleet.controller.admin}`), take(proxy.name, proxy.adminUrl, PROXY_ADMIN_HOST), ...(PROXY_WORKERS > 1 ? [takeWorker()] : [])]);
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

  /**
   * Waits for every route's status to be written. The controller writes the status of thousands
   * of new routes one by one, for tens of seconds after they serve; each write comes back as a
   * watch event and a reconcile. The timed parts measure a cluster at rest, so they start then.
   */
  async function routesAtRest(part: string): Promise<void> {
    const statusStart = performance.now();
    for (;;) {
      const list = (await api.call('GET', routesPath(NS))) as { items: { metadata: { generation?: number }; status?: { parents?: { conditions?: { type: string; observedGeneration?: number }[] }[] } }[] };
      const pending = list.items.filter((r) => !r.status?.parents?.some((p) => p.conditions?.some((c) => c.type === 'Accepted' && c.observedGeneration === r.metadata.generation))).length;
      if (pending === 0) break;
      if (performance.now() - statusStart > 600_000) throw new Error(`${pending} of ${list.items.length} routes without their status after 600 s`);
      await new Promise((r) => setTimeout(r, 1000));
    }
    console.log(`${part}: every route's status written ${((performance.now() - statusStart) / 1000).toFixed(0)} s after the proxies served them all`);
  }

  it.runIf(PARTS.has('routes'))('route propagation: apply to first 200, one route at a time', { timeout: 24 * 3600_000 }, async () => {
    if (PREFILL) {
      await addRoutesUpTo(Math.min(PREFILL, ROUTES));
      await routesAtRest('route propagation');
    }
    const proxy = fleet.proxies[0]!;
    const total: number[] = [];
    const stored: number[] = [];
    const stage = { api: [] as number[], controller: [] as number[], delivery: [] as number[], first200: [] as number[] };
    const deliveryParts = new DeliveryParts();
    // Each poll's round trip (a new connection each) and the polls a route took: what the first
    // 200 waits for after the proxy serves the route is about one poll.
    const pollMs: number[] = [];
    const pollsPerRoute: number[] = [];
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
      let polls = 0;
      while (performance.now() - t0 < GIVE_UP_MS) {
        const sent = performance.now();
        const status = await send(proxy.url(PORT, `/r${i}/x`)).then(
          (r) => r.status,
          () => -1,
        );
        pollMs.push(performance.now() - sent);
        polls++;
        if (status === 200) {
          pollsPerRoute.push(polls);
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
      // The first snapshot the proxy served after the POST (a later one than the first built when
      // the stream skipped one), and that version's line from the controller. Either line may
      // still be on its way through the process's log pipe when the 200 arrives: waited for, briefly.
      const served = await proxy.waitForLog((l) => typeof l.msg === 'string' && /^serving snapshot \S+ from the controller$/.test(l.msg), LOG_WAIT_MS, fromProxy).catch(() => null);
      const version = served && String(served.msg).split(' ')[2];
      const built = version ? await fleet.controller.waitForLog((l) => l.msg === 'new snapshot' && l.gateway === GATEWAY && String(l.version) === version, LOG_WAIT_MS, fromController).catch(() => null) : null;
      if (built && served) {
        const wall2 = wall0 + (t2 - t0);
        stage.api.push(wall1 - wall0);
        stage.controller.push(logTime(built) - wall1);
        stage.delivery.push(logTime(served) - logTime(built));
        deliveryParts.add(logTime(served) - logTime(built), served);
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
    deliveryParts.print('  ');
    console.log(`  polls: ${pollMs.length}, round trip p50 / p99 ${pct(pollMs, 50).toFixed(1)} / ${pct(pollMs, 99).toFixed(1)} ms; per route p50 ${pct(pollsPerRoute, 50)}`);
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
  // Churn: requests through the proxies while the Service's endpoints roll and routes change.
  it.runIf(PARTS.has('churn'))('churn: no answer other than 200 while endpoints roll and routes are edited and added', { timeout: 24 * 3600_000 }, async () => {
    await addRoutesUpTo(ROUTES);
    while (fleet.proxies.length < CHURN_PROXIES) await fleet.startProxy();
    while (fleet.proxies.length > CHURN_PROXIES) await fleet.removeProxy(fleet.proxies.at(-1)!);
    await fleet.waitSettled(CHURN_PROXIES, 600_000);
    await routesAtRest('churn');
    const slicesPath = `/apis/discovery.k8s.io/v1/namespaces/${NS}/endpointslices`;
    const free = Array.from({ length: HostNet.BACKEND_ADDRESSES }, (_, i) => i);

    const startPod = async (): Promise<Pod> => {
      const slot = free.shift()!;
      const address = fleet.net.backendAddress(slot);
      const pod: Pod = { address, slot, server: createServer((_req: IncomingMessage, res) => {
        pod.requests++;
        if (pod.gone) pod.late++;
        res.end('ok');
      }), requests: 0, gone: false, late: 0 };
      await new Promise<void>((resolve, reject) => {
        pod.server.once('error', reject);
        pod.server.listen(backendPort, address, () => resolve());
      });
      pods.push(pod);
      return pod;
    };
    /** Stops a pod as a terminated one stops: requests under way finish, then its address is free. */
    const stopPod = async (pod: Pod): Promise<void> => {
      const closed = new Promise((r) => pod.server.close(r));
      const bound = setTimeout(() => pod.server.closeAllConnections(), 10_000);
      await closed;
      clearTimeout(bound);
      free.push(pod.slot);
    };
    const slice = (name: string, endpoints: readonly (readonly [Pod, Conditions])[]) => ({
      apiVersion: 'discovery.k8s.io/v1',
      kind: 'EndpointSlice',
      metadata: { name, namespace: NS, labels: { 'kubernetes.io/service-name': 'be' } },
      addressType: 'IPv4',
      ports: [{ name: 'http', port: backendPort, protocol: 'TCP' }],
      endpoints: endpoints.map(([p, conditions]) => ({ addresses: [p.address], conditions })),
    });

    /** The endpoints of Service `be` the proxy serves on every thread, and the version. */
    const served = async (p: ProxyProcess): Promise<{ version: string; endpoints: string[] }> => {
      const body = JSON.parse((await adminGet(`${p.name} backends`, `${p.adminUrl}/backends?namespace=${NS}`, PROXY_ADMIN_HOST)).toString()) as {
        version: string;
        backends: { type: string; endpoints: { address: string }[] }[];
      };
      const be = body.backends.find((b) => b.type === 'Service');
      return { version: body.version, endpoints: (be?.endpoints ?? []).map((e) => e.address).sort() };
    };
    /**
     * Resolves once every proxy serves a snapshot whose endpoints of `be` are exactly `want`:
     * the admin API's /backends shows them (the main thread's snapshot) and the proxy has logged
     * `serving snapshot <that version>`, which it does once every thread serves it.
     */
    /** Resolves, once every proxy serves `want`, with the version the first proxy serves them in. */
    const waitServing = async (want: readonly Pod[], timeoutMs = 60_000): Promise<string> => {
      const expected = want.map((p) => `${p.address}:${backendPort}`).sort().join(',');
      const deadline = Date.now() + timeoutMs;
      const versions = await Promise.all(
        fleet.proxies.map(async (p) => {
          for (;;) {
            const now = await served(p);
            if (now.endpoints.join(',') === expected && p.lines.findLast((l) => l.msg === `serving snapshot ${now.version} from the controller`)) return now.version;
            if (Date.now() > deadline) throw new Error(`${p.name}: endpoints ${now.endpoints.join(',') || 'none'} at version ${now.version}, not ${expected}, after ${timeoutMs} ms`);
            await new Promise((r) => setTimeout(r, 10));
          }
        }),
      );
      return versions[0]!;
    };

    // The Service's first backends, in a slice that replaces the one made at the start.
    let sliceName = 'be-roll-0';
    const initial: Pod[] = [];
    while (initial.length < REPLICAS) initial.push(await startPod());
    await api.create(slicesPath, slice(sliceName, initial.map((p) => [p, READY] as const)));
    await api.call('DELETE', `${slicesPath}/be-1`);
    await waitServing(initial);
    let running: Pod[] = initial;

    const fromController = fleet.controller.lines.length;
    const fromProxy = fleet.proxies.map((p) => p.lines.length);
    const metricsBefore = await fleet.controller.metrics();
    const start = Date.now();
    const deadline = start + CHURN_SECONDS * 1000;
    console.log(`churn: ${routes} routes, ${fleet.proxies.length} prox${fleet.proxies.length === 1 ? 'y' : 'ies'} (${PROXY_WORKERS} thread${PROXY_WORKERS === 1 ? '' : 's'} each), ${CHURN_CLIENTS} client loops, ${CHURN_SECONDS} s; ${load()}`);
    // With --profile: the controller and the first proxy over the churn (BENCH_PROFILE_SECONDS, at most its length).
    const profiles = PROFILE_DIR ? takeProfiles(PROFILE_DIR, fleet.proxies[0]!, Math.min(PROFILE_SECONDS, CHURN_SECONDS)) : Promise.resolve();

    // Traffic: spread over the routes that answer (new ones join once they answered 200).
    const live = Array.from({ length: routes }, (_, i) => i);
    const byStatus = new Map<number, number>();
    const latency: number[] = [];
    const firstErrors: string[] = [];
    let sent = 0;
    let errors = 0;
    const client = async (c: number) => {
      for (let k = 0; Date.now() < deadline; k++) {
        const proxy = fleet.proxies[(c + k) % fleet.proxies.length]!;
        const path = `/r${live[Math.floor(Math.random() * live.length)]!}/x`;
        const t0 = performance.now();
        const answer = await send(proxy.url(PORT, path), { headers: { 'x-bench': 'churn' } }).then(
          (r) => ({ status: r.status, body: r.body }),
          (err: unknown) => ({ status: -1, body: String(err) }),
        );
        latency.push(performance.now() - t0);
        sent++;
        byStatus.set(answer.status, (byStatus.get(answer.status) ?? 0) + 1);
        if (answer.status !== 200) {
          errors++;
          if (firstErrors.length < 10) firstErrors.push(`${new Date().toISOString()} ${proxy.name} GET ${path}: ${answer.status === -1 ? 'no answer' : answer.status} ${answer.body.slice(0, 300).replace(/\s+/g, ' ')}`);
        }
      }
    };

    // The rollout: surge one new backend, mark the oldest terminating, remove it; stop it once
    // every proxy serves a snapshot without it.
    let rolls = 0;
    let sliceWrites = 0;
    let replaced = 0;
    const rollTimes: number[] = [];
    const rollStages = { api: [] as number[], controller: [] as number[], delivery: [] as number[] };
    const deliveryParts = new DeliveryParts();
    const rollFailures: string[] = [];
    const roller = async () => {
      while (Date.now() < deadline) {
        const old = running[0]!;
        const fresh = await startPod();
        const path = `${slicesPath}/${sliceName}`;
        await api.mergePatch(path, { endpoints: slice(sliceName, [...running, fresh].map((p) => [p, READY] as const)).endpoints });
        sliceWrites++;
        // A terminating pod still serving (its grace period) or already failing its readiness probe.
        const terminating: Conditions = { ready: false, serving: rolls % 2 === 0, terminating: true };
        const fromController = fleet.controller.lines.length;
        const fromProxy = fleet.proxies[0]!.lines.length;
        const wall0 = Date.now();
        const t0 = performance.now();
        await api.mergePatch(path, { endpoints: slice(sliceName, [[old, terminating] as const, ...running.slice(1).map((p) => [p, READY] as const), [fresh, READY] as const]).endpoints });
        const wall1 = wall0 + (performance.now() - t0);
        sliceWrites++;
        const next = [...running.slice(1), fresh];
        let version: string;
        try {
          version = await waitServing(next);
        } catch (err) {
          rollFailures.push(String(err));
          return;
        }
        rollTimes.push(performance.now() - t0);
        // The stages, from the processes' log lines (as the routes part): the snapshot the first
        // proxy serves the new endpoints in, when the controller made it and when that proxy served it.
        const built = fleet.controller.lines.slice(fromController).find((l) => l.msg === 'new snapshot' && l.gateway === GATEWAY && String(l.version) === version);
        const servedLine = fleet.proxies[0]!.lines.slice(fromProxy).find((l) => l.msg === `serving snapshot ${version} from the controller`);
        if (built && servedLine) {
          rollStages.api.push(wall1 - wall0);
          rollStages.controller.push(logTime(built) - wall1);
          const delivery = logTime(servedLine) - logTime(built);
          rollStages.delivery.push(delivery);
          deliveryParts.add(delivery, servedLine);
        }
        const remaining = next.map((p) => [p, READY] as const);
        if ((rolls + 1) % REPLACE_EVERY === 0) {
          // As the EndpointSlice controller replaces a slice: the new one first, then the old one goes.
          const name = `be-roll-${rolls + 1}`;
          await api.create(slicesPath, slice(name, remaining));
          await api.call('DELETE', path);
          sliceName = name;
          sliceWrites += 2;
          replaced++;
        } else {
          await api.mergePatch(path, { endpoints: slice(sliceName, remaining).endpoints });
          sliceWrites++;
        }
        running = next;
        try {
          await waitServing(next);
        } catch (err) {
          rollFailures.push(String(err));
          return;
        }
        old.gone = true;
        await stopPod(old);
        rolls++;
        await sleepUntil(deadline, ROLL_GAP_MS);
      }
    };

    // Route edits (one a second) and routes added (one every 5 s), each new one served once it answers 200.
    let edits = 0;
    let added = 0;
    const addTimes: number[] = [];
    const changeFailures: string[] = [];
    const arrivals: Promise<void>[] = [];
    const editor = async () => {
      const editable = routes;
      let nextAdd = Date.now() + ADD_GAP_MS;
      for (let k = 1; Date.now() < deadline; k++) {
        const i = Math.floor(Math.random() * editable);
        try {
          await api.mergePatch(`${routesPath(NS)}/r${i}`, { spec: { rules: [editedRule(i, k)] } });
          edits++;
          if (Date.now() >= nextAdd) {
            nextAdd += ADD_GAP_MS;
            const n = routes++;
            const t0 = performance.now();
            await api.create(routesPath(NS), httpRoute(NS, `r${n}`, 'gw', `/r${n}/`, 'be'));
            added++;
            arrivals.push(
              (async () => {
                const proxy = fleet.proxies[0]!;
                while (performance.now() - t0 < GIVE_UP_MS) {
                  const status = await send(proxy.url(PORT, `/r${n}/x`), { headers: { 'x-bench': 'churn' } }).then((r) => r.status, () => -1);
                  if (status === 200) {
                    addTimes.push(performance.now() - t0);
                    live.push(n);
                    return;
                  }
                  await new Promise((r) => setTimeout(r, 20));
                }
                changeFailures.push(`route r${n} not served within ${GIVE_UP_MS} ms`);
              })(),
            );
          }
        } catch (err) {
          changeFailures.push(String(err));
        }
        await sleepUntil(deadline, EDIT_GAP_MS);
      }
    };

    await Promise.all([...Array.from({ length: CHURN_CLIENTS }, (_, c) => client(c)), roller(), editor()]);
    await Promise.all(arrivals);
    const seconds = (Date.now() - start) / 1000;
    const snapshots = fleet.controller.lines.slice(fromController).filter((l) => l.msg === 'new snapshot' && l.gateway === GATEWAY).length;
    const servedCounts = fleet.proxies.map((p, i) => p.lines.slice(fromProxy[i]).filter((l) => typeof l.msg === 'string' && l.msg.startsWith('serving snapshot ')).length);
    const proxyProblems = fleet.proxies.flatMap((p, i) => p.lines.slice(fromProxy[i]).filter((l) => l.level === 'warn' || l.level === 'error' || l.level === 'fatal').map((l) => `${p.name}: ${String(l.msg)}`));
    const statuses = [...byStatus].sort(([a], [b]) => a - b).map(([status, n]) => `${status === -1 ? 'no answer' : status} ${n}`).join(', ');
    console.log(`  requests: ${sent} in ${seconds.toFixed(0)} s (${(sent / seconds).toFixed(0)}/s), by status: ${statuses}; errors (not 200): ${errors}; latency ${summary(latency)}`);
    for (const e of firstErrors) console.log(`    ${e}`);
    console.log(`  rollout: ${rolls} backends replaced, ${sliceWrites} EndpointSlice writes (${replaced} slices replaced by a new name); terminating write -> every proxy serving the new endpoints: ${rollTimes.length ? summary(rollTimes) : 'none'}`);
    if (rollStages.api.length)
      console.log(
        `    stages (p50 / p99): API write ${ms(pct(rollStages.api, 50))} / ${ms(pct(rollStages.api, 99))}; ` +
          `controller (watch, debounce, translate) ${ms(pct(rollStages.controller, 50))} / ${ms(pct(rollStages.controller, 99))}; ` +
          `delivery to the first proxy (push, decode, compile, every thread) ${ms(pct(rollStages.delivery, 50))} / ${ms(pct(rollStages.delivery, 99))} (${rollStages.api.length} rolls with both log lines)`,
      );
    deliveryParts.print('    ');
    for (const f of rollFailures) console.log(`    roll stopped: ${f}`);
    const perPod = pods.map((p) => p.requests);
    const late = pods.reduce((n, p) => n + p.late, 0);
    console.log(`  backends: ${pods.length} started; requests each min ${Math.min(...perPod)}, median ${pct(perPod, 50)}, max ${Math.max(...perPod)}; requests that reached a backend after every proxy served a snapshot without it: ${late}`);
    console.log(`  routes: ${edits} edits, ${added} added (create -> first 200: ${addTimes.length ? summary(addTimes) : 'none'}), ${routes} now; failures ${changeFailures.length}${changeFailures.length ? `: ${changeFailures.slice(0, 3).join('; ')}` : ''}`);
    const metricsAfter = await fleet.controller.metrics();
    const delta = (name: string, labels: Record<string, string> = {}) => sumMetric(metricsAfter, name, labels) - sumMetric(metricsBefore, name, labels);
    const runs = delta('tollgate_controller_reconcile_duration_seconds_count');
    const writes = (kind: string) => delta('tollgate_controller_status_writes_total', { kind, result: 'written' });
    console.log(
      `  controller: ${runs} reconciles, mean ${((delta('tollgate_controller_reconcile_duration_seconds_sum') / runs) * 1000).toFixed(1)} ms each (translate, snapshots, status); ` +
        `status written: ${writes('Gateway')} Gateway, ${writes('HTTPRoute')} HTTPRoute`,
    );
    console.log(`  snapshots: ${snapshots} made by the controller, served ${servedCounts.join(' / ')} (per proxy); proxy warnings and errors logged: ${proxyProblems.length}${proxyProblems.length ? `, first: ${proxyProblems.slice(0, 3).join(' | ')}` : ''}; ${load()}`);
    await profiles;
  });
});

/**
 * The parts of a snapshot's delivery, from the proxy's `serving snapshot` line: in flight (the
 * controller's encode and push, waiting for the proxy's answer to the push before, reading it off
 * the stream), waiting behind the proxy's apply before, decoding, applying on every thread.
 */
class DeliveryParts {
  readonly #transit: number[] = [];
  readonly #waited: number[] = [];
  readonly #decode: number[] = [];
  readonly #apply: number[] = [];

  add(delivery: number, line: Record<string, unknown>): void {
    const { waitedMs, decodeMs, applyMs } = line;
    if (typeof waitedMs !== 'number' || typeof decodeMs !== 'number' || typeof applyMs !== 'number') return;
    this.#transit.push(Math.max(0, delivery - waitedMs - decodeMs - applyMs));
    this.#waited.push(waitedMs);
    this.#decode.push(decodeMs);
    this.#apply.push(applyMs);
  }

  print(indent: string): void {
    if (!this.#apply.length) return;
    const part = (xs: number[]) => `${pct(xs, 50).toFixed(1)} / ${pct(xs, 99).toFixed(1)} ms`;
    console.log(
      `${indent}delivery's parts (p50 / p99): in flight ${part(this.#transit)}; waiting behind the apply before ${part(this.#waited)}; ` +
        `decode ${part(this.#decode)}; apply on every thread ${part(this.#apply)}`,
    );
  }
}
