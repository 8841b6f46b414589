#!/usr/bin/env node
// Tollgate side by side with agentgateway, in one command: the same routes (configs.mjs), the
// same backends (bench/backend.mjs; mock-llm for the LLM route), the same load, each proxy
// pinned to the same single CPU, rounds interleaved (the two proxies alternate, and which one
// goes first alternates too). Per case and proxy it prints req/s, p50/p99/p99.9, the proxy's
// CPU time per request (from /proc/<pid>/stat), its RSS, and Tollgate/agentgateway ratios.
//
//   pnpm build && AGENTGATEWAY_BIN=/path/to/agentgateway node bench/peers/run.mjs
//   node bench/peers/run.mjs --help
//
// Pinning on a machine with 2+ CPUs: the proxy under test on CPU 0; the backend, mock-llm and
// wrk on CPU 1, so the load generator never takes the proxy's core. Every run is bounded
// (warm-up + measured seconds per case and round); every process started is stopped at the
// end, on failure and on Ctrl-C.
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus as osCpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { intOption, median } from '../lib/stats.mjs';
import { ROOT } from '../lib/cases.mjs';
import { sampleCpu } from '../lib/cpu.mjs';
import { commands, killAllNow, stopAll, stopAllOnSignals } from '../lib/procs.mjs';
import { probe } from '../lib/requests.mjs';
import { allocatedBytes } from '../lib/memory.mjs';
import { procCpuUs, rssKiB } from './proc-stats.mjs';
import { agentgateway, startPeerBackends, tollgate } from './proxies.mjs';
import { PEER_REQUESTS } from './requests.mjs';
import { ensureWrk, pacingDelayMs, pacingLine, wrk } from './wrk.mjs';

const HELP = `Usage: AGENTGATEWAY_BIN=<path> node bench/peers/run.mjs [options]

Options:
  --rounds <n>          interleaved rounds; the table shows medians         [default 5]
  --duration <s>        measured seconds per case, proxy and round           [default 10]
  --warmup <s>          unmeasured warm-up seconds before each measurement   [default 3]
  --settle <s>          idle seconds after start before the idle RSS is read [default 6]
  --connections <n>     wrk keep-alive connections                           [default 32]
  --rate <req/s>        paced load: each connection waits 1000 x connections / rate ms
                        (whole ms) between an answer and its next request, so every proxy
                        gets about the same rate; p99 "at the same load". Default: closed
                        loop, each proxy at its own saturation
  --only <cases>        comma-separated: ${Object.keys(PEER_REQUESTS).join(', ')}
  --tollgate-root <dir> run Tollgate from this built checkout                [default: this one]
  --baseline <dir>      also run Tollgate from this built checkout (e.g. a worktree of the
                        commit before a change) as tollgate@baseline, in the same rounds
  --node-args="<args>"  extra node flags for Tollgate, e.g. --node-args=--max-semi-space-size=16
                        (with "=": a value that starts with a dash is refused otherwise)
  --baseline-node <path>
                        the Node binary the baseline runs with (default: this one), e.g.
                        to compare two Node versions
  --baseline-node-args="<args>"
                        node flags for the baseline instead (default: --node-args); with
                        --baseline . this compares two flag sets of one checkout
  --workers <n|auto>    Tollgate's threads (its --workers; the baseline's too). Default: the
                        proxy's own (auto), one thread when pinned to one CPU
  --env="<NAME=VALUE ...>"
                        environment variables for Tollgate's process, e.g.
                        --env=MALLOC_ARENA_MAX=2 (the allocator's settings, read at exec)
  --baseline-env="<NAME=VALUE ...>"
                        the baseline's instead (default: --env); with --baseline . this
                        compares two environments of one checkout
  --profile             run Tollgate with --cpu-prof; profiles kept under bench/.bench-out/peers/
  --no-pin              do not pin processes to CPUs
  --json <file>         results as JSON            [default bench/.bench-out/peers/last-run.json]
  -h, --help

Environment: AGENTGATEWAY_BIN (required for the agentgateway side; without it only Tollgate runs).
`;

