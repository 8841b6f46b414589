#!/usr/bin/env node
// Resident memory of Tollgate and agentgateway, idle, with 1 route and with a table of N
// routes (bench/lib/configs.mjs's table: distinct paths, exact/wildcard/no hostnames, some
// method matches): each proxy is started with the config, answers the table's target request
// once, then sits idle for --settle seconds before VmRSS and VmHWM are read from /proc.
//
//   AGENTGATEWAY_BIN=/path/to/agentgateway node bench/peers/memory.mjs [--routes 1,5000]
//     [--settle 10] [--node-args=--max-semi-space-size=4] [--tollgate-root <dir>] [--workers 1,2]
//
// --workers: Tollgate's thread counts, each measured at every route count (agentgateway runs
// one worker thread throughout: WORKER_THREADS=1).
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { ROOT } from '../lib/cases.mjs';
import { routeTable, tableRoute } from '../lib/configs.mjs';
import { freePort, killAllNow, startProcess, stopAll } from '../lib/procs.mjs';
import { REQUESTS, TARGET, waitUntilAnswering } from '../lib/requests.mjs';
import { rssKiB } from './proc-stats.mjs';

const { values } = parseArgs({
  options: {
    routes: { type: 'string', default: '1,5000' },
    settle: { type: 'string', default: '10' },
    'node-args': { type: 'string', default: '' },
    'tollgate-root': { type: 'string', default: ROOT },
    workers: { type: 'string', default: '1' },
    help: { type: 'boolean', short: 'h' },
  },
});
if (values.help) {
  process.stdout.write('Usage: AGENTGATEWAY_BIN=<path> node bench/peers/memory.mjs [--routes 1,5000] [--settle 10] [--node-args="..."] [--tollgate-root <dir>] [--workers 1,2]\n');
  process.exit(0);
}
const counts = values.routes.split(',').map(Number);
for (const n of counts) if (!Number.isInteger(n) || n < 1) throw new Error(`--routes: each count must be an integer >= 1, got ${n}`);
const threadCounts = values.workers.split(',').map(Number);
for (const n of threadCounts) if (!Number.isInteger(n) || n < 1 || n > 64) throw new Error(`--workers: each count must be an integer from 1 to 64, got ${n}`);
const settleS = Number(values.settle);
const nodeArgs = values['node-args'].split(/\s+/).filter(Boolean);

/** The same table for both proxies: the first count - 1 routes of the table, then the target. */
function table(count, backendHost) {
  const routes = Array.from({ length: Math.min(count - 1, TARGET.index) }, (_, i) => tableRoute(i, backendHost));
  for (let i = TARGET.index + 1; routes.length < count - 1; i++) routes.push(tableRoute(i, backendHost));
  return [...routes, ...routeTable(1, backendHost)];
}

/** A Tollgate table route in agentgateway's local config format. */
function toAgentgateway(route) {
  const out = {
    name: route.name,
    matches: route.matches.map((m) => ({
      path: m.path.type === 'Exact' ? { exact: m.path.value } : { pathPrefix: m.path.value },
      ...(m.method ? { method: m.method } : {}),
    })),
    backends: route.backends.map((b) => ({ host: b.host })),
  };
  if (route.hostnames) out.hostnames = route.hostnames;
  return out;
}

async function measure(name, proc, url) {
  await Promise.race([
    waitUntilAnswering(url, REQUESTS.fixed, 180_000),
    proc.exited.then((code) => Promise.reject(new Error(`${name} exited (${code})\n${proc.tail}`))),
  ]);
  await sleep(settleS * 1000);
  const m = rssKiB(proc.pid);
  await proc.stop();
  return m;
}

async function main() {
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-peer-mem-'));
  const rows = [];
  try {
    const backend = startProcess('backend', process.execPath, [join(ROOT, 'bench/backend.mjs'), '--port', '0']);
    const line = await backend.waitForLine((l) => l.startsWith('backend listening on '), 15_000);
    const backendHost = new URL(line.slice('backend listening on '.length).trim()).host;
    for (const count of counts) {
      const routes = table(count, backendHost);
      // Tollgate
      for (const threads of threadCounts) {
        const port = await freePort();
        const file = join(dir, `tollgate-${count}.json`);
        const config = {
          config: { adminAddr: `127.0.0.1:${await freePort()}`, logLevel: 'info' },
          binds: [{ port, address: '127.0.0.1', listeners: [{ name: 'bench', protocol: 'HTTP', routes }] }],
        };
        writeFileSync(file, JSON.stringify(config));
        const bin = join(values['tollgate-root'], 'packages/proxy/bin/tollgate.js');
        const side = ['--metrics-addr', `127.0.0.1:${await freePort()}`, '--readiness-addr', `127.0.0.1:${await freePort()}`, '--workers', String(threads)];
        const proc = startProcess('tollgate', process.execPath, [...nodeArgs, bin, '--file', file, ...side]);
        rows.push({ proxy: threads === 1 ? 'tollgate' : `tollgate×${threads}`, count, ...(await measure('tollgate', proc, `http://127.0.0.1:${port}`)) });
      }
      // agentgateway
      const bin = process.env.AGENTGATEWAY_BIN;
      if (bin) {
        const port = await freePort();
        const sub = join(dir, `agentgateway-${count}`);
        mkdirSync(sub);
        const file = join(sub, 'config.yaml');
        writeFileSync(file, JSON.stringify({ binds: [{ port, listeners: [{ name: 'bench', protocol: 'HTTP', routes: routes.map(toAgentgateway) }] }] }));
        const env = {
          WORKER_THREADS: '1',
          RUST_LOG: 'warn',
          ADMIN_ADDR: `127.0.0.1:${await freePort()}`,
          STATS_ADDR: `127.0.0.1:${await freePort()}`,
          READINESS_ADDR: `127.0.0.1:${await freePort()}`,
        };
        const proc = startProcess('agentgateway', bin, ['-f', file], { env, cwd: sub });
        rows.push({ proxy: 'agentgateway', count, ...(await measure('agentgateway', proc, `http://127.0.0.1:${port}`)) });
      }
    }
  } finally {
    await stopAll();
    rmSync(dir, { recursive: true, force: true });
  }
  console.log(`RSS after ${settleS} s idle (one request answered); load average ${loadavg().map((l) => l.toFixed(2)).join(' ')}${nodeArgs.length ? `; tollgate node flags: ${nodeArgs.join(' ')}` : ''}`);
  if (!process.env.AGENTGATEWAY_BIN) console.log('(AGENTGATEWAY_BIN not set: Tollgate only)');
  for (const r of rows) console.log(`${r.proxy.padEnd(12)} ${String(r.count).padStart(6)} routes: RSS ${(r.rss / 1024).toFixed(1)} MiB, peak ${(r.hwm / 1024).toFixed(1)} MiB`);
}

process.on('exit', () => killAllNow());
main().catch(async (err) => {
  console.error(`memory bench failed: ${err.stack ?? err.message}`);
  await stopAll();
  process.exit(1);
});
