#!/usr/bin/env node
// A local keyed budget (`by`) with 100,000 key values against the same budget with 10: what a
// decision costs and what memory the keys add. Two parts, each against a baseline measured in
// the same run; printed, not asserted.
//
// - in-process: LocalLimiter.check of a route's limiter with a requests entry and a tokens
//   entry, both keyed (Consumer or Header), the key tables prefilled; each decision reserves
//   30 tokens and settles 20, as a request does. The keys are visited in a shuffled order.
//   Memory: heap used and RSS after a full GC, before and after 100,000 keys enter the tables
//   (with usage in their window, so never idle).
// - proxy: one Tollgate with three LLM routes (mock-llm behind) told apart by hostname: the
//   keyed budget cycling 10 x-tenant values, the same budget cycling 100,000 values, and the
//   same entries unkeyed. wrk sends every value once per cycle (a scattered order); CPU per
//   request of the proxy (from /proc) is the figure compared. Memory: the proxy's
//   `/memory?gc=true` before and after the 100,000 values were first sent.
//
//   pnpm build && node bench/keyed-budget.mjs [--only inproc|proxy] [--keys 100000] [--rounds 5]
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { cpus as osCpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { getHeapSpaceStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { parseArgs } from 'node:util';
import { MOCK_LLM_BIN, TOLLGATE_BIN } from './lib/cases.mjs';
import { limiterStore, NEVER, opsPerSecond, routeLimiter } from './lib/limiters.mjs';
import { commands, freePort, isBindListening, killAllNow, startProcess, stopAll, stopAllOnSignals } from './lib/procs.mjs';
import { probe, REQUESTS } from './lib/requests.mjs';
import { intOption, median } from './lib/stats.mjs';
import { procCpuUs } from './peers/proc-stats.mjs';
import { ensureWrk, wrk } from './peers/wrk.mjs';

const HELP = `Usage: node bench/keyed-budget.mjs [options]

Options:
  --only <part>        inproc or proxy (default both)
  --keys <n>           key values of the large table                      [default 100000]
  --few <n>            key values of the baseline table                   [default 10]
  --key <type>         in-process key: consumer or header (the proxy part uses a header) [default consumer]
  --decisions <n>      in-process decisions per variant and round         [default 1000000]
  --rounds <n>         rounds; each runs every variant once, in turn      [default 5]
  --duration <s>       proxy: measured seconds per variant and round      [default 10]
  --warmup <s>         proxy: unmeasured seconds before each measurement  [default 3]
  --connections <n>    proxy: wrk keep-alive connections                  [default 32]
  --profile <dir>      proxy: run it with --cpu-prof, profiles in <dir> (bench/lib/profile-summary.mjs)
  -h, --help

Targets (printed beside the figures, never asserted): a decision with --keys values within
10% of one with --few values, and the --keys values under 50 MiB of extra memory.
`;

const TARGET_RATIO = 1.1;
const TARGET_MIB = 50;
const HEADER = 'x-tenant';
const PREFIX = 'tenant-';

function options() {
  const { values } = parseArgs({
    options: {
      only: { type: 'string' },
      keys: { type: 'string', default: '100000' },
      few: { type: 'string', default: '10' },
      key: { type: 'string', default: 'consumer' },
      decisions: { type: 'string', default: '1000000' },
      rounds: { type: 'string', default: '5' },
      duration: { type: 'string', default: '10' },
      warmup: { type: 'string', default: '3' },
      connections: { type: 'string', default: '32' },
      profile: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    process.stdout.write(HELP);
    process.exit(0);
  }
  const int = (name, min) => intOption(values, name, min);
  if (values.only !== undefined && !['inproc', 'proxy'].includes(values.only)) throw new Error(`--only: got '${values.only}'; expected inproc or proxy`);
  if (!['consumer', 'header'].includes(values.key)) throw new Error(`--key: got '${values.key}'; expected consumer or header`);
  const keys = int('keys', 2);
  const few = int('few', 1);
  if (few >= keys) throw new Error(`--few (${few}) must be below --keys (${keys})`);
  return {
    parts: values.only ? [values.only] : ['inproc', 'proxy'],
    keys,
    few,
    key: values.key,
    decisions: int('decisions', 1000),
    rounds: int('rounds', 1),
    durationS: int('duration', 1),
    warmupS: int('warmup', 0),
    connections: int('connections', 1),
    profileDir: values.profile ?? null,
  };
}

const mib = (bytes) => bytes / 1048576;
const fmt = (x, d = 1) => (x === null || x === undefined ? '-' : x.toFixed(d));
const verdict = (ok) => (ok ? 'met' : 'NOT met');

/** A full collection without --expose-gc on the command line. */
function collector() {
  setFlagsFromString('--expose-gc');
  return runInNewContext('gc');
}

/** A deterministic shuffle of 0..n-1 (the decisions' order). */
function shuffled(n) {
  const a = Int32Array.from({ length: n }, (_, i) => i);
  let seed = 0x2545f491;
  for (let i = n - 1; i > 0; i--) {
    seed = (Math.imul(seed ^ (seed >>> 15), 0x2c1b3c6d) + 0x6d2b79f5) >>> 0;
    const j = seed % (i + 1);
    [a[i], a[j]] = [a[j], a[i]];
  }
  return a;
}

function inProcess(opts) {
  const gc = collector();
  const by = opts.key === 'consumer' ? { type: 'Consumer' } : { type: 'Header', name: HEADER };
  const entries = [
    { kind: 'requests', requests: NEVER, burst: 0, unit: 'Hours', by },
    { kind: 'tokens', tokens: NEVER, unit: 'Hours', by },
  ];
  const base = { method: 'POST', path: '/v1/chat/completions', host: 'keys.bench', headers: {}, sourceAddress: '127.0.0.1', model: 'mock-gpt', consumer: null };
  // The shape the request path gives each: a consumer from authentication, or the request's headers.
  const factsOf =
    opts.key === 'consumer'
      ? (name) => ({ ...base, consumer: { name, group: null, labels: {}, claims: null } })
      : (name) => ({ ...base, headers: { [HEADER]: name } });
  const store = limiterStore(opts.keys);
  const few = routeLimiter(store, 'few', entries);
  const many = routeLimiter(store, 'many', entries);
  const unkeyed = routeLimiter(store, 'unkeyed', entries.map((e) => ({ ...e, by: undefined })));
  store.commit();

  // What a decision reads its key from. A consumer is a record of the authentication config,
  // made once and shared by its requests: the 10 or 100,000 records exist before the first
  // reading, and the tables keep their names (no string of their own). A header value is a new
  // string in each request: made per decision, and the table keeps the one of the key's first
  // request.
  const order = shuffled(opts.keys);
  const records = (count) => (opts.key === 'consumer' ? Array.from({ length: count }, (_, i) => factsOf(`${PREFIX}${i}`)) : null);
  const fewRecords = records(opts.few);
  const manyRecords = records(opts.keys);
  let current = null;
  const facts = () => current;
  let refused = 0;
  const decide = (limiter) => {
    const v = limiter.check(30, facts);
    if (v.allowed) v.hold.settle(20);
    else refused++;
  };
  const reading = () => {
    gc();
    gc();
    const m = process.memoryUsage();
    const space = (name) => getHeapSpaceStatistics().find((x) => x.space_name === name)?.space_size ?? 0;
    return { heap: m.heapUsed, heapTotal: m.heapTotal, newSpace: space('new_space'), rss: m.rss };
  };
  /** `n` decisions on `limiter` over `count` key values (`list`: their consumers), in the shuffled order. */
  const run = (limiter, count, list) => (n) => {
    const len = order.length;
    for (let i = 0; i < n; i++) {
      const k = order[i % len] % count;
      current = list ? list[k] : factsOf(PREFIX + k);
      decide(limiter);
    }
    current = null;
  };
  /** Each of the `count` keys once, in order: the table gets them all. */
  const fill = (limiter, count, list) => {
    for (let k = 0; k < count; k++) {
      current = list ? list[k] : factsOf(PREFIX + k);
      decide(limiter);
    }
    current = null;
  };
  const sizes = (l) => l.entries.map((e) => e.budget.table.size).join(' + ');

  // The 10 keys and a run of decisions on them come first: the young generation grows to what
  // this allocation rate makes it (decisions allocate their holds), so the readings around the
  // 100,000 keys differ by the keys alone.
  fill(few, opts.few, fewRecords);
  run(few, opts.few, fewRecords)(opts.decisions);
  const m1 = reading();
  fill(many, opts.keys, manyRecords);
  const m2 = reading();

  const variants = [
    { id: 'few', label: `keyed, ${opts.few.toLocaleString('en-US')} key values`, fn: run(few, opts.few, fewRecords) },
    { id: 'many', label: `keyed, ${opts.keys.toLocaleString('en-US')} key values`, fn: run(many, opts.keys, manyRecords) },
    { id: 'unkeyed', label: 'the same entries unkeyed', fn: run(unkeyed, opts.few, fewRecords) },
  ];
  const rates = Object.fromEntries(variants.map((v) => [v.id, []]));
  for (let r = 0; r < opts.rounds; r++) {
    const turn = r % 2 ? [...variants].reverse() : variants;
    for (const v of turn) rates[v.id].push(opsPerSecond(v.fn, opts.decisions, 1));
  }
  const m3 = reading();

  console.log(`in-process: LocalLimiter.check, ${opts.key === 'consumer' ? 'by: { type: Consumer }' : `by: { type: Header, name: ${HEADER} }`}, a requests and a tokens entry; ` +
    `median of ${opts.rounds} round(s) of ${opts.decisions.toLocaleString('en-US')} decisions (check, reserve 30, settle 20); node ${process.version}`);
  console.log(`  tables: ${sizes(few)} (few), ${sizes(many)} (many) keys; ${refused} refused`);
  const nsOf = (id) => 1e9 / median(rates[id]);
  const baseNs = nsOf('few');
  console.log('');
  console.log('| variant | decisions/s | ns/decision | vs 10 keys |');
  console.log('|---|---:|---:|---:|');
  for (const v of variants) console.log(`| ${v.label} | ${Math.round(median(rates[v.id])).toLocaleString('en-US')} | ${fmt(nsOf(v.id), 0)} | ${(nsOf(v.id) / baseNs).toFixed(3)}x |`);
  const ratio = nsOf('many') / baseNs;
  const extra = m2.heap - m1.heap;
  console.log('');
  console.log(`  decision cost, ${opts.keys.toLocaleString('en-US')} vs ${opts.few} keys: ${ratio.toFixed(3)}x (target <= ${TARGET_RATIO.toFixed(2)}x: ${verdict(ratio <= TARGET_RATIO)})`);
  console.log(`  memory after GC: heap used ${fmt(mib(m1.heap))} MiB (${opts.few} keys) -> ${fmt(mib(m2.heap))} (+${opts.keys.toLocaleString('en-US')} keys) -> ${fmt(mib(m3.heap))} (after the decisions); ` +
    `heap reserved ${fmt(mib(m1.heapTotal))} -> ${fmt(mib(m2.heapTotal))} MiB (of which the young generation ${fmt(mib(m1.newSpace))} -> ${fmt(mib(m2.newSpace))}); RSS ${fmt(mib(m1.rss))} -> ${fmt(mib(m2.rss))} MiB`);
  // V8 may grow the young generation while the keys are made (they survive their first
  // collections): that growth is reserved memory, not the keys', so the RSS figure judged is net of it.
  const rssNet = m2.rss - m1.rss - (m2.newSpace - m1.newSpace);
  console.log(`  the ${opts.keys.toLocaleString('en-US')} keys add ${fmt(mib(extra))} MiB of live heap (${Math.round(extra / opts.keys)} bytes a key, both entries${opts.key === 'consumer' ? ", the names being the consumers'" : ', the key strings included'}), ` +
    `${fmt(mib(m2.rss - m1.rss))} MiB of RSS, ${fmt(mib(rssNet))} MiB net of the young generation's growth (target < ${TARGET_MIB} MiB: ${verdict(mib(extra) < TARGET_MIB && mib(rssNet) < TARGET_MIB)})`);
  return { ratio, extraMiB: mib(extra) };
}

/** The proxy's `/memory?gc=true` (its admin server answers loopback Host names only). */
function memory(adminPort) {
  return new Promise((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port: adminPort, path: '/memory?gc=true' }, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c) => (body += c));
        res.on('end', () => (res.statusCode === 200 ? resolve(JSON.parse(body)) : reject(new Error(`/memory answered ${res.statusCode}: ${body}`))));
      })
      .on('error', reject);
  });
}

