#!/usr/bin/env node
// Tollgate benchmark: one run measures requests/s and p50/p99 latency of the fixed-response
// backend direct, bare @fastify/http-proxy, nginx (when installed), tollgate with one route
// and with 10,000 routes, and an LLM route through tollgate to mock-llm, then prints the
// ratios against direct and against @fastify/http-proxy. Absolute figures depend on the
// machine and whatever else runs on it; ratios from one run are what to compare.
//
//   pnpm bench                      (builds, then runs this file)
//   node bench/run.mjs --help
//
// Every server and each load-generator run is its own process; on a machine with 2+ cores
// the server under test is pinned to CPU 0 and the backends and load generator to CPU 1.
// Every process started here is stopped at the end, on failure and on Ctrl-C.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { baselineCases, CASES, MOCK_LLM_BIN, ROOT } from './lib/cases.mjs';
import { sampleCpu } from './lib/cpu.mjs';
import { pickTool, runLoad } from './lib/load.mjs';
import { commands, killAllNow, startProcess, stopAll, stopAllOnSignals } from './lib/procs.mjs';
import { probe, REQUESTS } from './lib/requests.mjs';

const HELP = `Usage: node bench/run.mjs [options]      (or: pnpm bench [-- options])

Options (environment variable in brackets):
  --duration <s>      measured seconds per case                [BENCH_DURATION, default 10]
  --warmup <s>        unmeasured warm-up seconds per case      [BENCH_WARMUP, default 3]
  --connections <n>   concurrent keep-alive connections        [BENCH_CONNECTIONS, default 50]
  --rounds <n>        measure every case n times, interleaved; the table shows medians
                                                               [BENCH_ROUNDS, default 1]
  --tool wrk|autocannon  load generator (default: wrk when installed, else autocannon)
                                                               [BENCH_TOOL]
  --only <ids>        comma-separated case ids to run          [BENCH_ONLY]
  --no-pin            do not pin processes to CPUs             [BENCH_PIN=0]
  --baseline <dir>    also run every tollgate case from the built checkout <dir> (e.g. a git
                      worktree of the commit before a change), as <id>@baseline, and print
                      req/s and CPU µs per request against it     [BENCH_BASELINE]
  --baseline-node <path>  the Node binary the baseline runs with (default: this one), e.g.
                      to compare two Node versions on one build  [BENCH_BASELINE_NODE]
  --profile <id>      run that case's node server with --cpu-prof and keep the profile
  --json <file>       also write the results as JSON (default bench/.bench-out/last-run.json)
  --keep              keep the temporary directory (configs, logs, profiles)
  -h, --help

Cases: ${CASES.map((c) => c.id).join(', ')}
`;

