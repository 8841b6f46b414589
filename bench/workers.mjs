#!/usr/bin/env node
// What serving on several threads (--workers) costs and whether local limits stay exact. Two
// parts, printed, not asserted:
//
// - cpu: two Tollgate processes on the peer bench's config (the plain route to
//   bench/backend.mjs, the metered LLM route to mock-llm), one with --workers 1 and one with
//   --workers 2, each on its own port. Each route of each process is loaded in turn within a
//   round (the order reversed every other round), by wrk paced to one rate for both (default
//   2000 req/s), and the CPU time of the whole process (every thread, from /proc) per request is
//   compared: the 2-worker process against the 1-worker one, per route, target <= 1.05x (the
//   cost of sharing counters and merging metrics). Also p99, req/s, RSS after each run, and how
//   the kernel spread the connections over the threads (GET /workers).
// - limits: for each worker count of --workers, a fresh process with three limited routes: 5
//   requests a minute; 3 a minute per x-tenant value (4 values); a 400-token budget a minute
//   (each request reserving, and using, 100 tokens). --burst requests at once (default 200),
//   each on its own connection so that they spread over the threads; the 200s are counted
//   against what one counter admits (5, 4 x 3, 5). Anything else is printed as NOT EXACT.
//
// On a 2-CPU machine the load generator needs one CPU, so scaling beyond two threads is
// printed as an estimate from CPU per request, not measured as throughput.
//
//   pnpm build && node bench/workers.mjs [--rounds 5] [--duration 10] [--rate 2000] [--workers 1,2]
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ROOT } from './lib/cases.mjs';
import { writeTollgateConfig } from './lib/configs.mjs';
import { stopAll } from './lib/procs.mjs';
import { probe } from './lib/requests.mjs';
import { median } from './lib/stats.mjs';
import { benchCpus, printCpuTable, printPreamble, ROUND_OPTIONS_HELP, roundOptions, runBench, runRounds } from './lib/variants.mjs';
import { procCpuUs, rssKiB } from './peers/proc-stats.mjs';
import { startPeerBackends, tollgate } from './peers/proxies.mjs';
import { PEER_REQUESTS } from './peers/requests.mjs';
import { ensureWrk } from './peers/wrk.mjs';

const DEFAULT_RATE = 2000;
const TARGET = 1.05;
const ROUTES = ['plain', 'llm'];
/** Idle time after start over which each process's own CPU use is read (timers, the metrics merge). */
const IDLE_MS = 5000;

const HELP = `Usage: node bench/workers.mjs [options]

Two parts: cpu (CPU per request of --workers 2 against --workers 1, at one request rate) and
limits (a local limit of 5 under a burst of concurrent requests, for each worker count).

Options:
${ROUND_OPTIONS_HELP}
  --rate <req/s>     paced load: each connection waits 1000 x connections / rate ms
                     (whole ms) between an answer and its next request   [default ${DEFAULT_RATE}]
                     This bench paces by default: a closed loop would give the 2-worker
                     process more requests a second than the 1-worker one (it has a second
                     core), and CPU per request falls as load rises (more requests per
                     event-loop turn), so the ratio would mix the cost of threads with the
                     difference in load. At one rate both do the same work per second.
  --closed-loop      no pacing: each process at its own saturation (see above)
  --only <part>      cpu or limits (default both)
  --workers <list>   comma-separated worker counts of the limits part, 1 to 64 [default 1,2]
  --burst <n>        concurrent requests of each limits run, a multiple of 4 from 20 to 1000
                     (the keyed route gets 4 x-tenant values, n/4 requests each)  [default 200]
  --proxy-cpus <list>
                     pin both proxies to these CPUs (taskset -c list, e.g. 0). Default: not
                     pinned. On 2 CPUs the two threads of the 2-worker process cannot each have
                     a core AND leave one to wrk; pinned to one core they would measure two
                     threads taking turns on it. Unpinned, each thread may run on either CPU,
                     sharing CPU 1 with the load; CPU time per request counts every thread.
  -h, --help

wrk, mock-llm and the fixed-response backend run on CPU 1 when taskset is there and the
machine has 2 CPUs or more. Traffic stays on 127.0.0.1. Every process is stopped at the end,
on failure and on Ctrl-C.
`;

