#!/usr/bin/env node
// What authentication costs on the LLM route: one Tollgate, one LLM route per variant (the
// peer bench's metered chat route, never-refusing limits), told apart by hostname: no auth,
// apiKey (1,000 consumers), jwt (RS256 with an inline key set) and basicAuth (bcrypt; every
// request after the first is a cached verification). The variants take turns within each
// round, the proxy pinned to one CPU; the table gives medians and each variant's CPU per
// request against no auth: the median of its per-round ratios (a round's variants run back to back). Printed, not asserted.
//
//   pnpm build && node bench/auth.mjs [--rounds 5] [--duration 10] [--warmup 3]
import { createPrivateKey, createSign, generateKeyPairSync, randomBytes } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { cpus as osCpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { intOption, median } from './lib/stats.mjs';
import { MOCK_LLM_BIN, ROOT, TOLLGATE_BIN } from './lib/cases.mjs';
import { commands, freePort, isBindListening, killAllNow, startProcess, stopAll, stopAllOnSignals } from './lib/procs.mjs';
import { probe, REQUESTS } from './lib/requests.mjs';
import { procCpuUs } from './peers/proc-stats.mjs';
import { ensureWrk, wrk } from './peers/wrk.mjs';

const HELP = `Usage: node bench/auth.mjs [options]

Options:
  --rounds <n>       rounds; each runs every variant once, in turn   [default 5]
  --duration <s>     measured seconds per variant and round           [default 10]
  --warmup <s>       unmeasured seconds before each measurement        [default 3]
  --connections <n>  wrk keep-alive connections                        [default 32]
  --only <variants>  comma-separated: none, apiKey, jwt, basicAuth (none is always run)
  -h, --help
`;

const NEVER = 2_000_000_000;
const VARIANTS = ['none', 'apiKey', 'jwt', 'basicAuth'];
const TARGETS = { apiKey: 1.1, jwt: 1.15, basicAuth: 1.1 };

function options() {
  const { values } = parseArgs({
    options: {
      rounds: { type: 'string', default: '5' },
      duration: { type: 'string', default: '10' },
      warmup: { type: 'string', default: '3' },
      connections: { type: 'string', default: '32' },
      only: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    process.stdout.write(HELP);
    process.exit(0);
  }
  const int = (name, min) => intOption(values, name, min);
  const only = values.only ? values.only.split(',').map((s) => s.trim()).filter(Boolean) : VARIANTS;
  for (const v of only) if (!VARIANTS.includes(v)) throw new Error(`--only: unknown variant '${v}'; variants: ${VARIANTS.join(', ')}`);
  return { rounds: int('rounds', 1), durationS: int('duration', 1), warmupS: int('warmup', 0), connections: int('connections', 1), variants: ['none', ...only.filter((v) => v !== 'none')] };
}

const b64url = (buf) => Buffer.from(buf).toString('base64url');

/** An RS256 token valid for a day and the key set that verifies it. */
function jwtMaterial() {
  const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const jwk = { ...publicKey.export({ format: 'jwk' }), kid: 'bench', alg: 'RS256', use: 'sig' };
  const now = Math.floor(Date.now() / 1000);
  const head = b64url(JSON.stringify({ alg: 'RS256', typ: 'JWT', kid: 'bench' }));
  const body = b64url(JSON.stringify({ iss: 'https://issuer.bench', aud: 'tollgate', sub: 'bench-user', iat: now, exp: now + 86_400 }));
  const sig = createSign('RSA-SHA256').update(`${head}.${body}`).sign(createPrivateKey(privateKey.export({ format: 'pem', type: 'pkcs8' })));
  return { token: `${head}.${body}.${b64url(sig)}`, jwks: JSON.stringify({ keys: [jwk] }) };
}

function hasHtpasswd() {
  try {
    execFileSync('htpasswd', ['-h'], { stdio: 'ignore' });
    return true;
  } catch (err) {
    // htpasswd -h prints its usage and exits 1; only a missing binary is ENOENT.
    return err.code !== 'ENOENT';
  }
}

/** A bcrypt htpasswd line: htpasswd when installed, else the proxy's own bcrypt library. */
function bcryptLine(user, password) {
  if (hasHtpasswd()) return execFileSync('htpasswd', ['-nbB', '-C', '10', user, password], { encoding: 'utf8' }).trim();
  const require = createRequire(join(ROOT, 'packages/proxy/package.json'));
  const bcrypt = require('bcryptjs');
  return `${user}:${bcrypt.hashSync(password, 10)}`;
}

function writeFiles(dir, mockLlmHost, port, adminPort) {
  const keys = Array.from({ length: 1000 }, (_, i) => ({ key: `sk-bench-${i}-${randomBytes(12).toString('hex')}`, consumer: `consumer-${i}`, group: `team-${i % 10}` }));
  writeFileSync(join(dir, 'keys.json'), JSON.stringify(keys));
  writeFileSync(join(dir, 'htpasswd'), `${bcryptLine('bench', 'bench-password')}\n`);
  const { token, jwks } = jwtMaterial();
  const limits = { rateLimit: { local: [{ requests: NEVER, unit: 'Seconds' }, { tokens: NEVER, unit: 'Seconds' }] } };
  const auth = {
    none: {},
    apiKey: { apiKey: { file: 'keys.json' } },
    jwt: { jwt: { providers: [{ name: 'bench', issuer: 'https://issuer.bench', audiences: ['tollgate'], jwks: { inline: jwks } }] } },
    basicAuth: { basicAuth: { htpasswd: { file: 'htpasswd' } } },
  };
  const routes = VARIANTS.map((v) => ({
    name: `chat-${v.toLowerCase()}`,
    hostnames: [`${v.toLowerCase()}.auth.bench`],
    matches: [{ path: { type: 'PathPrefix', value: '/v1/chat/completions' }, method: 'POST' }],
    backends: [{ host: mockLlmHost }],
    policies: { traffic: { ...limits, ...auth[v] } },
  }));
  const config = {
    config: { adminAddr: `127.0.0.1:${adminPort}`, logLevel: 'info', drainTimeout: '1s' },
    binds: [{ port, address: '127.0.0.1', listeners: [{ name: 'bench', protocol: 'HTTP', routes }] }],
  };
  const file = join(dir, 'tollgate.json');
  writeFileSync(file, JSON.stringify(config, null, 2));
  const credentials = {
    none: {},
    apiKey: { authorization: `Bearer ${keys[500].key}` },
    jwt: { authorization: `Bearer ${token}` },
    basicAuth: { authorization: `Basic ${Buffer.from('bench:bench-password').toString('base64')}` },
  };
  const requests = Object.fromEntries(
    VARIANTS.map((v) => [v, { ...REQUESTS.chat, headers: { ...REQUESTS.chat.headers, host: `${v.toLowerCase()}.auth.bench`, ...credentials[v] } }]),
  );
  return { file, requests };
}

const n = (v, d = 1) => (v === null ? '-' : v.toFixed(d));

async function main() {
  const opts = options();
  ensureWrk();
  const pinned = commands.taskset && osCpus().length >= 2;
  const cpus = pinned ? { proxy: '0', load: '1' } : { proxy: null, load: null };
  console.log(`authentication cost on the LLM route, ${new Date().toISOString()}`);
  console.log(`machine: ${osCpus().length} CPUs; node ${process.version}; load average ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);
  console.log(`load: wrk -t1 -c${opts.connections}, ${opts.warmupS} s warm-up + ${opts.durationS} s per variant and round; ${opts.rounds} round(s); ${pinned ? 'proxy on CPU 0, mock-llm and wrk on CPU 1' : 'no pinning'}`);
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-auth-bench-'));
  try {
    const ml = startProcess('mock-llm', process.execPath, [MOCK_LLM_BIN, '--port', '0'], { cpu: cpus.load });
    const mline = await ml.waitForLine((l) => l.startsWith('mock-llm listening on '), 15_000);
    const mockLlmHost = new URL(mline.slice('mock-llm listening on '.length).trim()).host;
    const port = await freePort();
    const { file, requests } = writeFiles(dir, mockLlmHost, port, await freePort());
    const side = ['--metrics-addr', `127.0.0.1:${await freePort()}`, '--readiness-addr', `127.0.0.1:${await freePort()}`];
    const proxy = startProcess('tollgate', process.execPath, [TOLLGATE_BIN, '--file', file, ...side], { cpu: cpus.proxy });
    await proxy.waitForLine(isBindListening, 120_000);
    const url = `http://127.0.0.1:${port}`;
    for (const v of opts.variants) {
      const bad = await probe(url, requests[v]);
      if (bad) throw new Error(`variant ${v} answers wrongly: ${bad}`);
    }
    const runs = Object.fromEntries(opts.variants.map((v) => [v, []]));
    for (let round = 1; round <= opts.rounds; round++) {
      const order = round % 2 ? opts.variants : [...opts.variants].reverse();
      for (const v of order) {
        const common = { baseUrl: url, request: requests[v], connections: opts.connections, cpu: cpus.load, workDir: dir, delayMs: 0 };
        if (opts.warmupS) await wrk({ ...common, durationS: opts.warmupS });
        let cpu0 = 0;
        const r = await wrk({ ...common, durationS: opts.durationS, onStart: () => (cpu0 = procCpuUs(proxy.pid)) });
        const cpuUsPerReq = (procCpuUs(proxy.pid) - cpu0) / r.requests;
        runs[v].push({ ...r, cpuUsPerReq });
        console.log(`[round ${round}/${opts.rounds}] ${v}: ${Math.round(r.rps)} req/s, p99 ${n(r.p99Ms, 2)} ms, ${n(cpuUsPerReq)} µs CPU/req${r.errors || r.non2xx ? `, ERRORS ${r.errors} socket, ${r.non2xx} non-2xx` : ''}`);
      }
    }
    console.log('');
    console.log('| variant | req/s | p99 ms | CPU µs/req | vs none | target |');
    console.log('|---|---:|---:|---:|---:|---|');
    for (const v of opts.variants) {
      const cpu = median(runs[v].map((r) => r.cpuUsPerReq));
      // Each round's ratio against the no-auth run of the same round, then their median: the
      // load of a shared machine drifts between rounds far more than within one.
      const ratios = runs[v].flatMap((r, i) => (runs.none[i].cpuUsPerReq ? [r.cpuUsPerReq / runs.none[i].cpuUsPerReq] : []));
      const ratio = ratios.length ? median(ratios) : null;
      const target = TARGETS[v] ? `<= ${TARGETS[v].toFixed(2)}x ${ratio !== null && ratio <= TARGETS[v] ? 'met' : 'NOT met'}` : '';
      console.log(`| ${v} | ${Math.round(median(runs[v].map((r) => r.rps)))} | ${n(median(runs[v].map((r) => r.p99Ms)), 2)} | ${n(cpu)} | ${ratio === null ? '-' : `${ratio.toFixed(2)}x`} | ${target} |`);
    }
  } finally {
    await stopAll();
    rmSync(dir, { recursive: true, force: true });
  }
}

stopAllOnSignals();
process.on('exit', () => killAllNow());
main().catch(async (err) => {
  console.error(`auth bench failed: ${err.stack ?? err.message}`);
  await stopAll();
  process.exit(1);
});
