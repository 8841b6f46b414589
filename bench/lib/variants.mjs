// What the variant benches share (auth.mjs, policies.mjs, formats.mjs, transformation.mjs): one Tollgate in front of one
// mock-llm, variants told apart by hostname and run in turn within each round (reversed every
// other round), the proxy's CPU per request measured from /proc around each wrk run, and a
// table of medians against a base variant. workers.mjs runs the same rounds and table over two
// proxy processes (runRounds' `servers`).
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus as osCpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { intOption, median } from './stats.mjs';
import { MOCK_LLM_BIN, TOLLGATE_BIN } from './cases.mjs';
import { commands, freePort, isBindListening, killAllNow, startProcess, stopAll, stopAllOnSignals } from './procs.mjs';
import { probe } from './requests.mjs';
import { procCpuUs, rssKiB } from '../peers/proc-stats.mjs';
import { pacingDelayMs, pacingLine, wrk } from '../peers/wrk.mjs';

/** The options every variant bench takes, for its help text. */
export const ROUND_OPTIONS_HELP = `  --rounds <n>       rounds; each runs every variant once, in turn   [default 5]
  --duration <s>     measured seconds per variant and round           [default 10]
  --warmup <s>       unmeasured seconds before each measurement        [default 3]
  --connections <n>  wrk keep-alive connections                        [default 32]`;

/** --rate, for the benches whose load is wrk's (runRounds). */
export const RATE_OPTION_HELP = `  --rate <req/s>     paced load: each connection waits 1000 x connections / rate ms
                     (whole ms) between an answer and its next request, so every variant
                     gets about the same rate and CPU per request is compared at the same
                     load. Default: closed loop, each variant at its own saturation`;

/**
 * The command line of a variant bench: the round options, and `extra` (parseArgs option
 * descriptors) whose values come back as `values`. --help prints `help` and exits. A bench
 * whose load is not wrk's (`paced: false`) refuses --rate rather than ignore it.
 */
export function roundOptions(help, extra = {}, { paced = true } = {}) {
  const { values } = parseArgs({
    options: {
      rounds: { type: 'string', default: '5' },
      duration: { type: 'string', default: '10' },
      warmup: { type: 'string', default: '3' },
      connections: { type: 'string', default: '32' },
      rate: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
      ...extra,
    },
  });
  if (values.help) {
    process.stdout.write(help);
    process.exit(0);
  }
  const int = (name, min) => intOption(values, name, min);
  if (values.rate !== undefined && !paced) throw new Error('--rate: this bench runs its own load generator, which is not paced; leave --rate out');
  const connections = int('connections', 1);
  // Paced: a connection's pause between an answer and its next request, so each variant gets
  // about the same rate: a variant that slows the load side (a backend sharing its CPU) then
  // cannot change how many requests the proxy handles per event-loop turn.
  const delayMs = pacingDelayMs(connections, values.rate === undefined ? undefined : int('rate', 1));
  return { values, opts: { rounds: int('rounds', 1), durationS: int('duration', 1), warmupS: int('warmup', 0), connections, delayMs } };
}

/**
 * The round options and `--only <variants>` (a comma-separated subset of `variants`); the first
 * of `variants`, the base, is always run. Returns the options with `variants`, base first.
 */
export function variantOptions(help, variants) {
  const { values, opts } = roundOptions(help, { only: { type: 'string' } });
  const only = values.only ? values.only.split(',').map((s) => s.trim()).filter(Boolean) : variants;
  for (const v of only) if (!variants.includes(v)) throw new Error(`--only: unknown variant '${v}'; variants: ${variants.join(', ')}`);
  const [base] = variants;
  return { ...opts, variants: [base, ...only.filter((v) => v !== base)] };
}

/**
 * A whole variant bench on the LLM route: the preamble, one Tollgate on mock-llm with the config
 * `writeFiles(dir, mockLlmHost, port, adminPort)` writes in a temporary directory, the rounds, and
 * the table of each variant against the first (the base).
 */