function options() {
  const { values } = parseArgs({
    options: {
      duration: { type: 'string' },
      warmup: { type: 'string' },
      connections: { type: 'string' },
      rounds: { type: 'string' },
      tool: { type: 'string' },
      only: { type: 'string' },
      'no-pin': { type: 'boolean' },
      profile: { type: 'string' },
      baseline: { type: 'string' },
      'baseline-node': { type: 'string' },
      json: { type: 'string' },
      keep: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    process.stdout.write(HELP);
    process.exit(0);
  }
  const env = process.env;
  const num = (name, raw, dflt, min) => {
    if (raw === undefined || raw === '') return dflt;
    const n = Number(raw);
    if (!Number.isInteger(n) || n < min) throw new Error(`--${name} must be an integer >= ${min}, got '${raw}'`);
    return n;
  };
  const tool = values.tool ?? env.BENCH_TOOL;
  if (tool !== undefined && tool !== 'wrk' && tool !== 'autocannon') throw new Error(`--tool must be wrk or autocannon, got '${tool}'`);
  const only = (values.only ?? env.BENCH_ONLY)?.split(',').map((s) => s.trim()).filter(Boolean) ?? null;
  for (const id of only ?? []) if (!CASES.some((c) => c.id === id)) throw new Error(`unknown case '${id}'; cases: ${CASES.map((c) => c.id).join(', ')}`);
  if (values.profile && !CASES.some((c) => c.id === values.profile)) throw new Error(`--profile: unknown case '${values.profile}'`);
  return {
    durationS: num('duration', values.duration ?? env.BENCH_DURATION, 10, 1),
    warmupS: num('warmup', values.warmup ?? env.BENCH_WARMUP, 3, 0),
    connections: num('connections', values.connections ?? env.BENCH_CONNECTIONS, 50, 1),
    rounds: num('rounds', values.rounds ?? env.BENCH_ROUNDS, 1, 1),
    tool: pickTool(tool),
    only,
    pin: !values['no-pin'] && env.BENCH_PIN !== '0',
    profile: values.profile ?? null,
    baseline: (() => {
      const dir = values.baseline ?? env.BENCH_BASELINE;
      if (!dir) return null;
      if (!existsSync(join(dir, 'packages/proxy/bin/tollgate.js'))) throw new Error(`--baseline: ${dir} is not a Tollgate checkout (no packages/proxy/bin/tollgate.js)`);
      return dir;
    })(),
    baselineNode: (() => {
      const node = values['baseline-node'] ?? env.BENCH_BASELINE_NODE;
      if (!node) return process.execPath;
      if (!existsSync(node)) throw new Error(`--baseline-node: ${node} does not exist`);
      return node;
    })(),
    json: values.json ?? join(ROOT, 'bench/.bench-out/last-run.json'),
    keep: Boolean(values.keep),
  };
}

function firstLine(cmd, args) {
  try {
    const out = execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    return out.split('\n')[0].trim();
  } catch (err) {
    // `wrk -v` and `nginx -v` exit non-zero or print to stderr
    return `${err.stdout ?? ''}${err.stderr ?? ''}`.split('\n')[0].trim() || null;
  }
}

function machine(opts) {
  let cpuModel = 'unknown';
  try {
    cpuModel = /^model name\s*:\s*(.*)$/m.exec(readFileSync('/proc/cpuinfo', 'utf8'))?.[1] ?? cpuModel;
  } catch {
    // not Linux
  }
  return {
    date: new Date().toISOString(),
    cpus: availableParallelism(),
    cpuModel,
    node: process.version,
    loadavg: loadavg().map((l) => l.toFixed(2)).join(' '),
    tool: opts.tool === 'wrk' ? `wrk ${/\d+\.\d+(\.\d+)?/.exec(firstLine('wrk', ['-v']) ?? '')?.[0] ?? ''}`.trim() : `autocannon ${JSON.parse(readFileSync(join(ROOT, 'node_modules/autocannon/package.json'), 'utf8')).version}`,
    nginx: commands.nginx ? firstLine(commands.nginx, ['-v']) : null,
  };
}

const median = (xs) => {
  const v = xs.filter((x) => typeof x === 'number' && Number.isFinite(x)).sort((a, b) => a - b);
  if (!v.length) return null;
  const m = Math.floor(v.length / 2);
  return v.length % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
};

function summarize(runs) {
  const pick = (f) => median(runs.map(f));
  return {
    rps: pick((r) => r.rps),
    // Requests per second of CPU the server under test got: steadier than req/s when
    // something outside the bench takes CPU from it.
    rpsPerCore: pick((r) => (r.cpu.server ? r.rps / (r.cpu.server / 100) : null)),
    rpsSpread: runs.length > 1 ? (Math.max(...runs.map((r) => r.rps)) - Math.min(...runs.map((r) => r.rps))) / median(runs.map((r) => r.rps)) : null,
    p50Ms: pick((r) => r.p50Ms),
    p99Ms: pick((r) => r.p99Ms),
    cpu: {
      server: pick((r) => r.cpu.server),
      backend: pick((r) => r.cpu.backend),
      load: pick((r) => r.cpu.load),
      other: pick((r) => {
        if (r.cpu.machine == null) return null;
        const ours = (r.cpu.server === r.cpu.backend ? 0 : (r.cpu.server ?? 0)) + (r.cpu.backend ?? 0) + (r.cpu.load ?? 0);
        return Math.max(0, r.cpu.machine - ours);
      }),
    },
    perCpu: runs[0].cpu.perCpu?.map((_, i) => pick((r) => r.cpu.perCpu?.[i])) ?? [],
    errors: runs.reduce((a, r) => a + r.errors, 0),
    non2xx: runs.reduce((a, r) => a + r.non2xx, 0),
    rounds: runs,
  };
}

const fmt = {
  rps: (v) => (v == null ? '-' : Math.round(v).toLocaleString('en-US')),
  ms: (v) => (v == null ? '-' : v.toFixed(2)),
  ratio: (a, b) => (a == null || b == null || b === 0 ? '-' : `${(a / b).toFixed(2)}x`),
  pct: (v) => (v == null ? '-' : `${Math.round(v)}`),
};

function table(rows) {
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  const line = (r) => `| ${r.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join(' | ')} |`;
  const sep = `|${widths.map((w, i) => (i === 0 ? `${'-'.repeat(w + 1)}-` : `-${'-'.repeat(w)}:`)).join('|')}|`;
  return [line(rows[0]), sep, ...rows.slice(1).map(line)].join('\n');
}

function report(cases, results, pinned) {
  const byId = Object.fromEntries(results.filter((r) => r.summary).map((r) => [r.id, r]));
  const baseline = (group, role) => cases.find((c) => c.group === group && c.role === role && byId[c.id]);
  const multi = results.some((r) => r.summary?.rpsSpread != null);
  const rows = [
    ['case', 'req/s', ...(multi ? ['spread'] : []), 'p50 ms', 'p99 ms', 'vs direct', 'vs @fastify/http-proxy', 'req/s per server core', 'CPU% server/backend/load/other', 'busy% per CPU', 'errors'],
  ];
  for (const c of cases) {
    const r = results.find((x) => x.id === c.id);
    if (!r) continue;
    if (!r.summary) {
      rows.push([c.label, r.skipped ? 'skipped' : 'failed', ...rows[0].slice(2).map(() => '-')]);
      continue;
    }
    const s = r.summary;
    const direct = baseline(c.group, 'direct');
    const peer = baseline(c.group, 'peer');
    const cpu = [s.cpu.server, c.role === 'direct' ? null : s.cpu.backend, s.cpu.load, s.cpu.other].map(fmt.pct).join('/');
    const perCorePeer = peer && peer.id !== c.id ? ` (${fmt.ratio(s.rpsPerCore, byId[peer.id].summary.rpsPerCore)})` : '';
    rows.push([
      c.label,
      fmt.rps(s.rps),
      ...(multi ? [s.rpsSpread == null ? '-' : `±${Math.round((100 * s.rpsSpread) / 2)}%`] : []),
      fmt.ms(s.p50Ms),
      fmt.ms(s.p99Ms),
      direct && direct.id !== c.id ? fmt.ratio(s.rps, byId[direct.id].summary.rps) : '-',
      peer && peer.id !== c.id ? fmt.ratio(s.rps, byId[peer.id].summary.rps) : '-',
      `${fmt.rps(s.rpsPerCore)}${perCorePeer}`,
      cpu,
      s.perCpu.map(fmt.pct).join('/') || '-',
      s.errors || s.non2xx ? `${s.errors} io, ${s.non2xx} status` : '0',
    ]);
  }
  const out = [table(rows), ''];
  out.push(
    'Ratios are of req/s (medians over rounds; spread = half the max-min range). req/s per server core = req/s divided by the',
    'CPU share the server under test got (the backend, for direct cases), with its ratio against @fastify/http-proxy.',
    'CPU%: 100 = one core busy for the measured window; "other" is everything else the machine ran meanwhile;',
    'busy% per CPU: how busy each CPU was (with pinning, CPU 0 runs the server under test, CPU 1 the backend and load generator).',
  );
  const measured = cases.filter((c) => byId[c.id]);
  const busy = measured.filter((c) => (byId[c.id].summary.cpu.other ?? 0) > 20);
  if (busy.length) {
    out.push(
      `WARNING: other work on the machine took more than 20% of a core during ${busy.length} of ${measured.length} cases, so the`,
      'req/s ratios are noisy: compare per-core figures and spreads, or rerun (more --rounds) when the machine is idle.',
    );
  }
  if (pinned) {
    // CPU 0 had idle time while CPU 1 (backend, load generator) had none: CPU 1 was the limit,
    // not the server under test.
    for (const c of measured.filter((x) => x.role !== 'direct')) {
      const s = byId[c.id].summary;
      if ((s.perCpu[0] ?? 100) < 95 && (s.perCpu[1] ?? 0) >= 95) {
        out.push(
          `note: ${c.id} used ${Math.round(s.cpu.server)}% of CPU 0 (CPU 0 ${Math.round(s.perCpu[0])}% busy) while CPU 1 (backend, load generator) was ${Math.round(s.perCpu[1])}% busy: its req/s is a lower bound.`,
        );
      }
    }
  }
  for (const r of results.filter((x) => !x.summary)) out.push(`${r.skipped ? 'skipped' : 'FAILED'} ${r.id}: ${r.skipped ?? r.error}`);

  // Against the baseline build, when one ran: req/s and CPU time per request of each case.
  const pairs = measured.filter((c) => byId[`${c.id}@baseline`]?.summary);
  if (pairs.length) {
    const cpuUs = (x) => (x.cpu.server && x.rps ? (x.cpu.server / 100) * 1e6 / x.rps : null);
    out.push('', 'Against the baseline build (this build / baseline; CPU µs per request from the server\'s own CPU time):');
    for (const c of pairs) {
      const a = byId[c.id].summary;
      const b = byId[`${c.id}@baseline`].summary;
      const us = (v) => (v == null ? '-' : v.toFixed(1));
      out.push(
        `  ${c.id}: req/s ${fmt.ratio(a.rps, b.rps)}; CPU µs/request ${us(cpuUs(a))} vs ${us(cpuUs(b))} (${fmt.ratio(cpuUs(a), cpuUs(b))}); p99 ${fmt.ms(a.p99Ms)} vs ${fmt.ms(b.p99Ms)} ms`,
      );
    }
  }

  // The bars the issue sets, judged from this run (the bench reports; it never fails on them).
  const one = byId['tollgate-1-route']?.summary;
  const many = byId['tollgate-10k-routes']?.summary;
  const peer = byId['fastify-http-proxy']?.summary;
  const verdict = (ok) => (ok ? 'met' : 'NOT met');
  out.push('', 'Bars (measured in this run, not asserted):');
  if (one && peer) {
    out.push(
      `  tollgate 1 route req/s vs @fastify/http-proxy: ${fmt.ratio(one.rps, peer.rps)} (bar >= 1.20x): ${verdict(one.rps >= 1.2 * peer.rps)}; per server core ${fmt.ratio(one.rpsPerCore, peer.rpsPerCore)}`,
    );
    out.push(`  tollgate 1 route p99 vs @fastify/http-proxy: ${fmt.ms(one.p99Ms)} ms vs ${fmt.ms(peer.p99Ms)} ms (bar: no worse): ${verdict(one.p99Ms <= peer.p99Ms)}`);
  } else out.push('  tollgate 1 route vs @fastify/http-proxy: not measured');
  if (one && many) {
    out.push(
      `  tollgate 10,000 routes req/s vs 1 route: ${fmt.ratio(many.rps, one.rps)} (bar >= 0.90x): ${verdict(many.rps >= 0.9 * one.rps)}; per server core ${fmt.ratio(many.rpsPerCore, one.rpsPerCore)}; p99 ${fmt.ms(many.p99Ms)} ms vs ${fmt.ms(one.p99Ms)} ms`,
    );
  } else out.push('  tollgate 10,000 routes vs 1 route: not measured');
  const llm = byId['llm-tollgate']?.summary;
  const limited = byId['llm-tollgate-ratelimited']?.summary;
  if (llm && limited) {
    out.push(
      `  LLM route with a non-limiting requests+tokens policy vs without: ${fmt.ratio(limited.rps, llm.rps)} (target >= 0.90x): ${verdict(limited.rps >= 0.9 * llm.rps)}; per server core ${fmt.ratio(limited.rpsPerCore, llm.rpsPerCore)}; p99 ${fmt.ms(limited.p99Ms)} ms vs ${fmt.ms(llm.p99Ms)} ms`,
    );
  } else out.push('  LLM route with a rate-limit policy vs without: not measured');
  return out.join('\n');
}

async function main() {
  const opts = options();
  const m = machine(opts);
  const pinned = opts.pin && commands.taskset && m.cpus >= 2;
  const cpus = pinned ? { server: '0', support: '1' } : { server: null, support: null };
  const chosen = CASES.filter((c) => !opts.only || opts.only.includes(c.id));
  // Baseline cases follow their own case, so interleaved rounds measure the pair back to back.
  const baselines = opts.baseline ? new Map(baselineCases(opts.baseline, opts.baselineNode).map((b) => [b.id, b])) : new Map();
  const selected = chosen.flatMap((c) => (baselines.has(`${c.id}@baseline`) ? [c, baselines.get(`${c.id}@baseline`)] : [c]));

  console.log(`Tollgate bench, ${m.date}`);
  console.log(`machine: ${m.cpus} CPUs, ${m.cpuModel}; node ${m.node}; load average ${m.loadavg}`);
  console.log(`load: ${m.tool}, 1 thread, ${opts.connections} connections, ${opts.warmupS} s warm-up + ${opts.durationS} s per case, ${opts.rounds} round(s)`);
  console.log(
    pinned
      ? 'pinning: server under test on CPU 0; backend, mock-llm and load generator on CPU 1'
      : `pinning: off (${!opts.pin ? 'disabled' : !commands.taskset ? 'no taskset' : 'fewer than 2 CPUs'}); see the CPU% column`,
  );
  console.log('');

  const dir = mkdtempSync(join(tmpdir(), 'tollgate-bench-'));
  removeOnExit = opts.keep ? null : dir;
  const env = { dir, cpus, profile: opts.profile, backend: null, mockLlm: null, mockLlmSkip: null, profileDir: null };
  const results = [];
  try {
    // Shared backends, each in its own process.
    const backend = startProcess('backend', process.execPath, [join(ROOT, 'bench/backend.mjs'), '--port', '0'], { cpu: cpus.support });
    const bline = await backend.waitForLine((l) => l.startsWith('backend listening on '), 15_000);
    const burl = new URL(bline.slice('backend listening on '.length).trim());
    env.backend = { url: burl.origin, host: burl.host, port: Number(burl.port), proc: backend };

    const wantsLlm = selected.some((c) => c.request === 'chat');
    if (!wantsLlm) env.mockLlmSkip = 'not selected';
    else if (!existsSync(MOCK_LLM_BIN) || !existsSync(join(ROOT, 'packages/mock-llm/dist/cli.js'))) {
      env.mockLlmSkip = 'packages/mock-llm is not built yet (bin/mock-llm.js or dist/cli.js missing)';
    } else {
      try {
        const ml = startProcess('mock-llm', process.execPath, [MOCK_LLM_BIN, '--port', '0'], { cpu: cpus.support });
        const line = await ml.waitForLine((l) => l.startsWith('mock-llm listening on '), 15_000);
        const u = new URL(line.slice('mock-llm listening on '.length).trim());
        env.mockLlm = { url: u.origin, host: u.host, port: Number(u.port), proc: ml };
      } catch (err) {
        env.mockLlmSkip = `mock-llm did not start: ${err.message.split('\n')[0]}`;
      }
    }

    // Start every selected case's server, then check it answers the request correctly.
    const ready = [];
    for (const c of selected) {
      const skipped = c.skip?.(env) ?? null;
      if (skipped) {
        console.log(`skip ${c.id}: ${skipped}`);
        results.push({ id: c.id, label: c.label, skipped });
        continue;
      }
      try {
        const t0 = Date.now();
        const started = await c.start(env);
        const bad = await probe(started.url, REQUESTS[c.request]);
        if (bad) throw new Error(`wrong answer: ${bad}`);
        console.log(`ready ${c.id} at ${started.url} (${Date.now() - t0} ms)`);
        ready.push({ c, started, runs: [] });
      } catch (err) {
        if (signals.interrupted) return;
        console.log(`FAILED to start ${c.id}: ${err.message}`);
        results.push({ id: c.id, label: c.label, error: err.message.split('\n')[0] });
      }
    }
    console.log('');

    // Measure: every round runs each case once (warm-up, then the measured window).
    for (let round = 1; round <= opts.rounds; round++) {
      for (const r of ready) {
        const { c, started } = r;
        const request = REQUESTS[c.request];
        const backendProc = c.request === 'chat' ? env.mockLlm.proc : env.backend.proc;
        const loadDir = join(dir, 'load');
        mkdirSync(loadDir, { recursive: true });
        const common = { tool: opts.tool, baseUrl: started.url, request, connections: opts.connections, cpu: cpus.support, workDir: loadDir };
        try {
          if (opts.warmupS > 0) await runLoad({ ...common, durationS: opts.warmupS });
          let loadPid = null;
          // For a direct case the backend is the server under test.
          const sampler = sampleCpu({ server: started.proc?.pid ?? backendProc.pid, backend: backendProc.pid, load: () => loadPid });
          const res = await runLoad({ ...common, durationS: opts.durationS, onStart: (pid) => (loadPid = pid) });
          res.cpu = sampler.stop();
          r.runs.push(res);
          const tag = opts.rounds > 1 ? ` [round ${round}/${opts.rounds}]` : '';
          console.log(
            `${c.id}${tag}: ${fmt.rps(res.rps)} req/s, p50 ${fmt.ms(res.p50Ms)} ms, p99 ${fmt.ms(res.p99Ms)} ms` +
              (res.errors || res.non2xx ? `, errors ${res.errors} io / ${res.non2xx} status` : ''),
          );
        } catch (err) {
          if (signals.interrupted) return;
          console.log(`FAILED ${c.id}: ${err.message}`);
          r.error = err.message.split('\n')[0];
        }
      }
    }
    for (const r of ready) {
      results.push(r.runs.length ? { id: r.c.id, label: r.c.label, url: r.started.url, summary: summarize(r.runs) } : { id: r.c.id, label: r.c.label, error: r.error ?? 'no run' });
    }
    // Stop the servers first: a profiled node process writes its profile as it exits.
    await stopAll();

    console.log('');
    console.log(report(selected, results, pinned));

    if (env.profileDir) {
      const keepDir = join(ROOT, 'bench/.bench-out/profiles');
      mkdirSync(keepDir, { recursive: true });
      const files = readdirSync(env.profileDir);
      for (const f of files) writeFileSync(join(keepDir, `${opts.profile}-${f}`), readFileSync(join(env.profileDir, f)));
      console.log(`\nCPU profile of ${opts.profile}: ${files.map((f) => join(keepDir, `${opts.profile}-${f}`)).join(', ') || 'none written'}`);
      console.log('summarise with: node bench/lib/profile-summary.mjs <file>');
    }
    mkdirSync(join(opts.json, '..'), { recursive: true });
    writeFileSync(opts.json, `${JSON.stringify({ machine: m, options: { ...opts, pinned }, results }, null, 2)}\n`);
    console.log(`\nresults: ${opts.json}`);
  } finally {
    await stopAll();
    if (opts.keep) console.log(`temporary files kept in ${dir}`);
    removeTemp();
  }
}

/** The temporary directory, removed however the run ends (unless --keep). */
let removeOnExit = null;
function removeTemp() {
  if (removeOnExit) rmSync(removeOnExit, { recursive: true, force: true });
  removeOnExit = null;
}

const signals = stopAllOnSignals(removeTemp);
process.on('exit', () => {
  killAllNow();
  removeTemp();
});

main().catch(async (err) => {
  console.error(`bench failed: ${err.stack ?? err.message}`);
  await stopAll();
  process.exit(1);
});
