#!/usr/bin/env node
// The proxy's memory while many clients send large request bodies and stall: a `tollgate`
// process (its own process, so its RSS is its own) with a metered route, and N connections
// that each send a body one byte short of config.maxRequestBodyBytes, then send nothing more.
// Prints the proxy's RSS before, its peak during the load and the hold, the peak of the
// tollgate_buffered_request_bytes gauge against config.maxBufferedRequestBytes, how the
// connections ended (held, refused with 503, closed), and what a new client gets meanwhile.
// Asserts nothing. Run `pnpm build` first.
//
//   node bench/body-budget-rss.mjs                              # 200 connections of 8 MiB less a byte
//   node bench/body-budget-rss.mjs --connections 40 --body-bytes 1048576 --hold-ms 2000
//   node bench/body-budget-rss.mjs --tollgate-root /path/to/main   # the same load on another build
//
// A build without the budget holds every body: 200 bodies of 8 MiB are 1.6 GiB and more of
// RSS. Mind the machine's memory before running that against an old build.
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { connect } from 'node:net';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { freePort, killAllNow, startProcess, stopAll } from './lib/procs.mjs';
import { rssKiB } from './peers/proc-stats.mjs';

const { values } = parseArgs({
  options: {
    connections: { type: 'string', default: '200' },
    'body-bytes': { type: 'string', default: String(8 * 1024 * 1024) },
    'budget-bytes': { type: 'string' },
    'hold-ms': { type: 'string', default: '3000' },
    'tollgate-root': { type: 'string', default: new URL('..', import.meta.url).pathname },
  },
});
const CONNECTIONS = Number(values.connections);
const BODY = Number(values['body-bytes']);
const HOLD_MS = Number(values['hold-ms']);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const mib = (kib) => `${(kib / 1024).toFixed(1)} MiB`;

/** A backend that answers every chat request at once, with usage. */
async function backend() {
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.setHeader('content-type', 'application/json');
      res.end('{"choices":[{"message":{"content":"ok"}}],"usage":{"total_tokens":2}}');
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return server;
}

function chat(port) {
  const body = '{"model":"m","messages":[{"role":"user","content":"hi"}]}';
  return new Promise((resolve) => {
    const req = http.request({ host: '127.0.0.1', port, path: '/v1/chat/completions', method: 'POST', agent: false, headers: { 'content-type': 'application/json' } }, (res) => {
      res.resume();
      res.on('end', () => resolve(`${res.statusCode}${res.headers['retry-after'] ? ` (Retry-After: ${res.headers['retry-after']})` : ''}`));
    });
    req.on('error', (err) => resolve(`error ${err.code ?? err.message}`));
    req.end(body);
  });
}

async function scrape(metricsPort) {
  try {
    const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    const value = (re) => Number(re.exec(text)?.[1] ?? NaN);
    return { buffered: value(/^tollgate_buffered_request_bytes (\d+)$/m), refused: value(/^tollgate_client_refusals_total\{reason="body_budget"\} (\d+)$/m) };
  } catch {
    return { buffered: NaN, refused: NaN };
  }
}

async function main() {
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-body-budget-'));
  const up = await backend();
  try {
    const port = await freePort();
    const metricsPort = await freePort();
    const file = join(dir, 'config.json');
    const config = {
      config: { maxRequestBodyBytes: BODY, requestBodyIdleTimeout: '10m', requestBodyTimeout: '10m', ...(values['budget-bytes'] ? { maxBufferedRequestBytes: Number(values['budget-bytes']) } : {}) },
      binds: [{ port, address: '127.0.0.1', listeners: [{ name: 'main', protocol: 'HTTP', routes: [{ name: 'chat', policies: { traffic: { rateLimit: { local: [{ tokens: 1e9, unit: 'Hours' }] } } }, backends: [{ host: `127.0.0.1:${up.address().port}` }] }] }] }],
    };
    writeFileSync(file, JSON.stringify(config));
    const bin = join(values['tollgate-root'], 'packages/proxy/bin/tollgate.js');
    const proxy = startProcess('tollgate', process.execPath, [bin, '--file', file, '--admin-addr', `127.0.0.1:${await freePort()}`, '--metrics-addr', `127.0.0.1:${metricsPort}`, '--readiness-addr', `127.0.0.1:${await freePort()}`]);
    // Ready once it answers.
    for (let i = 0; ; i++) {
      if (proxy.exitCode !== undefined) throw new Error(`tollgate exited (${proxy.exitCode})\n${proxy.tail}`);
      if ((await chat(port)).startsWith('200')) break;
      if (i > 200) throw new Error(`tollgate not answering\n${proxy.tail}`);
      await sleep(100);
    }
    const before = rssKiB(proxy.pid).rss;
    let peakBuffered = 0;
    const sample = async () => {
      const m = await scrape(metricsPort);
      if (m.buffered > peakBuffered) peakBuffered = m.buffered;
      return m;
    };
    const head = `POST /v1/chat/completions HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nContent-Length: ${BODY}\r\n\r\n`;
    const payload = Buffer.alloc(BODY - 1, 'x');
    const ends = { held: 0, refused: 0, closed: 0 };
    let holding = true;
    const sockets = [];
    const endings = [];
    for (let i = 0; i < CONNECTIONS; i++) {
      const s = connect(port, '127.0.0.1');
      s.on('error', () => undefined);
      let text = '';
      s.on('data', (c) => (text += c.toString('latin1')));
      // Closed by the proxy before the end of the hold: refused (503 read) or cut; still open: held.
      endings.push(once(s, 'close').then(() => (holding ? (/^HTTP\/1\.1 503/.test(text) ? 'refused' : 'closed') : 'held')));
      s.write(head);
      s.write(payload, () => undefined);
      sockets.push(s);
      if (i % 10 === 9) await sample();
    }
    const deadline = Date.now() + HOLD_MS;
    const during = [];
    while (Date.now() < deadline) {
      await sample();
      during.push(rssKiB(proxy.pid).rss);
      await sleep(250);
    }
    const fresh = await chat(port);
    const m = await sample();
    const { hwm } = rssKiB(proxy.pid);
    holding = false;
    for (const s of sockets) if (!s.destroyed) s.destroy();
    for (const e of await Promise.all(endings)) ends[e]++;
    const settled = await sample();
    console.log(`${CONNECTIONS} connections, each ${BODY - 1} bytes of a ${BODY}-byte body, held ${HOLD_MS} ms; load average ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);
    console.log(`tollgate RSS: before ${mib(before)}, during the hold ${mib(Math.min(...during))}-${mib(Math.max(...during))}, peak (VmHWM) ${mib(hwm)}`);
    console.log(`buffered request bytes: peak ${Number.isNaN(peakBuffered) ? 'n/a' : `${(peakBuffered / 2 ** 20).toFixed(1)} MiB`}, after the clients left ${Number.isNaN(settled.buffered) ? 'n/a' : settled.buffered}; refusals (body_budget) ${Number.isNaN(m.refused) ? 'n/a' : m.refused}`);
    console.log(`connections: ${ends.held} open until the end, ${ends.refused} answered 503, ${ends.closed} closed otherwise; a new client during the hold got ${fresh}`);
    await proxy.stop();
  } finally {
    up.close();
    await stopAll();
    rmSync(dir, { recursive: true, force: true });
  }
}

process.on('exit', () => killAllNow());
main().catch(async (err) => {
  console.error(`body budget bench failed: ${err.stack ?? err.message}`);
  await stopAll();
  process.exit(1);
});
