// Does a request cost the same in the fifth minute of load as in the first? One Tollgate (the
// peer bench's config: the plain route to bench/backend.mjs and the metered LLM route to
// mock-llm) under continuous wrk load for --minutes, one case at a time; each minute (one wrk
// run of --slice seconds, back to back) prints the proxy's CPU per request, its RSS, its live
// heap (read with a full GC after the slice, outside the measured time), the event-loop delay
// (p50, p99, max of that minute, from the proxy's own tollgate_process_nodejs_eventloop_lag_*
// gauges, which reset at each scrape) and the GC pauses of that minute
// (tollgate_process_nodejs_gc_duration_seconds). The last line compares the last minute with
// the first: CPU per request and RSS (the speed issue's bound: within 5%). Printed, not asserted.
//
//   pnpm build && node bench/drift.mjs [--minutes 5] [--slice 60] [--case llm] [--connections 32]
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus as osCpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { TOLLGATE_BIN } from './lib/cases.mjs';
import { allocatedBytes, liveHeapMiB } from './lib/memory.mjs';
import { commands, freePort, isBindListening, startProcess, stopAll } from './lib/procs.mjs';
import { waitUntilAnswering } from './lib/requests.mjs';
import { intOption } from './lib/stats.mjs';
import { runBench } from './lib/variants.mjs';
import { writeTollgateConfig } from './peers/configs.mjs';
import { procCpuUs, rssKiB } from './peers/proc-stats.mjs';
import { startPeerBackends } from './peers/proxies.mjs';
import { PEER_REQUESTS } from './peers/requests.mjs';
import { ensureWrk, wrk } from './peers/wrk.mjs';

const HELP = `Usage: node bench/drift.mjs [options]

Options:
  --minutes <n>      slices of load, back to back (1 to 30)           [default 5]
  --slice <s>        seconds per slice: a minute by default (10 to 300) [default 60]
  --case <cases>     comma-separated: ${Object.keys(PEER_REQUESTS).join(', ')} [default plain,llm]
  --connections <n>  wrk keep-alive connections (1 to 256)             [default 32]
  -h, --help
`;

