// Scale and churn: HTTPRoutes spread over namespaces (each namespace with its Service and
// EndpointSlice), one Gateway accepting routes from all of them, the controller as its binary
// and proxy processes in cluster mode, on a real kube-apiserver (no node), and the
// EndpointSlices changing continuously at a bounded rate for BENCH_MINUTES. Every interval it
// (after start-up: every proxy serving and every route's status written) reads, for the
// controller and each proxy: the heap after a forced full GC (admin
// `GET /memory?gc=true`, the lowest of BENCH_GC_READS readings), the RSS and the CPU time (both
// from /proc/<pid>), and the load average; at the end, the growth of the heap from minute
// BENCH_FROM to the last minute and its least-squares trend over those minutes.
// Printed, not asserted. Run through `node bench/propagation-churn.mjs`.
//
// The churn never reuses an address (a counter walks 198.18.0.0/17) and every tenth change in a
// namespace replaces its EndpointSlice by one of a new name, so state kept per endpoint address
// or per slice name that is never dropped shows up as growth instead of saturating.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { run } from '../e2e/lib/exec.js';
import { e2eAvailability, REPO_ROOT } from '../e2e/lib/tools.js';
import { useCluster } from '../e2e/lib/use-cluster.js';
import { canIsolateProxies, SnapshotFleet } from '../e2e/snapshot-propagation-harness.js';
import { createAll, httpRoute, KubeApi, routesPath } from './propagation-kube.js';

const MINUTES = Number(process.env.BENCH_MINUTES ?? 3);
const ROUTES = Number(process.env.BENCH_ROUTES ?? 500);
const NAMESPACES = Number(process.env.BENCH_NAMESPACES ?? 10);
const PROXIES = Number(process.env.BENCH_PROXIES ?? 2);
/** EndpointSlice writes per second (bounded load; one request in flight at a time). */
const RATE = Number(process.env.BENCH_RATE ?? 5);
const INTERVAL_S = Number(process.env.BENCH_INTERVAL ?? 60);
/** The minute the growth is measured from (the first minutes are start-up). */
const FROM_MINUTE = Number(process.env.BENCH_FROM ?? 5);
const OUT_DIR = process.env.BENCH_OUT ?? join(REPO_ROOT, 'bench/.bench-out/churn');
/** Forced-GC heap readings per sample (the lowest counts) and the pause between them. */
const GC_READS = Number(process.env.BENCH_GC_READS ?? 3);
const GC_READ_GAP_MS = 2_000;
const GW_NS = 'churn';
/** Every ROTATE_EVERY-th change in a namespace replaces its EndpointSlice by a new name. */
const ROTATE_EVERY = 10;

const MiB = 1048576;
const CLK_TCK = 100;

/** The n-th churn address: 198.18.0.1 .. 198.18.127.254, then around again (32,512 addresses). */
function churnAddress(n: number): string {
  const host = n % 254;
  const net = Math.floor(n / 254) % 128;
  return `198.18.${net}.${host + 1}`;
}

function endpointSlice(namespace: string, name: string, endpoints: unknown[]) {
  return {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: { name, namespace, labels: { 'kubernetes.io/service-name': 'be' } },
    addressType: 'IPv4',
    ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
    endpoints,
  };
}

/** CPU seconds (user + system) and RSS bytes of a process, from /proc. */
function procStat(pid: number): { cpu: number; rss: number } {
  // Fields after the command name (which may hold spaces) start at field 3: utime is 14, stime 15.
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const cpu = (Number(f[11]) + Number(f[12])) / CLK_TCK;
  const rssKb = Number(/^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]);
  return { cpu, rss: rssKb * 1024 };
}

/**
 * GET on an admin API. A proxy's admin listens on its bridge address here (a pod's would be
 * reached through a port-forward), and the admin serves only loopback Host names: say one.
 */
function adminGet(url: string): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const req = request(url, { headers: { host: '127.0.0.1' }, agent: false, timeout: 60_000 }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const body = Buffer.concat(chunks);
        if (res.statusCode === 200) resolve(body);
        else reject(new Error(`${url}: ${res.statusCode} ${body.toString().slice(0, 300)}`));
      });
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`${url}: no answer within 60 s`)));
    req.on('error', reject);
    req.end();
  });
}

