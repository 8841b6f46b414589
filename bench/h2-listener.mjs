#!/usr/bin/env node
// What HTTP/2 from clients costs against HTTP/1.1 on the same HTTPS listener: one Tollgate with
// an HTTPS listener (a certificate of a CA made here) in front of mock-llm, one metered chat
// route (never-refusing limits). The load is the same in both variants, a Node client process
// of its own (wrk speaks no HTTP/2) keeping `--connections` requests in flight: over HTTP/1.1
// on as many kept-alive TLS connections, over h2 on `--sessions` TLS connections (ALPN h2)
// sharing them as streams. Handshakes happen before the measurement. The variants take turns
// within each round, the proxy pinned to one CPU; the table gives medians and h2's CPU per
// request against HTTP/1.1's (the median of its per-round ratios). Printed, not asserted.
//
//   pnpm build && node bench/h2-listener.mjs [--rounds 5] [--duration 10] [--warmup 3] [--connections 32] [--sessions 4]
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect as connectHttp2 } from 'node:http2';
import { Agent, request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MOCK_LLM_BIN, ROOT, TOLLGATE_BIN } from './lib/cases.mjs';
import { freePort, isBindListening, startProcess, stopAll } from './lib/procs.mjs';
import { REQUESTS } from './lib/requests.mjs';
import { intOption } from './lib/stats.mjs';
import { benchCpus, printCpuTable, printPreamble, ROUND_OPTIONS_HELP, roundOptions, runBench } from './lib/variants.mjs';
import { procCpuUs } from './peers/proc-stats.mjs';

const HELP = `Usage: node bench/h2-listener.mjs [options]

Options:
${ROUND_OPTIONS_HELP}
  --sessions <n>     HTTP/2 connections the h2 variant spreads its requests over  [default 4]
  -h, --help
`;

const NEVER = 2_000_000_000;
const VARIANTS = ['http1', 'h2'];
/** No bound yet: node:http2's compatibility layer costs more per request than node:http's; the ratio is what to watch. */
const TARGETS = {};
const NAME = 'llm.h2.bench';
const WORKER = '--load-worker';

// ---- the load worker: its own process, on the load CPU ----

/** Keeps `inflight` requests going until `stopAt`; resolves with the count of 200s and failures. */
async function keepGoing(inflight, stopAt, send) {
  let ok = 0;
  let failed = 0;
  const lane = async () => {
    while (Date.now() < stopAt) {
      try {
        if ((await send()) === 200) ok++;
        else failed++;
      } catch {
        failed++;
      }
    }
  };
  await Promise.all(Array.from({ length: inflight }, lane));
  return { ok, failed };
}

async function loadWorker(spec) {
  const { port, ca, variant, connections, sessions, warmupS, durationS } = spec;
  const req = REQUESTS.chat;
  const body = Buffer.from(req.body);
  const headers = { ...req.headers, 'content-length': String(body.length) };
  let send;
  let close;
  if (variant === 'h2') {
    const all = Array.from({ length: sessions }, () => connectHttp2(`https://${NAME}:${port}`, { ca, servername: NAME, lookup: (_h, o, cb) => (o.all ? cb(null, [{ address: '127.0.0.1', family: 4 }]) : cb(null, '127.0.0.1', 4)) }));
    let next = 0;
    send = () =>
      new Promise((resolve, reject) => {
        const s = all[next++ % all.length];
        const stream = s.request({ ':method': req.method, ':path': req.path, ':authority': NAME, ...headers });
        let status = 0;
        stream.on('response', (h) => (status = h[':status']));
        stream.on('data', () => undefined);
        stream.on('end', () => resolve(status));
        stream.on('error', reject);
        stream.end(body);
      });
    close = () => all.forEach((s) => s.close());
  } else {
    const agent = new Agent({ keepAlive: true, maxSockets: connections, ca, servername: NAME });
    send = () =>
      new Promise((resolve, reject) => {
        const r = httpsRequest({ host: '127.0.0.1', port, method: req.method, path: req.path, headers: { ...headers, host: NAME }, agent, servername: NAME }, (res) => {
          res.on('data', () => undefined);
          res.on('end', () => resolve(res.statusCode));
        });
        r.on('error', reject);
        r.end(body);
      });
    close = () => agent.destroy();
  }
  if (warmupS) await keepGoing(connections, Date.now() + warmupS * 1000, send);
  // The parent samples the proxy's CPU between these two lines.
  process.stdout.write('MEASURE\n');
  const started = Date.now();
  const r = await keepGoing(connections, started + durationS * 1000, send);
  const seconds = (Date.now() - started) / 1000;
  process.stdout.write(`RESULT ${JSON.stringify({ ...r, seconds })}\n`);
  close();
}

// ---- the bench ----