function options() {
  const { values } = parseArgs({
    options: {
      rounds: { type: 'string', default: '5' },
      duration: { type: 'string', default: '10' },
      warmup: { type: 'string', default: '3' },
      settle: { type: 'string', default: '6' },
      connections: { type: 'string', default: '32' },
      rate: { type: 'string' },
      only: { type: 'string' },
      'tollgate-root': { type: 'string', default: ROOT },
      baseline: { type: 'string' },
      'node-args': { type: 'string', default: '' },
      'baseline-node-args': { type: 'string' },
      'baseline-node': { type: 'string' },
      env: { type: 'string', default: '' },
      workers: { type: 'string' },
      'baseline-env': { type: 'string' },
      profile: { type: 'boolean' },
      'no-pin': { type: 'boolean' },
      json: { type: 'string', default: join(ROOT, 'bench/.bench-out/peers/last-run.json') },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    process.stdout.write(HELP);
    process.exit(0);
  }
  const int = (name, min) => intOption(values, name, min);
  const cases = values.only ? values.only.split(',').map((s) => s.trim()).filter(Boolean) : Object.keys(PEER_REQUESTS);
  for (const c of cases) if (!PEER_REQUESTS[c]) throw new Error(`--only: unknown case '${c}'; cases: ${Object.keys(PEER_REQUESTS).join(', ')}`);
  return {
    rounds: int('rounds', 1),
    durationS: int('duration', 1),
    warmupS: int('warmup', 0),
    settleS: int('settle', 0),
    connections: int('connections', 1),
    // Paced load: each connection pauses between an answer and its next request, so both
    // proxies get (about) the same request rate instead of as many as each can serve.
    delayMs: pacingDelayMs(int('connections', 1), values.rate === undefined ? undefined : int('rate', 1)),
    cases,
    tollgateRoot: values['tollgate-root'],
    baseline: values.baseline ?? null,
    nodeArgs: values['node-args'].split(/\s+/).filter(Boolean),
    baselineNodeArgs: (values['baseline-node-args'] ?? values['node-args']).split(/\s+/).filter(Boolean),
    baselineNode: values['baseline-node'] ?? process.execPath,
    args: values.workers === undefined ? [] : ['--workers', values.workers],
    env: envOption('--env', values.env),
    baselineEnv: envOption('--baseline-env', values['baseline-env'] ?? values.env),
    profile: values.profile ?? false,
    pin: !values['no-pin'],
    json: values.json,
  };
}

/** `NAME=VALUE NAME=VALUE` as an object; a word without `=` or with a bad name is refused. */
function envOption(flag, text) {
  const out = {};
  for (const word of text.split(/\s+/).filter(Boolean)) {
    const m = /^([A-Za-z_][A-Za-z0-9_]*)=(.*)$/s.exec(word);
    if (!m) throw new Error(`${flag}: got "${word}"; give NAME=VALUE words separated by spaces`);
    out[m[1]] = m[2];
  }
  return out;
}

const envText = (env) => Object.entries(env).map(([k, v]) => `${k}=${v}`).join(' ');

const fmt = {
  n: (v, d = 0) => (v === null ? '-' : v.toLocaleString('en-US', { minimumFractionDigits: d, maximumFractionDigits: d })),
  ratio: (a, b) => (a === null || b === null || !b ? '-' : `${(a / b).toFixed(2)}x`),
};

function table(rows) {
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => String(r[i]).length)));
  const line = (r) => `| ${r.map((c, i) => (i === 0 ? String(c).padEnd(widths[i]) : String(c).padStart(widths[i]))).join(' | ')} |`;
  return [line(rows[0]), `|${widths.map((w, i) => (i === 0 ? '-'.repeat(w + 2) : `${'-'.repeat(w + 1)}:`)).join('|')}|`, ...rows.slice(1).map(line)].join('\n');
}