/** The limits part's routes: what one counter admits of each burst. */
const LIMITS = {
  requests: { host: 'requests.workers.bench', admits: 5 },
  keyed: { host: 'keyed.workers.bench', admits: 4 * 3 },
  tokens: { host: 'tokens.workers.bench', admits: 5 },
};
const KEYS = 4;
// 40 bytes of message content: a prompt estimate of 10 tokens (bytes / 4); with max_tokens 90,
// each request reserves 100 tokens and mock-llm reports 100 used (10 prompt, 90 completion), so
// a budget of 400 admits 5 (admission while used + reserved is at or below the budget).
const TOKENS_BODY = JSON.stringify({ model: 'mock-gpt', messages: [{ role: 'user', content: 'count the tokens of forty bytes exactly.' }], max_tokens: 90 });

function options() {
  const { values, opts } = roundOptions(HELP, {
    rate: { type: 'string', default: String(DEFAULT_RATE) },
    'closed-loop': { type: 'boolean' },
    only: { type: 'string' },
    workers: { type: 'string', default: '1,2' },
    burst: { type: 'string', default: '200' },
    'proxy-cpus': { type: 'string' },
  });
  if (values.only !== undefined && !['cpu', 'limits'].includes(values.only)) throw new Error(`--only: got '${values.only}'; expected cpu or limits`);
  const workers = values.workers.split(',').map((s) => Number(s.trim()));
  for (const n of workers) if (!Number.isInteger(n) || n < 1 || n > 64) throw new Error(`--workers: each count must be a whole number from 1 to 64, got '${values.workers}'`);
  const burst = Number(values.burst);
  if (!Number.isInteger(burst) || burst % KEYS || burst < 20 || burst > 1000) throw new Error(`--burst must be a multiple of ${KEYS} from 20 to 1000, got '${values.burst}'`);
  if (values['proxy-cpus'] !== undefined && !/^\d+([-,]\d+)*$/.test(values['proxy-cpus'])) throw new Error(`--proxy-cpus: a taskset CPU list (0, 0-1, 0,1), got '${values['proxy-cpus']}'`);
  return {
    ...opts,
    delayMs: values['closed-loop'] ? 0 : opts.delayMs,
    parts: values.only ? [values.only] : ['limits', 'cpu'],
    workers,
    burst,
    proxyCpus: values['proxy-cpus'] ?? null,
  };
}

/** The threads of a proxy as GET /workers lists them. */
async function threads(adminUrl) {
  return (await (await fetch(`${adminUrl}/workers`)).json()).workers;
}

/** Waits until `n` threads serve: the bind's first `listening` line may come before the other threads listen. */
async function allServing(adminUrl, n) {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const rows = await threads(adminUrl);
    if (rows.length === n && rows.every((r) => r.state === 'serving' && r.figures)) return;
    if (Date.now() > deadline) throw new Error(`${adminUrl}: ${n} threads not serving after 60 s: ${JSON.stringify(rows)}`);
    await sleep(200);
  }
}

const started = async (adminUrl) => (await threads(adminUrl)).map((r) => r.figures?.requestsStarted ?? 0);

/** Each thread's requests since `before` (from started()), as "t0 104, t1 96". */
async function spread(adminUrl, before) {
  const now = await started(adminUrl);
  const deltas = now.map((n, i) => n - (before[i] ?? 0));
  return { deltas, text: deltas.map((d, i) => `t${i} ${d}`).join(', ') };
}

/** A Tollgate with `--workers n`, on `config`, every thread serving. */
async function startWorkers(env, n, config) {
  const p = tollgate({ root: ROOT, nodeArgs: [], id: `tollgate-workers-${n}`, args: ['--workers', String(n)], config });
  const why = p.skip();
  if (why) throw new Error(why);
  const s = await p.start(env);
  await allServing(s.adminUrl, n);
  return s;
}

/** One request on a connection of its own; resolves to its status (0: no answer). */
function send(baseUrl, request) {
  return new Promise((resolve) => {
    const headers = { ...request.headers, connection: 'close' };
    if (request.body !== null) headers['content-length'] = String(Buffer.byteLength(request.body));
    const req = http.request(new URL(request.path, baseUrl), { method: request.method, headers, agent: false, timeout: 30_000 }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode));
      res.on('error', () => resolve(0));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', () => resolve(0));
    req.end(request.body ?? undefined);
  });
}