/**
 * Heap used right after a full GC, from the admin API: the lowest of GC_READS readings a few
 * seconds apart. One reading also counts whatever work is under way (a reconcile in progress
 * holds the new snapshot and its intermediate objects: tens of MiB at 5,000 routes), so single
 * readings scatter by more than the growth looked for; the lowest is the retained heap.
 */
async function heapAfterGc(adminBase: string): Promise<{ heap: number; gcMs: number; spaces: Record<string, number> }> {
  let best = { heap: Infinity, gcMs: 0, spaces: {} as Record<string, number> };
  for (let i = 0; i < GC_READS; i++) {
    if (i > 0) await new Promise((r) => setTimeout(r, GC_READ_GAP_MS));
    const m = JSON.parse((await adminGet(`${adminBase}/memory?gc=true`)).toString()) as {
      gc: { ms: number };
      heap: { usedHeapSize: number; spaces: { name: string; used: number }[] };
    };
    if (m.heap.usedHeapSize < best.heap) best = { heap: m.heap.usedHeapSize, gcMs: m.gc.ms, spaces: Object.fromEntries(m.heap.spaces.map((x) => [x.name, x.used])) };
  }
  return best;
}

/** The heap spaces whose used size moved by 0.1 MiB or more between two readings, largest first. */
function spaceChanges(a: Record<string, number>, b: Record<string, number>): string {
  const moved = Object.keys(b)
    .map((name) => ({ name, d: b[name]! - (a[name] ?? 0) }))
    .filter((x) => Math.abs(x.d) >= 0.1 * MiB)
    .sort((x, y) => Math.abs(y.d) - Math.abs(x.d));
  return moved.length ? moved.map((x) => `${x.name} ${x.d >= 0 ? '+' : ''}${(x.d / MiB).toFixed(1)}`).join(', ') : 'none by 0.1 MiB or more';
}

interface Row {
  minute: number;
  load1: number;
  updates: number;
  snapshots: number;
  /** Per process; `spaces`: V8's used size per heap space after the GC (which space a step is in). */
  procs: Record<string, { heap: number; rss: number; cpuPct: number; gcMs: number; spaces: Record<string, number> }>;
}

const fmt = (b: number) => (b / MiB).toFixed(1);

/** Least-squares slope of ys over xs. */
function slope(xs: number[], ys: number[]): number {
  const n = xs.length;
  const mx = xs.reduce((a, b) => a + b, 0) / n;
  const my = ys.reduce((a, b) => a + b, 0) / n;
  let num = 0;
  let den = 0;
  for (let i = 0; i < n; i++) {
    num += (xs[i]! - mx) * (ys[i]! - my);
    den += (xs[i]! - mx) ** 2;
  }
  return den ? num / den : 0;
}

