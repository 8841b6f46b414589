#!/usr/bin/env node
// What using every core of a pod with node:cluster would cost on Node 20, measured on the parts
// that do not depend on Tollgate's code:
// - the primary's hand-off of each accepted connection to a worker (Node 20 has no reusePort,
//   so on Linux the primary accepts and passes the handle over IPC, round-robin): CPU of the
//   primary per connection, under connection-per-request load (wrk, Connection: close);
// - one IPC round trip between primary and worker, the price of counting a local rate limit
//   in the primary (SharedArrayBuffer does not cross processes);
// - the RSS of a bare primary.
//
//   node bench/cluster-cost.mjs [--seconds 5] [--round-trips 20000]
//
// The worker is a plain node:http server answering 200 "ok": what is measured is the cluster
// machinery, not the proxy. Every process started is stopped at the end.
import cluster from 'node:cluster';
import { createServer } from 'node:http';
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { procCpuUs, rssKiB } from './peers/proc-stats.mjs';
import { freePort, killAllNow, startProcess, stopAll } from './lib/procs.mjs';

function serve(port, onListening) {
  createServer((_req, res) => res.end('ok')).listen(port, '127.0.0.1', onListening);
}

if (cluster.isWorker) {
  serve(Number(process.env.PORT), () => process.send({ listening: true }));
  process.on('message', (m) => {
    if (m && typeof m.ping === 'number') process.send({ pong: m.ping });
  });
} else if (process.argv[2] === '--plain-server') {
  serve(Number(process.argv[3]), () => console.log('listening'));
} else {
  const { values } = parseArgs({ options: { seconds: { type: 'string', default: '5' }, 'round-trips': { type: 'string', default: '20000' } } });
  const seconds = Number(values.seconds);
  const trips = Number(values['round-trips']);
  if (!(seconds >= 1 && Number.isInteger(trips) && trips >= 100)) throw new Error('--seconds must be >= 1 and --round-trips an integer >= 100');

  async function wrk(url, close) {
    const args = ['-t1', '-c8', `-d${seconds}s`, '--latency', ...(close ? ['-H', 'Connection: close'] : []), url];
    const p = startProcess('wrk', 'wrk', args);
    p.keepOutput = true;
    await p.exited;
    const m = /Requests\/sec:\s+([\d.]+)/.exec(p.stdout);
    const total = /(\d+) requests in/.exec(p.stdout);
    return { rps: m ? Number(m[1]) : 0, requests: total ? Number(total[1]) : 0 };
  }

  async function measure(label, url, pids, close) {
    const before = pids.map((pid) => procCpuUs(pid));
    const r = await wrk(url, close);
    const used = pids.map((pid, i) => procCpuUs(pid) - before[i]);
    return { label, close, ...r, cpuUsPerReq: used.map((us) => us / r.requests) };
  }

  async function main() {
    console.log(`cluster cost on node ${process.version}; load average ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);
    const rows = [];
    // A plain server in its own process: the reference.
    const plainPort = await freePort();
    const plain = startProcess('plain', process.execPath, [new URL(import.meta.url).pathname, '--plain-server', String(plainPort)]);
    await plain.waitForLine((l) => l === 'listening', 15_000);
    for (const close of [true, false]) rows.push(await measure('plain server', `http://127.0.0.1:${plainPort}/`, [plain.pid], close));
    await plain.stop();

    // The same server as the one worker of a cluster (this process is the primary).
    const port = await freePort();
    cluster.schedulingPolicy = cluster.SCHED_RR;
    const worker = cluster.fork({ PORT: String(port) });
    await new Promise((resolve) => worker.on('message', (m) => m?.listening && resolve()));
    const self = process.pid;
    for (const close of [true, false]) rows.push(await measure('cluster worker', `http://127.0.0.1:${port}/`, [worker.process.pid, self], close));

    // IPC round trips, one after another (as a per-request limiter call would be).
    let n = 0;
    const t0 = process.hrtime.bigint();
    const cpu0 = process.cpuUsage();
    await new Promise((resolve) => {
      worker.on('message', (m) => {
        if (typeof m?.pong !== 'number') return;
        if (++n === trips) resolve();
        else worker.send({ ping: n });
      });
      worker.send({ ping: 0 });
    });
    const wallUs = Number(process.hrtime.bigint() - t0) / 1000;
    const cpu = process.cpuUsage(cpu0);
    const primaryRss = rssKiB(self).rss / 1024;
    worker.kill();

    for (const r of rows) {
      const who = r.cpuUsPerReq.length === 2 ? `worker ${r.cpuUsPerReq[0].toFixed(1)} µs + primary ${r.cpuUsPerReq[1].toFixed(1)} µs` : `${r.cpuUsPerReq[0].toFixed(1)} µs`;
      console.log(`${r.label.padEnd(15)} ${r.close ? 'connection per request' : 'keep-alive            '}: ${Math.round(r.rps)} req/s, CPU per request ${who}`);
    }
    console.log(`IPC round trip primary -> worker -> primary: ${(wallUs / trips).toFixed(1)} µs wall, ${((cpu.user + cpu.system) / trips).toFixed(1)} µs CPU in the primary (${trips} sequential)`);
    console.log(`primary RSS (this process, cluster and http loaded): ${primaryRss.toFixed(1)} MiB`);
  }

  process.on('exit', () => killAllNow());
  main()
    .then(() => stopAll())
    .catch(async (err) => {
      console.error(`cluster cost failed: ${err.stack ?? err.message}`);
      await stopAll();
      process.exit(1);
    });
}
