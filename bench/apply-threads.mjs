#!/usr/bin/env node
// What one route changed among N (or, with --change endpoints, one Service's endpoints, every
// route sending to that Service) costs a proxy serving on several threads, from the snapshot
// source's apply call to every thread serving it: the main thread's apply (compile, binds,
// commit), then the hand-over to the worker threads and their applies (what the controller
// source waits for before it ACKs). A real ProxyProcess started in this process, fed snapshots
// by a source of the bench's own (no controller, no wire, no traffic), so the figures are the
// proxy's alone. Printed, not asserted.
//
//   pnpm build && node bench/apply-threads.mjs [--routes 3000] [--threads 2] [--changes 40]
//        [--baseline <built checkout>]   # the same in another build, runs alternated
import { execFileSync } from 'node:child_process';
import { parseArgs } from 'node:util';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { ROOT } from './lib/cases.mjs';
import { intOption, median } from './lib/stats.mjs';

const HELP = `Usage: node bench/apply-threads.mjs [options]

Options:
  --routes <n>       routes of the listener (one changes per snapshot)   [default 3000]
  --threads <n>      threads the proxy serves on (--workers)              [default 2]
  --changes <n>      snapshots applied and timed per run                  [default 40]
  --change <what>    route: the last route edited; endpoints: every route
                     sends to one Service port, whose ready endpoint is
                     replaced (a rollout's step)                          [default route]
  --listener-policy  the listener has a policy of its own (a rate limit at
                     Gateway level, as most Gateways have)
  --runs <n>         runs per build, alternated with the baseline's       [default 3]
  --port <n>         the port the proxy's one bind listens on (127.0.0.1) [default 18765]
  --baseline <dir>   also run a built checkout (e.g. a worktree of the commit before a change)
  -h, --help`;

const { values } = parseArgs({
  options: {
    routes: { type: 'string', default: '3000' },
    threads: { type: 'string', default: '2' },
    changes: { type: 'string', default: '40' },
    change: { type: 'string', default: 'route' },
    'listener-policy': { type: 'boolean', default: false },
    runs: { type: 'string', default: '3' },
    port: { type: 'string', default: '18765' },
    baseline: { type: 'string' },
    /** Internal: one run in the build at this root, its figures as a JSON line (each build in a process of its own). */
    child: { type: 'string' },
    help: { type: 'boolean', short: 'h' },
  },
});
if (values.help) {
  console.log(HELP);
  process.exit(0);
}
const ROUTES = intOption(values, 'routes', 1);
const THREADS = intOption(values, 'threads', 1);
const CHANGES = intOption(values, 'changes', 5);
const RUNS = intOption(values, 'runs', 1);
const PORT = intOption(values, 'port', 1);
if (values.change !== 'route' && values.change !== 'endpoints') {
  console.error(`--change: got "${values.change}"; expected route or endpoints`);
  process.exit(2);
}
const CHANGE = values.change;
const LISTENER_POLICY = values['listener-policy'];
const SERVICE = 'llm.team.svc.cluster.local:80';
const LIMIT = { traffic: { rateLimit: { local: [{ requests: 1000000, unit: 'Hours' }] } } };

const routeConfig = (i, tag = '') => ({
  name: `route-${i}${tag}`,
  matches: [{ path: { type: 'PathPrefix', value: `/team-${i}${tag}/v1` }, headers: [{ name: 'x-tenant', value: `tenant-${i % 50}` }] }],
  filters: [{ type: 'RequestHeaderModifier', requestHeaderModifier: { set: [{ name: 'x-route', value: `r${i}` }] } }],
  backends: [{ host: `198.18.${(i >> 8) & 255}.${i & 255}:8080`, weight: 1 }],
});