/** The sum of a counter's series in a Prometheus text page (0 when absent). */
function counter(text, name) {
  let sum = 0;
  for (const line of text.split('\n')) if (line.startsWith(name) && /^[a-z_]+(\{|\s)/.test(line)) sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  return sum;
}

function fetchText(port, path) {
  return new Promise((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port, path }, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c) => (body += c));
        res.on('end', () => resolve(body));
      })
      .on('error', reject);
  });
}

function proxyConfig(dir, mockLlmHost, port, adminPort, keys) {
  const by = { type: 'Header', name: HEADER };
  const keyed = { rateLimit: { local: [{ requests: NEVER, unit: 'Hours', by }, { tokens: NEVER, unit: 'Hours', by }] } };
  const unkeyed = { rateLimit: { local: [{ requests: NEVER, unit: 'Hours' }, { tokens: NEVER, unit: 'Hours' }] } };
  const route = (name, traffic) => ({
    name,
    hostnames: [`${name}.keys.bench`],
    matches: [{ path: { type: 'PathPrefix', value: '/v1/chat/completions' }, method: 'POST' }],
    backends: [{ host: mockLlmHost }],
    policies: { traffic },
  });
  const config = {
    // Room for every key value of the large table (and the baseline's, which has its own table).
    config: { adminAddr: `127.0.0.1:${adminPort}`, logLevel: 'info', drainTimeout: '1s', maxRateLimitKeys: keys },
    binds: [{ port, address: '127.0.0.1', listeners: [{ name: 'bench', protocol: 'HTTP', routes: [route('few', keyed), route('many', keyed), route('unkeyed', unkeyed)] }] }],
  };
  const file = join(dir, 'tollgate.json');
  writeFileSync(file, JSON.stringify(config, null, 2));
  return file;
}

