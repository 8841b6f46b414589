#!/usr/bin/env node
// What failover across providers costs a client request: one Tollgate (its own process) in
// front of two providers, the first answering 429 to every request (a small server of its own),
// the second mock-llm. Three routes, told apart by path, take turns in each round:
//   direct    - straight to the second provider: the baseline;
//   failover  - the first provider (priority 0) answers 429 with Retry-After: 0 (no cool-down),
//               so every request is sent to it, then to the second (priority 1);
//   cooling   - the same with a first provider answering 429 without Retry-After: after the
//               first 429 it cools down (config.coolDown) and requests go to the second at once.
// The retry budget is set to 100% of the requests in flight: with its first provider answering
// only 429, every request of the failover variant fails over, which the default 20% would refuse
// beyond a fifth of them (tollgate_retry_budget_exhausted_total counts those, printed below).
// Closed-loop clients (keep-alive) send a chat completion each, for --duration seconds per
// variant and round, and time each answer. Printed per variant: requests, errors (an answer
// not 200, or not the second provider's), p50 and p99, and the p99 added by the variant against
// direct in the same round (ms and ratio); then the proxy's attempt counters. Asserts nothing.
//
//   pnpm build && node bench/failover.mjs [--rounds 5] [--duration 10] [--warmup 3] [--connections 32]
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { cpus as osCpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { freePort, startProcess, stopAll, stopAllOnSignals } from './lib/procs.mjs';
import { benchCpus, roundOptions } from './lib/variants.mjs';

const ROOT = new URL('..', import.meta.url).pathname;
const TOLLGATE_BIN = join(ROOT, 'packages/proxy/bin/tollgate.js');
const MOCK_LLM_BIN = join(ROOT, 'packages/mock-llm/bin/mock-llm.js');

const HELP = `Usage: node bench/failover.mjs [options]

Failover across providers: the first answers 429 to every request, the second answers; the
p99 a client request gains from the failover, against a route straight to the second.

Options:
  --rounds <n>       rounds; each runs every variant once, in turn   [default 5, at most 10]
  --duration <s>     measured seconds per variant and round           [default 10, at most 60]
  --warmup <s>       unmeasured seconds before each measurement        [default 3, at most 30]
  --connections <n>  concurrent closed-loop clients (keep-alive)       [default 32, at most 64]
  -h, --help
`;

/** The variant benches' options (bench/lib/variants.mjs), held to this bench's bounds. */
function options() {
  const { opts } = roundOptions(HELP, {}, { paced: false });
  const most = { rounds: 10, durationS: 60, warmupS: 30, connections: 64 };
  for (const [key, max] of Object.entries(most)) {
    if (opts[key] > max) {
      process.stderr.write(`failover bench: ${key} ${opts[key]} is more than ${max}\n\n${HELP}`);
      process.exit(2);
    }
  }
  return opts;
}

const VARIANTS = ['direct', 'failover', 'cooling'];
const BODY = JSON.stringify({ model: 'mock-gpt', max_tokens: 8, messages: [{ role: 'user', content: 'fail over' }] });

/** The first provider: answers 429 to everything, with Retry-After: 0 on one port and none on the other. Its own process. */
const RATE_LIMITED = `
const http = require('node:http');
const listen = (retryAfter) => new Promise((resolve) => {
  const s = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const body = JSON.stringify({ error: { message: 'Rate limit reached', type: 'requests', code: 'rate_limit_exceeded' } });
      res.writeHead(429, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), ...(retryAfter === null ? {} : { 'retry-after': retryAfter }) });
      res.end(body);
    });
  });
  s.listen(0, '127.0.0.1', () => resolve(s.address().port));
});
Promise.all([listen('0'), listen(null)]).then(([a, b]) => console.log('rate-limited listening ' + a + ' ' + b));
`;

function config(port, adminPort, metricsPort, second, zeroRetryAfter, noRetryAfter) {
  const route = (name, backends) => ({ name, matches: [{ path: { type: 'Exact', value: `/${name}/v1/chat/completions` } }], filters: [{ type: 'URLRewrite', urlRewrite: { path: { type: 'ReplaceFullPath', replaceFullPath: '/v1/chat/completions' } } }], backends });
  return {
    config: { adminAddr: `127.0.0.1:${adminPort}`, metricsAddr: `127.0.0.1:${metricsPort}`, readinessAddr: `127.0.0.1:${0}`, logLevel: 'warn', retryBudgetPercent: 100 },
    binds: [
      {
        port,
        address: '127.0.0.1',
        listeners: [
          {
            name: 'main',
            protocol: 'HTTP',
            routes: [
              route('direct', [{ host: second }]),
              route('failover', [{ host: zeroRetryAfter }, { host: second, priority: 1 }]),
              route('cooling', [{ host: noRetryAfter }, { host: second, priority: 1 }]),
            ],
          },
        ],
      },
    ],
  };
}

/** One chat completion; resolves with its latency (ms) and whether the second provider answered it. */
function call(agent, port, variant) {
  const started = performance.now();
  return new Promise((resolve) => {
    const req = http.request({ host: '127.0.0.1', port, path: `/${variant}/v1/chat/completions`, method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(BODY) } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c) => (text += c));
      res.on('end', () => resolve({ ms: performance.now() - started, ok: res.statusCode === 200 && text.includes('"chat.completion"') }));
      res.on('error', () => resolve({ ms: performance.now() - started, ok: false }));
    });
    req.on('error', () => resolve({ ms: performance.now() - started, ok: false }));
    req.end(BODY);
  });
}