async function certificates(dir) {
  const { issueTestCertificate } = await import(join(ROOT, 'packages/testkit/dist/certificates.js'));
  const ca = issueTestCertificate({ commonName: 'tollgate h2 bench CA', ca: true });
  const leaf = issueTestCertificate({ commonName: NAME, names: [NAME], issuer: ca });
  const files = { ca: join(dir, 'ca.pem'), cert: join(dir, 'listener.crt'), key: join(dir, 'listener.key') };
  writeFileSync(files.ca, ca.cert);
  writeFileSync(files.cert, leaf.cert);
  writeFileSync(files.key, leaf.key, { mode: 0o600 });
  return { files, ca: ca.cert };
}

/** One measured run of `variant`: the proxy's CPU µs per answered request, and the rate. */
async function measure({ proxy, spec, cpus }) {
  const worker = startProcess(`load-${spec.variant}`, process.execPath, [new URL(import.meta.url).pathname, WORKER, JSON.stringify(spec)], { cpu: cpus.load });
  worker.keepOutput = true;
  await worker.waitForLine((l) => l === 'MEASURE', (spec.warmupS + 60) * 1000);
  const cpu0 = procCpuUs(proxy.pid);
  const line = await worker.waitForLine((l) => l.startsWith('RESULT '), (spec.durationS + 60) * 1000);
  const cpu = procCpuUs(proxy.pid) - cpu0;
  await worker.exited;
  const r = JSON.parse(line.slice('RESULT '.length));
  return { requests: r.ok, rps: r.ok / r.seconds, p99Ms: null, errors: r.failed, non2xx: 0, cpuUsPerReq: cpu / Math.max(1, r.ok) };
}

async function main() {
  const { values, opts } = roundOptions(HELP, { sessions: { type: 'string', default: '4' } }, { paced: false });
  const sessions = intOption(values, 'sessions', 1);
  const cpus = benchCpus();
  printPreamble(`HTTP/2 (ALPN h2, ${sessions} connection(s)) against HTTP/1.1 on one HTTPS listener`, opts, cpus);
  console.log('(the load is a Node client, not wrk: the wrk line above gives the connections and times it keeps)');
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-h2-listener-bench-'));
  try {
    const { files, ca } = await certificates(dir);
    const ml = startProcess('mock-llm', process.execPath, [MOCK_LLM_BIN, '--port', '0'], { cpu: cpus.load });
    const mline = await ml.waitForLine((l) => l.startsWith('mock-llm listening on '), 15_000);
    const mockLlmHost = new URL(mline.slice('mock-llm listening on '.length).trim()).host;
    const port = await freePort();
    const policies = { traffic: { rateLimit: { local: [{ requests: NEVER, unit: 'Seconds' }, { tokens: NEVER, unit: 'Seconds' }] } } };
    const config = {
      config: { adminAddr: `127.0.0.1:${await freePort()}`, logLevel: 'info', drainTimeout: '1s' },
      binds: [{ port, address: '127.0.0.1', listeners: [{ name: 'bench', protocol: 'HTTPS', hostname: NAME, tls: { certificates: [{ certFile: files.cert, keyFile: files.key }] }, routes: [{ name: 'chat', policies, backends: [{ host: mockLlmHost }] }] }] }],
    };
    const file = join(dir, 'tollgate-h2-listener.json');
    writeFileSync(file, JSON.stringify(config, null, 2));
    const side = ['--metrics-addr', `127.0.0.1:${await freePort()}`, '--readiness-addr', `127.0.0.1:${await freePort()}`];
    const proxy = startProcess('tollgate', process.execPath, [TOLLGATE_BIN, '--file', file, ...side], { cpu: cpus.proxy });
    await proxy.waitForLine(isBindListening, 120_000);
    const runs = Object.fromEntries(VARIANTS.map((v) => [v, []]));
    for (let round = 1; round <= opts.rounds; round++) {
      const order = round % 2 ? VARIANTS : [...VARIANTS].reverse();
      for (const variant of order) {
        const spec = { port, ca, variant, connections: opts.connections, sessions, warmupS: opts.warmupS, durationS: opts.durationS };
        const r = await measure({ proxy, spec, cpus });
        if (r.requests === 0) throw new Error(`variant ${variant}: no request answered 200 (${r.errors} failed)`);
        runs[variant].push(r);
        console.log(`[round ${round}/${opts.rounds}] ${variant}: ${Math.round(r.rps)} req/s, ${r.cpuUsPerReq.toFixed(1)} µs CPU/req${r.errors ? `, ERRORS ${r.errors}` : ''}`);
      }
    }
    printCpuTable(runs, VARIANTS, 'http1', TARGETS);
  } finally {
    await stopAll();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[2] === WORKER) {
  loadWorker(JSON.parse(process.argv[3])).then(
    () => process.exit(0),
    (err) => {
      console.error(err.stack ?? err.message);
      process.exit(1);
    },
  );
} else {
  runBench('h2-listener', main);
}