function options() {
  const { values } = parseArgs({
    options: {
      minutes: { type: 'string', default: '5' },
      slice: { type: 'string', default: '60' },
      case: { type: 'string', default: 'plain,llm' },
      connections: { type: 'string', default: '32' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    process.stdout.write(HELP);
    process.exit(0);
  }
  const bounded = (name, min, max) => {
    const n = intOption(values, name, min);
    if (n > max) throw new Error(`--${name} must be at most ${max}, got ${n}`);
    return n;
  };
  const cases = values.case.split(',').map((c) => c.trim());
  for (const c of cases) if (!PEER_REQUESTS[c]) throw new Error(`--case: unknown case '${c}' (one of ${Object.keys(PEER_REQUESTS).join(', ')})`);
  return { minutes: bounded('minutes', 1, 30), sliceS: bounded('slice', 10, 300), cases, connections: bounded('connections', 1, 256) };
}

/** The samples of one metric family in a Prometheus text exposition, by their label text. */
function samples(text, name) {
  const out = new Map();
  for (const line of text.split('\n')) {
    if (!line.startsWith(name)) continue;
    const m = /^([a-zA-Z_:][\w:]*)(\{[^}]*\})? (\S+)$/.exec(line);
    if (m && m[1] === name) out.set(m[2] ?? '', Number(m[3]));
  }
  return out;
}
const total = (map) => [...map.values()].reduce((a, b) => a + b, 0);

async function scrape(metricsUrl) {
  const text = await (await fetch(metricsUrl)).text();
  const lag = (q) => total(samples(text, `tollgate_process_nodejs_eventloop_lag_${q}_seconds`)) * 1000;
  return {
    lagP50Ms: lag('p50'),
    lagP99Ms: lag('p99'),
    lagMaxMs: lag('max'),
    gcCount: total(samples(text, 'tollgate_process_nodejs_gc_duration_seconds_count')),
    gcMs: total(samples(text, 'tollgate_process_nodejs_gc_duration_seconds_sum')) * 1000,
  };
}

const f = (x, d = 1) => x.toFixed(d);

async function main() {
  const opts = options();
  ensureWrk();
  const pinned = commands.taskset && osCpus().length >= 2;
  const cpus = { proxy: pinned ? '0' : null, load: pinned ? '1' : null };
  console.log(`drift under load, ${new Date().toISOString()}`);
  console.log(`machine: ${osCpus().length} CPUs; node ${process.version}; load average ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);
  console.log(`load: wrk -t1 -c${opts.connections}, ${opts.minutes} slice(s) of ${opts.sliceS} s per case; ${pinned ? 'proxy on CPU 0, backends and wrk on CPU 1' : 'no pinning'}`);
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-drift-bench-'));
  try {
    const { backend, mockLlm } = await startPeerBackends(cpus.load);
    const port = await freePort();
    const adminPort = await freePort();
    const metricsPort = await freePort();
    const file = writeTollgateConfig(dir, { port, adminPort, backendHost: backend.host, mockLlmHost: mockLlm.host });
    const proxy = startProcess('tollgate', process.execPath, [TOLLGATE_BIN, '--file', file, '--metrics-addr', `127.0.0.1:${metricsPort}`, '--readiness-addr', `127.0.0.1:${await freePort()}`], { cpu: cpus.proxy });
    await proxy.waitForLine(isBindListening, 120_000);
    const url = `http://127.0.0.1:${port}`;
    const adminUrl = `http://127.0.0.1:${adminPort}`;
    const metricsUrl = `http://127.0.0.1:${metricsPort}/metrics`;
    for (const c of opts.cases) await waitUntilAnswering(url, PEER_REQUESTS[c], 15_000);
    const idle = { rssMiB: rssKiB(proxy.pid).rss / 1024, heapMiB: await liveHeapMiB(adminUrl) };
    console.log(`idle: RSS ${f(idle.rssMiB)} MiB, live heap ${f(idle.heapMiB)} MiB`);
    for (const c of opts.cases) {
      console.log(`\ncase ${c}`);
      console.log('| minute | req/s | p99 ms | CPU µs/req | KiB allocated/req | RSS MiB | live heap MiB | loop delay p50 / p99 / max ms | GCs | GC ms |');
      console.log('|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|');
      const rows = [];
      let before = await scrape(metricsUrl);
      for (let minute = 1; minute <= opts.minutes; minute++) {
        let cpu0 = 0;
        const alloc0 = await allocatedBytes(adminUrl);
        const r = await wrk({ baseUrl: url, request: PEER_REQUESTS[c], connections: opts.connections, durationS: opts.sliceS, cpu: cpus.load, workDir: dir, onStart: () => (cpu0 = procCpuUs(proxy.pid)) });
        const cpuUsPerReq = (procCpuUs(proxy.pid) - cpu0) / r.requests;
        const rssMiB = rssKiB(proxy.pid).rss / 1024;
        const allocKiBPerReq = ((await allocatedBytes(adminUrl)) - alloc0) / 1024 / r.requests;
        const after = await scrape(metricsUrl);
        const heapMiB = await liveHeapMiB(adminUrl);
        const row = { minute, ...r, cpuUsPerReq, allocKiBPerReq, rssMiB, heapMiB, lag: after, gcs: after.gcCount - before.gcCount, gcMs: after.gcMs - before.gcMs };
        rows.push(row);
        const bad = r.errors || r.non2xx ? ` ERRORS ${r.errors} socket, ${r.non2xx} non-2xx` : '';
        console.log(`| ${minute} | ${Math.round(r.rps)} | ${f(r.p99Ms, 2)} | ${f(cpuUsPerReq)} | ${f(allocKiBPerReq, 2)} | ${f(rssMiB)} | ${f(heapMiB)} | ${f(after.lagP50Ms, 2)} / ${f(after.lagP99Ms, 2)} / ${f(after.lagMaxMs, 2)} | ${row.gcs} | ${f(row.gcMs)} |${bad}`);
        // The manual GC of liveHeapMiB counts in the collector's figures: read them again after it.
        before = await scrape(metricsUrl);
      }
      const first = rows[0];
      const last = rows[rows.length - 1];
      console.log(`${c}: minute ${last.minute} against minute 1: CPU per request ${f(last.cpuUsPerReq / first.cpuUsPerReq, 3)}x, bytes allocated per request ${f(last.allocKiBPerReq / first.allocKiBPerReq, 3)}x, RSS ${f(last.rssMiB / first.rssMiB, 3)}x, live heap ${f(last.heapMiB - first.heapMiB)} MiB (bound: within 5%)`);
    }
  } finally {
    await stopAll();
    rmSync(dir, { recursive: true, force: true });
  }
}

runBench('drift', main);