function limitRoutes(backendHost, mockLlmHost) {
  const route = (name, backend, local, match) => ({
    name,
    hostnames: [LIMITS[name].host],
    matches: [match],
    backends: [{ host: backend }],
    policies: { traffic: { rateLimit: { local } } },
  });
  const any = { path: { type: 'PathPrefix', value: '/' } };
  return [
    route('requests', backendHost, [{ requests: 5, unit: 'Minutes' }], any),
    route('keyed', backendHost, [{ requests: 3, unit: 'Minutes', by: { type: 'Header', name: 'x-tenant' } }], any),
    route('tokens', mockLlmHost, [{ tokens: 400, unit: 'Minutes' }], { path: { type: 'PathPrefix', value: '/v1/chat/completions' }, method: 'POST' }),
  ];
}

/** Request i of a burst on the limits route `name`. */
function limitRequest(name, i, burst) {
  const host = LIMITS[name].host;
  if (name === 'tokens') return { ...PEER_REQUESTS.llm, body: TOKENS_BODY, headers: { ...PEER_REQUESTS.llm.headers, host, 'x-mock-completion-tokens': '90' } };
  const headers = { host };
  if (name === 'keyed') headers['x-tenant'] = `tenant-${Math.floor((i * KEYS) / burst)}`;
  return { ...PEER_REQUESTS.plain, headers };
}

async function limitsPart(env, opts) {
  console.log('');
  console.log(`limits: for each worker count, a fresh process; ${opts.burst} requests at once on each route, each on its own connection`);
  console.log('  requests: 5 a minute; keyed: 3 a minute per x-tenant value, 4 values; tokens: 400 a minute, each request reserving and using 100');
  const findings = [];
  for (const n of opts.workers) {
    const s = await startWorkers(env, n, (dir, { port, adminPort, backendHost, mockLlmHost }) =>
      writeTollgateConfig(dir, `limits-${n}`, { port, adminPort, routes: limitRoutes(backendHost, mockLlmHost) }),
    );
    try {
      for (const name of Object.keys(LIMITS)) {
        const before = await started(s.adminUrl);
        const statuses = await Promise.all(Array.from({ length: opts.burst }, (_, i) => send(s.url, limitRequest(name, i, opts.burst))));
        const count = (code) => statuses.filter((c) => c === code).length;
        const ok = count(200);
        const refused = count(429);
        const other = opts.burst - ok - refused;
        const want = LIMITS[name].admits;
        const { deltas, text } = await spread(s.adminUrl, before);
        const verdict = ok === want ? 'exact' : `NOT EXACT: ${ok} admitted (one counter admits ${want})`;
        const lonely = n > 1 && deltas.filter((d) => d > 0).length < 2 ? ' (one thread took every request: says nothing of sharing)' : '';
        console.log(`  workers ${n}, ${name.padEnd(8)}: ${ok} x 200, ${refused} x 429${other ? `, ${other} other` : ''}; threads ${text}${lonely}: ${verdict}`);
        if (ok !== want) findings.push(`workers ${n}, ${name}: ${ok} admitted where one counter admits ${want}`);
      }
    } finally {
      await s.proc.stop();
    }
  }
  if (findings.length) {
    console.log('');
    console.log('!!! FINDING: local limits are NOT EXACT across threads:');
    for (const f of findings) console.log(`!!!   ${f}`);
  } else console.log('  every limit exact at every worker count');
}

const variant = (route, n) => `${route}/${n}w`;
/** The control: one worker at half the rate, about what each thread of the 2-worker process gets. */
const half = (route) => `${route}/1w@half`;

/** The median of the per-round ratios of `v`'s CPU per request to `base`'s, and the ratios. */
function roundRatios(runs, v, base) {
  const ratios = runs[v].map((r, i) => r.cpuUsPerReq / runs[base][i].cpuUsPerReq);
  return { median: median(ratios), text: ratios.map((x) => x.toFixed(2)).join(', ') };
}