/** One run in the build at `root`: the main thread's apply and the workers' after it, per change (ms). */
async function run(root) {
  const api = await import(join(root, 'packages/api/dist/index.js'));
  const { ProxyProcess } = await import(join(root, 'packages/proxy/dist/index.js'));
  const snapshotOf = (routes) =>
    api.standaloneToSnapshot(
      api.validateStandaloneConfig({ binds: [{ port: PORT, address: '127.0.0.1', listeners: [{ name: 'main', protocol: 'HTTP', ...(LISTENER_POLICY ? { policies: LIMIT } : {}), routes }] }] }, 'bench'),
      { kind: 'controller', gateway: 'bench/gw' },
    );
  let snapshot = snapshotOf(Array.from({ length: ROUTES }, (_, i) => routeConfig(i)));
  // Every route to one Service port, its ready endpoints listed once (what a controller sends).
  const table = (n) => [{ name: SERVICE, endpoints: [{ address: `198.18.100.${n % 250}`, port: 9000 }] }];
  if (CHANGE === 'endpoints') {
    const toService = (r) => ({ ...r, backends: r.backends.map((b) => ({ kind: 'service', name: SERVICE, namespace: 'team', service: 'llm', port: 80, weight: b.weight })) });
    snapshot = { ...snapshot, endpoints: table(0), binds: snapshot.binds.map((b) => ({ ...b, listeners: b.listeners.map((l) => ({ ...l, routes: l.routes.map(toService) })) })) };
  }
  let sink = null;
  const source = () => ({
    name: 'bench',
    async start(s) {
      sink = s;
      await s.apply(snapshot);
    },
    stop() {},
    state: () => ({ kind: 'bench', applied: 0, refused: 0, lastError: null, version: null }),
  });
  const proxy = await ProxyProcess.start({ settings: { logLevel: 'warn' }, source, workers: THREADS, adminAddr: '127.0.0.1:0', metricsAddr: '127.0.0.1:0', readinessAddr: '127.0.0.1:0' });
  // The main thread's part, timed around its runtime's apply; the rest of the sink's call is the workers'.
  const runtimeApply = proxy.runtime.apply.bind(proxy.runtime);
  let mainMs = 0;
  proxy.runtime.apply = async (s) => {
    const t = performance.now();
    await runtimeApply(s);
    mainMs = performance.now() - t;
  };
  const main = [];
  const workers = [];
  try {
    for (let i = 0; i < CHANGES; i++) {
      if (CHANGE === 'endpoints') snapshot = { ...snapshot, endpoints: table(i + 1) };
      else {
        const bind = snapshot.binds[0];
        const listener = bind.listeners[0];
        const changed = snapshotOf([routeConfig(ROUTES - 1, `-v${i}`)]).binds[0].listeners[0].routes[0];
        snapshot = { ...snapshot, binds: [{ ...bind, listeners: [{ ...listener, routes: [...listener.routes.slice(0, -1), changed] }] }] };
      }
      const t = performance.now();
      await sink.apply(snapshot);
      const total = performance.now() - t;
      main.push(mainMs);
      workers.push(total - mainMs);
      // Apart, as a controller's changes come: the threads' garbage collection is not timed.
      await new Promise((r) => setTimeout(r, 50));
    }
  } finally {
    await proxy.close();
  }
  return { main: median(main), workers: median(workers) };
}

if (values.child) {
  console.log(JSON.stringify(await run(values.child)));
  process.exit(0);
}

/** One run in a process of its own: two builds' modules (and native addons) do not share one. */
function runApart(root) {
  const args = [fileURLToPath(import.meta.url), '--child', root, '--routes', String(ROUTES), '--threads', String(THREADS), '--changes', String(CHANGES), '--change', CHANGE, '--port', String(PORT), ...(LISTENER_POLICY ? ['--listener-policy'] : [])];
  const out = execFileSync(process.execPath, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  return JSON.parse(out.trim().split('\n').pop());
}

const builds = [{ label: 'this build', root: ROOT }, ...(values.baseline ? [{ label: `baseline (${values.baseline})`, root: values.baseline }] : [])];
console.log(`${CHANGE === 'route' ? 'one route changed' : "one Service's endpoints changed, every route sending to it,"} among ${ROUTES}${LISTENER_POLICY ? ' (a listener policy)' : ''}, ${THREADS} thread${THREADS === 1 ? '' : 's'}, ${CHANGES} changes a run, ${RUNS} run(s) per build; medians in ms`);
const results = new Map(builds.map((b) => [b.label, []]));
for (let r = 0; r < RUNS; r++) {
  for (const b of r % 2 ? [...builds].reverse() : builds) {
    const x = runApart(b.root);
    results.get(b.label).push(x);
    console.log(`  [run ${r + 1}] ${b.label}: main thread ${x.main.toFixed(2)}, worker threads after it ${x.workers.toFixed(2)}`);
  }
}
for (const b of builds) {
  const xs = results.get(b.label);
  const m = median(xs.map((x) => x.main));
  const w = median(xs.map((x) => x.workers));
  console.log(`${b.label}: main thread ${m.toFixed(2)} ms, worker threads after it ${w.toFixed(2)} ms, source to every thread serving ${(m + w).toFixed(2)} ms`);
}