async function throughProxy(opts) {
  ensureWrk();
  const pinned = commands.taskset && osCpus().length >= 2;
  const cpus = pinned ? { proxy: '0', load: '1' } : { proxy: null, load: null };
  console.log(`proxy: ${opts.keys.toLocaleString('en-US')} against ${opts.few} x-tenant values on an LLM route, ${new Date().toISOString()}`);
  console.log(`machine: ${osCpus().length} CPUs; node ${process.version}; load average ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);
  console.log(`load: wrk -t1 -c${opts.connections}, ${opts.warmupS} s warm-up + ${opts.durationS} s per variant and round; ${opts.rounds} round(s); ${pinned ? 'proxy on CPU 0, mock-llm and wrk on CPU 1' : 'no pinning'}`);
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-keyed-bench-'));
  try {
    const ml = startProcess('mock-llm', process.execPath, [MOCK_LLM_BIN, '--port', '0'], { cpu: cpus.load });
    const mline = await ml.waitForLine((l) => l.startsWith('mock-llm listening on '), 15_000);
    const mockLlmHost = new URL(mline.slice('mock-llm listening on '.length).trim()).host;
    const port = await freePort();
    const adminPort = await freePort();
    const metricsPort = await freePort();
    const file = proxyConfig(dir, mockLlmHost, port, adminPort, opts.keys);
    const side = ['--metrics-addr', `127.0.0.1:${metricsPort}`, '--readiness-addr', `127.0.0.1:${await freePort()}`];
    const nodeArgs = opts.profileDir ? ['--cpu-prof', '--cpu-prof-dir', opts.profileDir] : [];
    const proxy = startProcess('tollgate', process.execPath, [...nodeArgs, TOLLGATE_BIN, '--file', file, ...side], { cpu: cpus.proxy });
    await proxy.waitForLine(isBindListening, 120_000);
    const url = `http://127.0.0.1:${port}`;
    const request = (name) => ({ ...REQUESTS.chat, id: name, headers: { ...REQUESTS.chat.headers, host: `${name}.keys.bench` } });
    const variants = [
      { id: 'few', label: `keyed, ${opts.few.toLocaleString('en-US')} x-tenant values`, request: request('few'), count: opts.few },
      { id: 'many', label: `keyed, ${opts.keys.toLocaleString('en-US')} x-tenant values`, request: request('many'), count: opts.keys },
      { id: 'unkeyed', label: 'the same entries unkeyed', request: request('unkeyed'), count: opts.few },
    ];
    for (const v of variants) {
      const bad = await probe(url, { ...v.request, headers: { ...v.request.headers, [HEADER]: `${PREFIX}0` } });
      if (bad) throw new Error(`route ${v.id} answers wrongly: ${bad}`);
    }
    const load = (v, durationS, extra = {}) =>
      wrk({ baseUrl: url, request: v.request, connections: opts.connections, cpu: cpus.load, workDir: dir, durationS, cycle: { header: HEADER, prefix: PREFIX, count: v.count, start: extra.start ?? 0 }, onStart: extra.onStart });

    // The small tables are filled (and the proxy warm) before the first reading; then every one
    // of the large table's values is sent once (wrk runs continuing the sequence until it is done).
    await load(variants[0], Math.max(1, opts.warmupS));
    await load(variants[2], Math.max(1, opts.warmupS));
    const before = await memory(adminPort);
    let sent = 0;
    let failed = 0;
    const t0 = Date.now();
    while (sent < opts.keys) {
      const r = await load(variants[1], 5, { start: sent });
      sent += r.requests;
      failed += r.errors + r.non2xx;
    }
    const after = await memory(adminPort);
    const overflowed = counter(await fetchText(metricsPort, '/metrics'), 'tollgate_ratelimit_key_overflow_total');
    const heapDelta = after.heap.usedHeapSize - before.heap.usedHeapSize;
    const rssDelta = after.process.rss - before.process.rss;
    console.log(`  ${opts.keys.toLocaleString('en-US')} values sent in ${((Date.now() - t0) / 1000).toFixed(0)} s (${sent.toLocaleString('en-US')} requests, ${failed} failed); keys given the overflow budget: ${overflowed}`);
    console.log(`  proxy memory after GC: heap used ${fmt(mib(before.heap.usedHeapSize))} -> ${fmt(mib(after.heap.usedHeapSize))} MiB (+${fmt(mib(heapDelta))}), RSS ${fmt(mib(before.process.rss))} -> ${fmt(mib(after.process.rss))} MiB (+${fmt(mib(rssDelta))}) ` +
      `(target < ${TARGET_MIB} MiB: ${verdict(mib(heapDelta) < TARGET_MIB && mib(rssDelta) < TARGET_MIB)})`);

    const runs = Object.fromEntries(variants.map((v) => [v.id, []]));
    for (let round = 1; round <= opts.rounds; round++) {
      const order = round % 2 ? variants : [...variants].reverse();
      for (const v of order) {
        if (opts.warmupS) await load(v, opts.warmupS);
        let cpu0 = 0;
        const r = await load(v, opts.durationS, { onStart: () => (cpu0 = procCpuUs(proxy.pid)) });
        const cpuUsPerReq = (procCpuUs(proxy.pid) - cpu0) / r.requests;
        runs[v.id].push({ ...r, cpuUsPerReq });
        console.log(`[round ${round}/${opts.rounds}] ${v.id}: ${Math.round(r.rps)} req/s, p99 ${fmt(r.p99Ms, 2)} ms, ${fmt(cpuUsPerReq)} µs CPU/req${r.errors || r.non2xx ? `, ERRORS ${r.errors} socket, ${r.non2xx} non-2xx` : ''}`);
      }
    }
    const cpuOf = (id) => median(runs[id].map((r) => r.cpuUsPerReq));
    const base = cpuOf('few');
    console.log('');
    console.log('| variant | req/s | p99 ms | CPU µs/req | vs 10 keys |');
    console.log('|---|---:|---:|---:|---:|');
    for (const v of variants) {
      console.log(`| ${v.label} | ${Math.round(median(runs[v.id].map((r) => r.rps)))} | ${fmt(median(runs[v.id].map((r) => r.p99Ms)), 2)} | ${fmt(cpuOf(v.id))} | ${(cpuOf(v.id) / base).toFixed(3)}x |`);
    }
    const ratio = cpuOf('many') / base;
    console.log('');
    console.log(`  CPU per request, ${opts.keys.toLocaleString('en-US')} vs ${opts.few} keys: ${ratio.toFixed(3)}x (target <= ${TARGET_RATIO.toFixed(2)}x: ${verdict(ratio <= TARGET_RATIO)})`);
  } finally {
    await stopAll();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function main() {
  const opts = options();
  if (opts.parts.includes('inproc')) inProcess(opts);
  if (opts.parts.length > 1) console.log('');
  if (opts.parts.includes('proxy')) await throughProxy(opts);
}

stopAllOnSignals();
process.on('exit', () => killAllNow());
main().catch(async (err) => {
  console.error(`keyed budget bench failed: ${err.stack ?? err.message}`);
  await stopAll();
  process.exit(1);
});