export async function benchOnMock({ name, title, opts, targets, writeFiles }) {
  const cpus = benchCpus();
  printPreamble(title, opts, cpus);
  const dir = mkdtempSync(join(tmpdir(), `tollgate-${name}-bench-`));
  try {
    const writeConfig = (mockLlmHost, port, adminPort) => writeFiles(dir, mockLlmHost, port, adminPort);
    const { url, proxy, requests } = await startTollgateOnMock({ cpus, writeConfig });
    const runs = await runRounds({ url, proxy, variants: opts.variants, requests, opts, cpus, dir });
    printCpuTable(runs, opts.variants, opts.variants[0], targets);
  } finally {
    await stopAll();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Proxy on CPU 0, load and mock-llm on CPU 1, where taskset and two CPUs are there. */
export function benchCpus() {
  const pinned = commands.taskset && osCpus().length >= 2;
  return { pinned, proxy: pinned ? '0' : null, load: pinned ? '1' : null };
}

/** The header lines of a variant bench; `cpus.label`, when set, says where the processes run instead of benchCpus' wording. */
export function printPreamble(title, opts, cpus) {
  console.log(`${title}, ${new Date().toISOString()}`);
  console.log(`machine: ${osCpus().length} CPUs; node ${process.version}; load average ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);
  console.log(`load: wrk -t1 -c${opts.connections}, ${opts.warmupS} s warm-up + ${opts.durationS} s per variant and round; ${opts.rounds} round(s); ${cpus.label ?? (cpus.pinned ? 'proxy on CPU 0, mock-llm and wrk on CPU 1' : 'no pinning')}`);
  if (opts.delayMs) console.log(pacingLine(opts.connections, opts.delayMs, 'variant'));
}

/**
 * Starts mock-llm, then Tollgate with the config `writeConfig(mockLlmHost, port, adminPort)`
 * writes (it returns the file and the request of each variant); checks each request once.
 * Returns the proxy's URL and process, and the requests.
 */
export async function startTollgateOnMock({ cpus, writeConfig }) {
  const ml = startProcess('mock-llm', process.execPath, [MOCK_LLM_BIN, '--port', '0'], { cpu: cpus.load });
  const mline = await ml.waitForLine((l) => l.startsWith('mock-llm listening on '), 15_000);
  const mockLlmHost = new URL(mline.slice('mock-llm listening on '.length).trim()).host;
  const port = await freePort();
  const { file, requests } = writeConfig(mockLlmHost, port, await freePort());
  const side = ['--metrics-addr', `127.0.0.1:${await freePort()}`, '--readiness-addr', `127.0.0.1:${await freePort()}`];
  const proxy = startProcess('tollgate', process.execPath, [TOLLGATE_BIN, '--file', file, ...side], { cpu: cpus.proxy });
  await proxy.waitForLine(isBindListening, 120_000);
  const url = `http://127.0.0.1:${port}`;
  for (const [v, request] of Object.entries(requests)) {
    const bad = await probe(url, request);
    if (bad) throw new Error(`variant ${v} answers wrongly: ${bad}`);
  }
  return { url, proxy, requests };
}

const fmt = (v, d = 1) => (v === null ? '-' : v.toFixed(d));

/**
 * Runs every variant once a round, in turn; returns each variant's runs with their CPU µs per
 * request and the proxy's RSS after the run. `servers` (optional): a variant's own `{ url, proxy }`,
 * where variants are different proxy processes (and its own `delayMs`, where a variant is paced
 * otherwise); else every variant goes to `url` and `proxy`.
 */
export async function runRounds({ url, proxy, variants, requests, opts, cpus, dir, servers = {} }) {
  const runs = Object.fromEntries(variants.map((v) => [v, []]));
  for (let round = 1; round <= opts.rounds; round++) {
    const order = round % 2 ? variants : [...variants].reverse();
    for (const v of order) {
      const server = servers[v] ?? { url, proxy };
      const pid = server.proxy.pid;
      const common = { baseUrl: server.url, request: requests[v], connections: opts.connections, cpu: cpus.load, workDir: dir, delayMs: server.delayMs ?? opts.delayMs };
      if (opts.warmupS) await wrk({ ...common, durationS: opts.warmupS });
      let cpu0 = 0;
      const r = await wrk({ ...common, durationS: opts.durationS, onStart: () => (cpu0 = procCpuUs(pid)) });
      const cpuUsPerReq = (procCpuUs(pid) - cpu0) / r.requests;
      runs[v].push({ ...r, cpuUsPerReq, rssMiB: rssKiB(pid).rss / 1024 });
      console.log(`[round ${round}/${opts.rounds}] ${v}: ${Math.round(r.rps)} req/s, p99 ${fmt(r.p99Ms, 2)} ms, ${fmt(cpuUsPerReq)} µs CPU/req${r.errors || r.non2xx ? `, ERRORS ${r.errors} socket, ${r.non2xx} non-2xx` : ''}`);
    }
  }
  return runs;
}

/**
 * The table of medians, each variant's CPU per request against `base`'s, and its target (a
 * ratio) when it has one. A variant's ratio is the median of its per-round ratios against the
 * base run of the same round: the load of a shared machine drifts between rounds far more than
 * within one. `rss`: a column with the median of the proxy's RSS after each run.
 */
export function printCpuTable(runs, variants, base, targets, { rss = false } = {}) {
  console.log('');
  console.log(`| variant | req/s | p99 ms | CPU µs/req |${rss ? ' RSS MiB after load |' : ''} vs ${base} | target |`);
  console.log(`|---|---:|---:|---:|${rss ? '---:|' : ''}---:|---|`);
  for (const v of variants) {
    const cpu = median(runs[v].map((r) => r.cpuUsPerReq));
    const ratios = runs[v].flatMap((r, i) => (runs[base][i].cpuUsPerReq ? [r.cpuUsPerReq / runs[base][i].cpuUsPerReq] : []));
    const ratio = ratios.length ? median(ratios) : null;
    const target = targets[v] ? `<= ${targets[v].toFixed(2)}x ${ratio !== null && ratio <= targets[v] ? 'met' : 'NOT met'}` : '';
    const rssCell = rss ? ` ${fmt(median(runs[v].map((r) => r.rssMiB)))} |` : '';
    console.log(`| ${v} | ${Math.round(median(runs[v].map((r) => r.rps)))} | ${fmt(median(runs[v].map((r) => r.p99Ms)), 2)} | ${fmt(cpu)} |${rssCell} ${ratio === null ? '-' : `${ratio.toFixed(2)}x`} | ${target} |`);
  }
}

/** Runs a bench's main (which stops its processes when done): on failure and signals, every process it started is stopped too. */
export function runBench(name, main) {
  stopAllOnSignals();
  process.on('exit', () => killAllNow());
  main().catch(async (err) => {
    console.error(`${name} bench failed: ${err.stack ?? err.message}`);
    await stopAll();
    process.exit(1);
  });
}