/** One measured window: wrk against the proxy, the proxy's CPU time and RSS around it. */
async function measure(opts, env, proxy, request) {
  const common = { baseUrl: proxy.url, request, connections: opts.connections, cpu: env.cpus.load, workDir: env.dir, delayMs: opts.delayMs };
  if (opts.warmupS) await wrk({ ...common, durationS: opts.warmupS });
  const pid = proxy.proc.pid;
  // Bytes the JavaScript heap handed out over the measured window (Tollgate only: its admin
  // API's /memory): unlike CPU time, the machine's other load does not move it.
  const alloc0 = proxy.adminUrl ? await allocatedBytes(proxy.adminUrl) : null;
  let cpu0 = null;
  let sampler = null;
  const res = await wrk({
    ...common,
    durationS: opts.durationS,
    onStart: () => {
      cpu0 = procCpuUs(pid);
      sampler = sampleCpu({ proxy: pid });
    },
  });
  const cpuUs = procCpuUs(pid) - cpu0;
  const busy = sampler.stop();
  const rss = rssKiB(pid);
  const allocKiBPerReq = alloc0 === null ? null : ((await allocatedBytes(proxy.adminUrl)) - alloc0) / 1024 / res.requests;
  return { ...res, cpuUsPerReq: cpuUs / res.requests, allocKiBPerReq, proxyCpuPct: busy.proxy, perCpu: busy.perCpu, rssKiB: rss.rss, hwmKiB: rss.hwm };
}