describe.runIf(e2eAvailability().run && canIsolateProxies())('scale and churn', () => {
  const cluster = useCluster({ tollgateCrds: false });
  let fleet: SnapshotFleet;
  let api: KubeApi;
  const kubectl = (args: string[], input?: string) => run(cluster.current.tools.kubectl, args, { env: cluster.current.env, input, timeoutMs: 600_000 });
  const started = Date.now();
  const since = () => `${((Date.now() - started) / 1000).toFixed(0)} s`;

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
    }
    docs.push(`apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: { name: gw, namespace: ${GW_NS} }
spec:
  gatewayClassName: tollgate
  listeners: [ { name: http, protocol: HTTP, port: 8080, allowedRoutes: { namespaces: { from: All } } } ]`);
    await kubectl(['apply', '-f', '-'], docs.join('\n---\n'));
    const slices = Array.from({ length: NAMESPACES }, (_, n) => endpointSlice(`ns${n}`, 'be-0', [{ addresses: [churnAddress(n)], conditions: { ready: true } }]));
    await createAll(api, (o) => `/apis/discovery.k8s.io/v1/namespaces/${o.metadata.namespace}/endpointslices`, slices);
    const objects = Array.from({ length: ROUTES }, (_, i) => httpRoute(`ns${i % NAMESPACES}`, `r${i}`, 'gw', `/r${i}/`, 'be'));
    for (const o of objects) (o.spec.parentRefs[0] as Record<string, string>).namespace = GW_NS;
    await createAll(api, (o) => routesPath(o.metadata.namespace), objects);
    console.log(`[${since()}] ${ROUTES} routes, ${NAMESPACES} Services and EndpointSlices created`);
    for (let i = 0; i < PROXIES; i++) await fleet.startProxy();
    await fleet.nextVersion(0, 300_000);
    await fleet.waitSettled(PROXIES, 900_000);
    console.log(`[${since()}] ${PROXIES} proxies serve the Gateway's snapshot`);
    // Start-up ends when every route carries its status: the first status pass writes each of
    // them once (minutes at 5,000 routes on a loaded machine) and holds what it wrote until the
    // cache shows it, so a churn started before it ends would measure that pass, not churn.
    const deadline = Date.now() + 1_800_000;
    for (;;) {
      const list = (await api.call('GET', '/apis/gateway.networking.k8s.io/v1/httproutes')) as { items: { status?: { parents?: unknown[] } }[] };
      const done = list.items.filter((r) => (r.status?.parents?.length ?? 0) > 0).length;
      if (done >= ROUTES) break;
      if (Date.now() > deadline) throw new Error(`only ${done} of ${ROUTES} HTTPRoutes have a status after 30 minutes`);
      await new Promise((r) => setTimeout(r, 10_000));
    }
    console.log(`[${since()}] every HTTPRoute has its status`);
  }, 3_600_000);

  afterAll(async () => {
    api?.close();
    await fleet?.stop();
  });

  it('memory and CPU under endpoint churn', { timeout: (MINUTES + 10) * 60_000 }, async () => {
    mkdirSync(OUT_DIR, { recursive: true });
    const targets = [
      { name: 'controller', pid: fleet.controller.pid, admin: `http://${fleet.controller.admin}` },
      ...fleet.proxies.map((p) => ({ name: p.name, pid: p.pid, admin: p.adminUrl })),
    ];
    const t0 = Date.now();
    const end = t0 + MINUTES * 60_000;
    let updates = 0;
    let rotations = 0;
    const failures: string[] = [];
    const churn = (async () => {
      const sliceName = Array.from({ length: NAMESPACES }, () => 'be-0');
      let address = NAMESPACES;
      for (let k = 0; Date.now() < end; k++) {
        const t = performance.now();
        const n = k % NAMESPACES;
        const ns = `ns${n}`;
        const round = Math.floor(k / NAMESPACES);
        // Two to four endpoints at new addresses (never dialed: no requests are sent), one of
        // them, a different one each time, not ready.
        const count = 2 + (k % 3);
        const endpoints = Array.from({ length: count }, (_, e) => ({ addresses: [churnAddress(address++)], conditions: { ready: e !== round % count } }));
        const base = `/apis/discovery.k8s.io/v1/namespaces/${ns}/endpointslices`;
        try {
          if (round % ROTATE_EVERY === ROTATE_EVERY - 1) {
            const next = `be-${round}`;
            await api.create(base, endpointSlice(ns, next, endpoints));
            await api.call('DELETE', `${base}/${sliceName[n]}`);
            sliceName[n] = next;
            rotations++;
          } else {
            await api.mergePatch(`${base}/${sliceName[n]}`, { endpoints });
          }
          updates++;
        } catch (err) {
          failures.push(String(err));
        }
        const wait = 1000 / RATE - (performance.now() - t);
        if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      }
    })();

    console.log(`churn: ${ROUTES} routes in ${NAMESPACES} namespaces, ${PROXIES} proxies, ${RATE} EndpointSlice writes/s for ${MINUTES} min, a sample every ${INTERVAL_S} s`);
    console.log(`heap: used after a forced full GC (admin /memory?gc=true), the lowest of ${GC_READS} readings ${GC_READ_GAP_MS / 1000} s apart; RSS and CPU from /proc (CPU includes the forced GCs); load: 1-minute load average`);
    const header = `  minute  load  updates  snaps  ${targets.map((t) => `${t.name} heap/RSS MiB, CPU %`.padEnd(32)).join('  ')}`;
    console.log(header);
    const rows: Row[] = [];
    const cpuBefore = new Map(targets.map((t) => [t.name, procStat(t.pid).cpu]));
    const snapshotLines = () => fleet.controller.lines.filter((l) => l.msg === 'new snapshot').length;
    let snapsBefore = snapshotLines();
    let lastAt = t0;
    const profilesAt = new Set([FROM_MINUTE, MINUTES]);
    for (let i = 1; t0 + i * INTERVAL_S * 1000 <= end + 1000; i++) {
      const at = t0 + i * INTERVAL_S * 1000;
      await new Promise((r) => setTimeout(r, Math.max(0, at - Date.now())));
      const minute = Math.round(((Date.now() - t0) / 60_000) * 10) / 10;
      const elapsed = (Date.now() - lastAt) / 1000;
      lastAt = Date.now();
      const load1 = Number(readFileSync('/proc/loadavg', 'utf8').split(' ')[0]);
      const snaps = snapshotLines();
      const row: Row = { minute, load1, updates, snapshots: snaps - snapsBefore, procs: {} };
      snapsBefore = snaps;
      for (const t of targets) {
        const { cpu } = procStat(t.pid);
        const { heap, gcMs, spaces } = await heapAfterGc(t.admin);
        const { rss } = procStat(t.pid);
        row.procs[t.name] = { heap, rss, cpuPct: ((cpu - cpuBefore.get(t.name)!) / elapsed) * 100, gcMs, spaces };
        cpuBefore.set(t.name, cpu);
        // Heap profiles (sampled live allocations by stack) at the growth's start and end, to
        // compare when the heap grows: `go tool pprof -top -base <from> <end>`.
        if (profilesAt.has(Math.round(minute))) {
          writeFileSync(join(OUT_DIR, `${t.name}-heap-m${Math.round(minute)}.pb.gz`), await adminGet(`${t.admin}/debug/pprof/heap`));
        }
      }
      rows.push(row);
      const cells = targets.map((t) => {
        const p = row.procs[t.name]!;
        return `${fmt(p.heap).padStart(7)} / ${fmt(p.rss).padStart(6)}, ${p.cpuPct.toFixed(1).padStart(5)}`.padEnd(32);
      });
      console.log(`  ${minute.toFixed(1).padStart(6)}  ${load1.toFixed(1).padStart(4)}  ${String(updates).padStart(7)}  ${String(row.snapshots).padStart(5)}  ${cells.join('  ')}`);
    }
    await churn;
    console.log(`${updates} EndpointSlice changes (${rotations} of them replacing a slice by a new name), ${failures.length} failed${failures.length ? `; first: ${failures[0]}` : ''}`);
    const from = rows.find((r) => r.minute >= FROM_MINUTE - 0.05) ?? rows[0]!;
    const last = rows.at(-1)!;
    const tail = rows.filter((r) => r.minute >= from.minute);
    for (const t of targets) {
      const a = from.procs[t.name]!;
      const b = last.procs[t.name]!;
      const growth = ((b.heap - a.heap) / a.heap) * 100;
      const perTen = slope(
        tail.map((r) => r.minute),
        tail.map((r) => r.procs[t.name]!.heap),
      );
      const cpuAvg = tail.reduce((s, r) => s + r.procs[t.name]!.cpuPct, 0) / tail.length;
      console.log(
        `${t.name}: heap after GC ${fmt(a.heap)} MiB at minute ${from.minute} -> ${fmt(b.heap)} MiB at minute ${last.minute} (${growth >= 0 ? '+' : ''}${growth.toFixed(1)}%; trend ${((perTen * 10) / MiB).toFixed(2)} MiB per 10 min); RSS ${fmt(a.rss)} -> ${fmt(b.rss)} MiB; CPU ${cpuAvg.toFixed(1)}% of a core on average; target (< 5% heap growth): ${growth < 5 ? 'met' : 'MISSED'}`,
      );
      console.log(`  ${t.name}: heap spaces (MiB) moved from minute ${from.minute} to ${last.minute}: ${spaceChanges(a.spaces, b.spaces)}`);
    }
    const json = join(OUT_DIR, 'last-run.json');
    writeFileSync(json, JSON.stringify({ routes: ROUTES, namespaces: NAMESPACES, proxies: PROXIES, rate: RATE, minutes: MINUTES, updates, rotations, failures: failures.length, rows }, null, 2));
    console.log(`figures in ${json}; heap profiles in ${OUT_DIR}`);
  });
});