/** Closed-loop load on one variant for `seconds`: every answer's latency, and the errors. */
async function load(port, variant, seconds, connections) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: connections });
  const latencies = [];
  let errors = 0;
  const until = performance.now() + seconds * 1000;
  await Promise.all(
    Array.from({ length: connections }, async () => {
      while (performance.now() < until) {
        const r = await call(agent, port, variant);
        latencies.push(r.ms);
        if (!r.ok) errors++;
      }
    }),
  );
  agent.destroy();
  return { latencies, errors };
}

function quantile(sorted, q) {
  if (!sorted.length) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
}

async function metric(metricsPort, re) {
  const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
  return [...text.matchAll(re)].map((m) => m.slice(1));
}

async function main() {
  const opts = options();
  const cpus = benchCpus();
  console.log(`failover across providers (first 429, second answers), ${new Date().toISOString()}`);
  console.log(`machine: ${osCpus().length} CPUs; node ${process.version}; load average ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);
  console.log(`load: ${opts.connections} closed-loop clients, ${opts.warmupS} s warm-up + ${opts.durationS} s per variant and round; ${opts.rounds} round(s); ${cpus.pinned ? 'proxy on CPU 0, providers and clients on CPU 1' : 'no pinning'}`);
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-failover-bench-'));
  try {
    const ml = startProcess('mock-llm', process.execPath, [MOCK_LLM_BIN, '--port', '0'], { cpu: cpus.load });
    const mline = await ml.waitForLine((l) => l.startsWith('mock-llm listening on '), 15_000);
    const second = new URL(mline.slice('mock-llm listening on '.length).trim()).host;
    const rl = startProcess('rate-limited', process.execPath, ['-e', RATE_LIMITED], { cpu: cpus.load });
    const [zero, none] = (await rl.waitForLine((l) => l.startsWith('rate-limited listening '), 15_000)).split(' ').slice(2).map(Number);
    const port = await freePort();
    const metricsPort = await freePort();
    const file = join(dir, 'config.json');
    writeFileSync(file, JSON.stringify(config(port, await freePort(), metricsPort, second, `127.0.0.1:${zero}`, `127.0.0.1:${none}`)));
    const proxy = startProcess('tollgate', process.execPath, [TOLLGATE_BIN, '--file', file], { cpu: cpus.proxy });
    for (let i = 0; ; i++) {
      if (proxy.exitCode !== undefined) throw new Error(`tollgate exited (${proxy.exitCode})\n${proxy.tail}`);
      const agent = new http.Agent();
      const r = await call(agent, port, 'direct').catch(() => ({ ok: false }));
      if (r.ok) break;
      if (i > 100) throw new Error(`tollgate not answering\n${proxy.tail}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const results = Object.fromEntries(VARIANTS.map((v) => [v, { latencies: [], errors: 0, addedP99: [] }]));
    for (let round = 0; round < opts.rounds; round++) {
      const p99 = {};
      for (const v of VARIANTS) {
        if (opts.warmupS) await load(port, v, opts.warmupS, opts.connections);
        const r = await load(port, v, opts.durationS, opts.connections);
        results[v].latencies.push(...r.latencies);
        results[v].errors += r.errors;
        p99[v] = quantile([...r.latencies].sort((a, b) => a - b), 0.99);
      }
      for (const v of VARIANTS) results[v].addedP99.push({ ms: p99[v] - p99.direct, ratio: p99[v] / p99.direct });
    }
    const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
    console.log('');
    console.log('variant    requests   req/s    errors   p50 ms   p99 ms   p99 added vs direct (median of rounds)');
    for (const v of VARIANTS) {
      const r = results[v];
      const sorted = [...r.latencies].sort((a, b) => a - b);
      const added = v === 'direct' ? '(baseline)' : `${median(r.addedP99.map((x) => x.ms)).toFixed(2)} ms (x${median(r.addedP99.map((x) => x.ratio)).toFixed(2)})`;
      console.log(
        `${v.padEnd(10)} ${String(sorted.length).padStart(8)}   ${(sorted.length / (opts.durationS * opts.rounds)).toFixed(0).padStart(5)}   ${String(r.errors).padStart(6)}   ${quantile(sorted, 0.5).toFixed(2).padStart(6)}   ${quantile(sorted, 0.99).toFixed(2).padStart(6)}   ${added}`,
      );
    }
    // What the proxy counted: attempts per route and backend (warm-up included), failovers, budget refusals.
    const attempts = await metric(metricsPort, /^tollgate_upstream_attempts_total\{route="main\/(\w+)",backend="([^"]+)",outcome="(\w+)"\} (\d+)$/gm);
    console.log('');
    console.log('attempts (warm-up included): ' + attempts.map(([route, backend, outcome, n]) => `${route} ${backend === second ? 'second' : 'first'} ${outcome} ${n}`).join('; '));
    const failovers = await metric(metricsPort, /^tollgate_retries_total\{route="main\/(\w+)",kind="failover"\} (\d+)$/gm);
    console.log('failovers: ' + (failovers.map(([route, n]) => `${route} ${n}`).join('; ') || 'none'));
    const exhausted = await metric(metricsPort, /^tollgate_retry_budget_exhausted_total\{route="main\/(\w+)"\} (\d+)$/gm);
    console.log('retry budget exhausted: ' + (exhausted.map(([route, n]) => `${route} ${n}`).join('; ') || 'none'));
  } finally {
    await stopAll();
    rmSync(dir, { recursive: true, force: true });
  }
}

stopAllOnSignals();
main().catch(async (err) => {
  console.error(err instanceof Error ? err.message : err);
  await stopAll();
  process.exit(1);
});