async function cpuPart(env, opts, cpus) {
  console.log('');
  console.log(`cpu: --workers 1 against --workers 2, each route of each process in turn; CPU time of the whole process (every thread) per request`);
  if (opts.delayMs) console.log(`control: ${half('<route>')}, the 1-worker process at half the rate (each connection waits ${opts.delayMs * 2} ms), about what each thread of the 2-worker process gets`);
  const one = await startWorkers(env, 1);
  const two = await startWorkers(env, 2);
  const procs = [['1 worker', one], ['2 workers', two]];
  for (const [label, s] of procs) {
    for (const route of ROUTES) {
      const bad = await probe(s.url, PEER_REQUESTS[route]);
      if (bad) throw new Error(`${label} answers ${route} wrongly: ${bad}`);
    }
  }
  // Both idle over the same seconds: what each spends with no request (timers, the metrics merge).
  const cpu0 = procs.map(([, s]) => procCpuUs(s.proc.pid));
  await sleep(IDLE_MS);
  procs.forEach(([label, s], i) => {
    const pct = ((procCpuUs(s.proc.pid) - cpu0[i]) / (IDLE_MS * 1000)) * 100;
    console.log(`ready ${label} at ${s.url}; idle: RSS ${(rssKiB(s.proc.pid).rss / 1024).toFixed(1)} MiB, CPU ${pct.toFixed(1)}% of a core over ${IDLE_MS / 1000} s`);
  });
  const server = (s, delayMs) => ({ url: s.url, proxy: s.proc, delayMs });
  const servers = {};
  const requests = {};
  for (const r of ROUTES) {
    servers[variant(r, 1)] = server(one);
    servers[variant(r, 2)] = server(two);
    if (opts.delayMs) servers[half(r)] = server(one, opts.delayMs * 2);
  }
  const variants = Object.keys(servers);
  for (const v of variants) requests[v] = PEER_REQUESTS[v.split('/')[0]];
  const before = await started(two.adminUrl);
  const runs = await runRounds({ variants, requests, opts, cpus, dir: env.dir, servers });
  const { deltas, text } = await spread(two.adminUrl, before);
  const total = deltas.reduce((a, b) => a + b, 0);
  console.log(`2 workers: requests per thread over the rounds ${text} (${deltas.map((d) => `${((100 * d) / total).toFixed(0)}%`).join(' / ')}; the kernel spreads the ${opts.connections} keep-alive connections, not requests)`);
  for (const route of ROUTES) {
    console.log('');
    console.log(`route ${route}:`);
    const shown = variants.filter((v) => v.startsWith(`${route}/`));
    printCpuTable(runs, shown, variant(route, 1), { [variant(route, 2)]: TARGET }, { rss: true });
    console.log(`per-round ratios of CPU per request, 2 workers / 1 worker: ${roundRatios(runs, variant(route, 2), variant(route, 1)).text}`);
    if (opts.delayMs) {
      const c = roundRatios(runs, variant(route, 2), half(route));
      console.log(`2 workers / 1 worker at half the rate (the split of the load left out): ${c.median.toFixed(2)}x (per round ${c.text})`);
    }
  }
  printEstimate(runs);
}

/** Throughput beyond two threads, from CPU per request: printed as an estimate, never measured here. */
function printEstimate(runs) {
  console.log('');
  console.log('estimate, not measured (this machine has 2 CPUs and wrk needs one): N threads with N cores of their own would serve about');
  console.log('N x 1e6 / (CPU µs per request of the 2-worker process) req/s, if a request costs at N threads what it costs at 2 (no new');
  console.log('contention) and the kernel spreads connections evenly (the split above says how evenly it did here). CPU per request was');
  console.log('measured at the paced rate, where a thread batches less than at saturation, so these figures lean low.');
  for (const route of ROUTES) {
    const c = median(runs[variant(route, 2)].map((r) => r.cpuUsPerReq));
    const cores = [2, 4, 8, 16].map((n) => `${n} cores ~${Math.round((n * 1e6) / c / 100) * 100}`).join(', ');
    console.log(`  ${route}: ${c.toFixed(1)} µs/req: ${cores} req/s`);
  }
}

async function main() {
  const opts = options();
  ensureWrk();
  const load = benchCpus().load;
  const cpus = {
    proxy: opts.proxyCpus,
    load,
    label: `${load ? `wrk, mock-llm and the backend on CPU ${load}` : 'load not pinned'}; proxies ${opts.proxyCpus ? `pinned to CPU(s) ${opts.proxyCpus}` : 'not pinned (their threads run on either CPU)'}`,
  };
  printPreamble('local limits and CPU per request with --workers 1 and 2', opts, cpus);
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-workers-bench-'));
  try {
    const env = { dir, cpus, profileDir: null, ...(await startPeerBackends(load)) };
    if (opts.parts.includes('limits')) await limitsPart(env, opts);
    if (opts.parts.includes('cpu')) await cpuPart(env, opts, cpus);
  } finally {
    await stopAll();
    rmSync(dir, { recursive: true, force: true });
  }
}

runBench('workers', main);