async function main() {
  const opts = options();
  const pinned = opts.pin && commands.taskset && osCpus().length >= 2;
  const cpus = pinned ? { proxy: '0', load: '1', support: '1' } : { proxy: null, load: null, support: null };
  ensureWrk();
  const started = new Date().toISOString();
  console.log(`Tollgate vs agentgateway, ${started}`);
  console.log(`machine: ${osCpus().length} CPUs, ${osCpus()[0]?.model}; node ${process.version}; load average ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);
  console.log(`load: wrk -t1 -c${opts.connections}, ${opts.warmupS} s warm-up + ${opts.durationS} s per case, proxy and round; ${opts.rounds} round(s)`);
  console.log(pacingLine(opts.connections, opts.delayMs, 'proxy'));
  console.log(pinned ? 'pinning: proxy under test on CPU 0; backend, mock-llm and wrk on CPU 1' : 'pinning: off');
  if (opts.nodeArgs.length) console.log(`tollgate node flags: ${opts.nodeArgs.join(' ')}`);
  if (opts.baseline && opts.baselineNodeArgs.join(' ') !== opts.nodeArgs.join(' ')) console.log(`tollgate@baseline node flags: ${opts.baselineNodeArgs.join(' ') || '(none)'}`);
  if (opts.args.length) console.log(`tollgate flags: ${opts.args.join(' ')}`);
  if (Object.keys(opts.env).length) console.log(`tollgate environment: ${envText(opts.env)}`);
  if (opts.baseline && envText(opts.baselineEnv) !== envText(opts.env)) console.log(`tollgate@baseline environment: ${envText(opts.baselineEnv) || '(as this shell)'}`);
  if (opts.baseline && opts.baselineNode !== process.execPath) console.log(`tollgate@baseline runs on ${opts.baselineNode} (Tollgate on ${process.execPath}, Node ${process.versions.node})`);

  const dir = mkdtempSync(join(tmpdir(), 'tollgate-peers-'));
  const env = { dir, cpus, backend: null, mockLlm: null, profileDir: opts.profile ? join(dir, 'profiles') : null };
  if (env.profileDir) mkdirSync(env.profileDir);
  try {
    Object.assign(env, await startPeerBackends(cpus.support));

    const proxies = [];
    const candidates = [tollgate({ root: opts.tollgateRoot, nodeArgs: opts.nodeArgs, args: opts.args, env: opts.env })];
    if (opts.baseline) candidates.push(tollgate({ root: opts.baseline, nodeArgs: opts.baselineNodeArgs, node: opts.baselineNode, args: opts.args, env: opts.baselineEnv, id: 'tollgate@baseline' }));
    candidates.push(agentgateway({ bin: process.env.AGENTGATEWAY_BIN }));
    for (const p of candidates) {
      const why = p.skip();
      if (why) {
        console.log(`skip ${p.id}: ${why}`);
        continue;
      }
      const t0 = Date.now();
      const s = await p.start(env);
      for (const c of opts.cases) {
        const bad = await probe(s.url, PEER_REQUESTS[c]);
        if (bad) throw new Error(`${p.id} answers ${c} wrongly: ${bad}`);
      }
      // Idle: started, every route answered once, then quiet for --settle seconds (what a
      // process gives back once quiet, e.g. Tollgate's collection after a config apply, counts).
      await sleep(opts.settleS * 1000);
      const idle = rssKiB(s.proc.pid);
      console.log(`ready ${p.id} at ${s.url} in ${Date.now() - t0} ms, RSS ${fmt.n(idle.rss / 1024, 1)} MiB idle`);
      proxies.push({ ...p, ...s, idleRssKiB: idle.rss, runs: Object.fromEntries(opts.cases.map((c) => [c, []])) });
    }
    console.log('');

    for (let round = 1; round <= opts.rounds; round++) {
      for (const c of opts.cases) {
        // Alternate which proxy goes first, so neither always follows the other's load.
        const order = round % 2 ? proxies : [...proxies].reverse();
        for (const p of order) {
          const r = await measure(opts, env, p, PEER_REQUESTS[c]);
          p.runs[c].push(r);
          console.log(
            `[round ${round}/${opts.rounds}] ${c} ${p.id}: ${fmt.n(r.rps)} req/s, p50 ${fmt.n(r.p50Ms, 2)} / p99 ${fmt.n(r.p99Ms, 2)} / p99.9 ${fmt.n(r.p999Ms, 2)} ms, ` +
              `${fmt.n(r.cpuUsPerReq, 1)} µs CPU/req, ${r.allocKiBPerReq === null ? '' : `${fmt.n(r.allocKiBPerReq, 1)} KiB allocated/req, `}proxy ${fmt.n(r.proxyCpuPct)}% of a core, CPU0/CPU1 busy ${r.perCpu.map((b) => fmt.n(b)).join('/')}%, RSS ${fmt.n(r.rssKiB / 1024, 1)} MiB` +
              (r.errors || r.non2xx ? `, ERRORS: ${r.errors} socket (timeouts included), ${r.non2xx} non-2xx` : ''),
          );
        }
      }
    }
    await stopAll();

    const summary = proxies.map((p) => ({
      id: p.id,
      idleRssMiB: p.idleRssKiB / 1024,
      cases: Object.fromEntries(
        opts.cases.map((c) => {
          const runs = p.runs[c];
          const m = (k) => median(runs.map((r) => r[k]));
          const errors = runs.reduce((a, r) => a + r.errors + r.non2xx, 0);
          return [c, { errors, rps: m('rps'), p50Ms: m('p50Ms'), p99Ms: m('p99Ms'), p999Ms: m('p999Ms'), cpuUsPerReq: m('cpuUsPerReq'), allocKiBPerReq: runs[0].allocKiBPerReq === null ? null : m('allocKiBPerReq'), proxyCpuPct: m('proxyCpuPct'), rssMiB: Math.max(...runs.map((r) => r.rssKiB)) / 1024, runs }];
        }),
      ),
    }));
    console.log('');
    console.log(`medians of ${opts.rounds} round(s); load average at the end ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);
    const tg = summary.find((s) => s.id === 'tollgate');
    const ag = summary.find((s) => s.id === 'agentgateway');
    const base = summary.find((s) => s.id === 'tollgate@baseline');
    const rows = [['case', 'proxy', 'req/s', 'p50 ms', 'p99 ms', 'p99.9 ms', 'CPU µs/req', 'KiB alloc/req', 'proxy CPU%', 'RSS MiB (max after load)']];
    for (const c of opts.cases) {
      for (const s of summary) {
        const x = s.cases[c];
        rows.push([c, x.errors ? `${s.id} (${x.errors} errors)` : s.id, fmt.n(x.rps), fmt.n(x.p50Ms, 2), fmt.n(x.p99Ms, 2), fmt.n(x.p999Ms, 2), fmt.n(x.cpuUsPerReq, 1), fmt.n(x.allocKiBPerReq, 1), fmt.n(x.proxyCpuPct), fmt.n(x.rssMiB, 1)]);
      }
      const ratio = (x, y, label) => {
        const a = x.cases[c];
        const b = y.cases[c];
        rows.push([c, label, fmt.ratio(a.rps, b.rps), fmt.ratio(a.p50Ms, b.p50Ms), fmt.ratio(a.p99Ms, b.p99Ms), fmt.ratio(a.p999Ms, b.p999Ms), fmt.ratio(a.cpuUsPerReq, b.cpuUsPerReq), fmt.ratio(a.allocKiBPerReq, b.allocKiBPerReq), '', fmt.ratio(a.rssMiB, b.rssMiB)]);
      };
      if (tg && ag) ratio(tg, ag, 'Tollgate / agentgateway');
      if (base && ag) ratio(base, ag, 'baseline / agentgateway');
      if (tg && base) ratio(tg, base, 'Tollgate / baseline');
    }
    console.log(table(rows));
    console.log('');
    for (const s of summary) console.log(`${s.id}: RSS idle ${fmt.n(s.idleRssMiB, 1)} MiB`);
    if (tg && ag) {
      console.log('');
      console.log('targets (printed, not asserted): CPU/req <= 1.2x, p99 <= 1.5x agentgateway; RSS idle < 80 MiB');
      for (const c of opts.cases) {
        const cpu = tg.cases[c].cpuUsPerReq / ag.cases[c].cpuUsPerReq;
        const p99 = tg.cases[c].p99Ms / ag.cases[c].p99Ms;
        console.log(`  ${c}: CPU/req ${cpu.toFixed(2)}x ${cpu <= 1.2 ? 'met' : 'NOT met'}; p99 ${p99.toFixed(2)}x ${p99 <= 1.5 ? 'met' : 'NOT met'}`);
      }
      console.log(`  RSS idle ${fmt.n(tg.idleRssMiB, 1)} MiB ${tg.idleRssMiB < 80 ? 'met' : 'NOT met'}`);
    }

    mkdirSync(join(opts.json, '..'), { recursive: true });
    writeFileSync(opts.json, `${JSON.stringify({ started, loadavgEnd: loadavg(), options: { ...opts, pinned }, summary }, null, 2)}\n`);
    console.log(`results: ${opts.json}`);
  } finally {
    // Tollgate writes its --cpu-prof profile as it exits: keep it, however the run ended.
    await stopAll();
    if (env.profileDir) {
      const keep = join(ROOT, 'bench/.bench-out/peers');
      mkdirSync(keep, { recursive: true });
      for (const f of readdirSync(env.profileDir)) {
        writeFileSync(join(keep, f), readFileSync(join(env.profileDir, f)));
        console.log(`cpu profile: ${join(keep, f)} (node bench/lib/profile-summary.mjs <file>)`);
      }
    }
    rmSync(dir, { recursive: true, force: true });
  }
}

stopAllOnSignals();
process.on('exit', () => killAllNow());

main().catch(async (err) => {
  console.error(`peer bench failed: ${err.stack ?? err.message}`);
  await stopAll();
  process.exit(1);
});
