// Serving on several threads (config.workers): each thread listens on the binds with a socket
// of its own, and the process still has one admin API, one /metrics and one readiness; a
// reload is applied by every thread before it is reported, a thread that dies is restarted
// while the others serve, and a drain stops them all. Worker threads run the built proxy
// (dist/): `pnpm build` runs before the tests.
import { once } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { request as httpsRequest } from 'node:https';
import { connect, createServer, type AddressInfo, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { issueTestCertificate } from '@tollgate/testkit';
import { describe, expect, it } from 'vitest';
import { closedAfterEach, echoed, openTrace, send, simpleConfig, startGateway, startUpstream, type TestGateway, type Upstream } from './helpers.js';

const cleanups = closedAfterEach();

function route(up: Upstream, name: string, path: string) {
  return { name, matches: [{ path: { value: path } }], filters: [{ type: 'RequestHeaderModifier', requestHeaderModifier: { set: [{ name: 'x-route', value: name }] } }], backends: [{ host: up.host }] };
}

async function setup(workers = 2) {
  const up = await startUpstream();
  const gw = await startGateway((port) => simpleConfig(port, [route(up, 'a', '/a')]), { workers });
  cleanups.push(() => up.close(), () => gw.close());
  return { up, gw };
}

interface WorkerRow {
  readonly worker: number;
  readonly state: string;
  readonly restarts: number;
  readonly figures: { readonly requestsStarted: number; readonly configVersion: string | null; readonly logDirective: string; readonly heapUsedBytes: number; readonly cpuUserUs: number } | null;
}

async function workers(gw: TestGateway): Promise<WorkerRow[]> {
  const r = await fetch(`${gw.adminUrl}/workers`);
  expect(r.status).toBe(200);
  return ((await r.json()) as { workers: WorkerRow[] }).workers;
}

/** `n` requests, each on a connection of its own (the kernel picks a thread per connection). */
async function fresh(url: string, n: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) out.push((await send(url, { headers: { connection: 'close' } })).status);
  return out;
}

async function metrics(gw: TestGateway): Promise<string> {
  return (await fetch(`http://${gw.gateway.ops.metrics.address}/metrics`)).text();
}

describe('worker threads', () => {
  it('serves on every thread, with one /metrics adding up what each thread served', async () => {
    const { gw } = await setup();
    // requestsStarted counts since the thread started: the main thread is this test file's.
    const before = (await workers(gw)).map((r) => r.figures!.requestsStarted);
    expect(await fresh(`${gw.url}/a`, 40)).toEqual(Array(40).fill(200));
    const rows = await workers(gw);
    expect(rows.map((r) => [r.worker, r.state])).toEqual([[0, 'serving'], [1, 'serving']]);
    const served = rows.map((r, i) => r.figures!.requestsStarted - before[i]!);
    expect(served.reduce((a, b) => a + b, 0)).toBe(40);
    // Both threads took connections: the kernel spreads them across the two sockets.
    expect(served.every((n) => n > 0)).toBe(true);
    const text = await metrics(gw);
    expect(text).toContain('tollgate_requests_total{route="main/a",status="200"} 40');
    expect(text).toMatch(/^tollgate_workers 2$/m);
    // Process-wide series come once, from the main thread.
    expect(text.match(/^tollgate_process_process_resident_memory_bytes /gm)).toHaveLength(1);
    expect((await fetch(`http://${gw.gateway.ops.readiness.address}/healthz/ready`)).status).toBe(200);
    const dump = (await (await fetch(`${gw.adminUrl}/config_dump`)).json()) as { settings: { workers: number } };
    expect(dump.settings.workers).toBe(2);
  });

  it('reports a reload applied only once every thread serves it', async () => {
    const { up, gw } = await setup();
    expect(await gw.rewrite(simpleConfig(gw.port, [route(up, 'a', '/a'), route(up, 'b', '/b')]))).toBe('reloaded');
    // Whichever thread takes each connection already has route b.
    const answers = await Promise.all(Array.from({ length: 30 }, () => send(`${gw.url}/b`, { headers: { connection: 'close' } })));
    expect(answers.map((r) => echoed(r).headers['x-route'])).toEqual(Array(30).fill('b'));
    const versions = (await workers(gw)).map((r) => r.figures!.configVersion);
    expect(versions).toEqual([gw.gateway.snapshot.version, gw.gateway.snapshot.version]);
  });

  it('restarts a thread that dies while the others keep serving, and counts it', async () => {
    const { gw } = await setup();
    const pool = gw.gateway.workers!;
    const restarted = once(pool, 'restarted');
    await pool.kill(1);
    // The main thread alone serves meanwhile: no connection is refused or reset.
    expect(await fresh(`${gw.url}/a`, 20)).toEqual(Array(20).fill(200));
    expect(await restarted).toEqual([1]);
    const rows = await workers(gw);
    expect(rows[1]).toMatchObject({ worker: 1, state: 'serving', restarts: 1 });
    expect(rows[1]!.figures!.configVersion).toBe(gw.gateway.snapshot.version);
    expect(await metrics(gw)).toMatch(/^tollgate_worker_restarts_total 1$/m);
    expect(await fresh(`${gw.url}/a`, 20)).toEqual(Array(20).fill(200));
    expect(gw.logs.messages().some((m) => m.startsWith('worker 1 exited'))).toBe(true);
  });

  it('traces the next matching request on whichever thread takes it, once', async () => {
    const { gw } = await setup();
    const traces = await Promise.all(Array.from({ length: 16 }, (_, n) => openTrace(gw.adminUrl, `?match=${encodeURIComponent(`request.headers["x-n"] == "${n}"`)}`)));
    await Promise.all(traces.map((t) => t.armed));
    const before = (await workers(gw)).map((r) => r.figures!.requestsStarted);
    for (let n = 0; n < 16; n++) expect((await send(`${gw.url}/a`, { headers: { 'x-n': String(n) } })).status).toBe(200);
    const served = (await workers(gw)).map((r, i) => r.figures!.requestsStarted - before[i]!);
    // Some of the sixteen went to the worker thread: their sessions were streamed from there.
    expect(served[1]).toBeGreaterThan(0);
    const events = await Promise.all(traces.map((t) => t.events));
    events.forEach((e, n) => {
      const text = JSON.stringify(e);
      expect(text).toContain(`"x-n":"${n}"`);
      expect(e.filter((ev) => ev.message.type === 'requestStarted')).toHaveLength(1);
    });
    // A session without a filter takes the next request, on one thread only.
    const next = await openTrace(gw.adminUrl);
    await next.armed;
    expect((await send(`${gw.url}/a`, { headers: { 'x-n': 'next' } })).status).toBe(200);
    const nextEvents = await next.events;
    expect(nextEvents.filter((ev) => ev.message.type === 'requestStarted')).toHaveLength(1);
    expect(JSON.stringify(nextEvents)).toContain('"x-n":"next"');
  });

  it('profiles a worker thread: its CPU and its heap, each by number', async () => {
    const { gw } = await setup();
    const cpu = await fetch(`${gw.adminUrl}/debug/workers/1/cpuprofile?seconds=1`);
    expect(cpu.status).toBe(200);
    const profile = (await cpu.json()) as { nodes: unknown[]; startTime: number; endTime: number };
    expect(profile.nodes.length).toBeGreaterThan(0);
    expect(profile.endTime - profile.startTime).toBeGreaterThanOrEqual(1_000_000);
    const heap = await fetch(`${gw.adminUrl}/debug/workers/1/heapsnapshot`);
    expect(heap.status).toBe(200);
    expect(((await heap.json()) as { snapshot: { node_count: number } }).snapshot.node_count).toBeGreaterThan(0);
    const main = await fetch(`${gw.adminUrl}/debug/workers/0/cpuprofile`);
    expect([main.status, await main.text()]).toEqual([400, 'worker 0 is the main thread: its profiles are GET /debug/pprof/profile and GET /debug/pprof/heap\n']);
    const none = await fetch(`${gw.adminUrl}/debug/workers/7/heapsnapshot`);
    expect([none.status, await none.text()]).toEqual([404, 'worker thread 7 is not serving (GET /workers lists the threads and their state)\n']);
    expect((await fetch(`${gw.adminUrl}/debug/workers/1/cpuprofile?seconds=0`)).status).toBe(400);
    const rows = await workers(gw);
    expect(rows.every((r) => r.figures!.heapUsedBytes > 0 && r.figures!.cpuUserUs > 0)).toBe(true);
  });

  it('passes a provider that asked to be left alone over on every thread (cool-downs are the process\'s)', async () => {
    let primaryCalls = 0;
    const primary = await startUpstream((_req, res) => {
      primaryCalls++;
      res.writeHead(429, { 'content-type': 'application/json', 'retry-after': '30' });
      res.end('{"error":"rate limited"}');
    });
    const fallback = await startUpstream((_req, res) => res.end('fallback'));
    cleanups.push(() => primary.close(), () => fallback.close());
    const gw = await startGateway((port) => simpleConfig(port, [{ name: 'chat', backends: [{ host: primary.host }, { host: fallback.host, priority: 1 }] }]), { workers: 2 });
    cleanups.push(() => gw.close());
    expect((await send(`${gw.url}/v1`)).body).toBe('fallback');
    // Whichever thread saw the 429, the main thread's /backends shows the cool-down.
    const coolDown = async () => ((await (await fetch(`${gw.adminUrl}/backends`)).json()) as { backends: { name: string; coolDown: { reason: string } | null }[] }).backends.find((b) => b.name === primary.host)?.coolDown?.reason;
    await expect.poll(coolDown).toBe('429 with Retry-After: 30');
    const before = (await workers(gw)).map((r) => r.figures!.requestsStarted);
    const bodies = await Promise.all(Array.from({ length: 20 }, () => send(`${gw.url}/v1`).then((r) => r.body)));
    expect(bodies).toEqual(Array(20).fill('fallback'));
    expect(primaryCalls).toBe(1);
    // Both threads served some of the twenty: the worker knew of the cool-down too.
    const served = (await workers(gw)).map((r, i) => r.figures!.requestsStarted - before[i]!);
    expect(served.every((n) => n > 0)).toBe(true);
  });

  it('every thread has the config\'s credentials (a snapshot\'s Secrets survive the hand-over)', async () => {
    const up = await startUpstream();
    cleanups.push(() => up.close());
    const withKey = { ...route(up, 'a', '/a'), filters: [{ type: 'RequestHeaderModifier', requestHeaderModifier: { set: [{ name: 'authorization', value: 'Bearer sk-provider' }] } }] };
    const gw = await startGateway((port) => simpleConfig(port, [withKey]), { workers: 2 });
    cleanups.push(() => gw.close());
    const before = (await workers(gw)).map((r) => r.figures!.requestsStarted);
    const answers = await Promise.all(Array.from({ length: 20 }, () => send(`${gw.url}/a`)));
    expect(answers.map((r) => echoed(r).headers.authorization)).toEqual(Array(20).fill('Bearer sk-provider'));
    const served = (await workers(gw)).map((r, i) => r.figures!.requestsStarted - before[i]!);
    expect(served.every((n) => n > 0)).toBe(true);
  });

  it('serves an HTTPS listener on every thread, none of them restarted', async () => {
    const up = await startUpstream();
    cleanups.push(() => up.close());
    const cert = issueTestCertificate({ commonName: 'a.example.com', names: ['a.example.com'] });
    const dir = await mkdtemp(join(tmpdir(), 'tollgate-workers-'));
    cleanups.push(() => rm(dir, { recursive: true, force: true }));
    await writeFile(join(dir, 'a.crt'), cert.cert);
    await writeFile(join(dir, 'a.key'), cert.key);
    const tls = { certificates: [{ certFile: join(dir, 'a.crt'), keyFile: join(dir, 'a.key') }] };
    const gw = await startGateway((port) => ({ binds: [{ port, listeners: [{ name: 'main', protocol: 'HTTPS', tls, routes: [route(up, 'a', '/a')] }] }] }), { workers: 2 });
    cleanups.push(() => gw.close());
    const before = (await workers(gw)).map((r) => r.figures!.requestsStarted);
    const statuses = await Promise.all(
      Array.from({ length: 20 }, () => new Promise<number>((resolve, reject) => {
        const req = httpsRequest({ host: '127.0.0.1', port: gw.port, path: '/a', servername: 'a.example.com', ca: cert.cert, agent: false }, (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        });
        req.on('error', reject);
        req.end();
      })),
    );
    expect(statuses).toEqual(Array(20).fill(200));
    const rows = await workers(gw);
    expect(rows.map((r) => [r.state, r.restarts])).toEqual([['serving', 0], ['serving', 0]]);
    expect(rows.map((r, i) => r.figures!.requestsStarted - before[i]!).every((n) => n > 0)).toBe(true);
  });

  it('sets a new log level on every thread', async () => {
    const { gw } = await setup();
    expect((await fetch(`${gw.adminUrl}/logging?level=warn,upstream=debug`, { method: 'POST' })).status).toBe(200);
    // The change reaches each worker as a message; the next answer of each comes after it.
    expect((await workers(gw)).map((r) => r.figures!.logDirective)).toEqual(['warn,upstream=debug', 'warn,upstream=debug']);
  });

  it("writes every thread's log lines where the process logs, each marked with its thread", async () => {
    const { gw } = await setup();
    // Each thread logs its binds as it starts serving them; the worker's come before its apply is answered.
    const listening = gw.logs.lines.filter((l) => /^bind .* listening/.test(String(l.msg)));
    expect(listening.map((l) => l.worker ?? 0).sort()).toEqual([0, 1]);
  });

  it('refuses a port another process listens on, even one that allows SO_REUSEPORT', async () => {
    const { up, gw } = await setup();
    // A second gateway with threads on the first one's port: refused, not sharing its traffic.
    await expect(startGateway(simpleConfig(gw.port, [route(up, 'a', '/a')]), { workers: 2 })).rejects.toMatchObject({ code: 'TG_BIND_IN_USE' });
    const other = createServer();
    await new Promise<void>((resolve) => other.listen({ host: '127.0.0.1', port: 0, reusePort: true }, resolve));
    cleanups.push(() => new Promise((resolve) => other.close(() => resolve())));
    const taken = (other.address() as AddressInfo).port;
    await expect(startGateway({ binds: [{ address: '127.0.0.1', port: taken, listeners: [{ name: 'main', protocol: 'HTTP', routes: [route(up, 'a', '/a')] }] }] }, { workers: 2 })).rejects.toMatchObject({ code: 'TG_BIND_IN_USE' });
    // The first gateway still serves on all its threads.
    expect(await fresh(`${gw.url}/a`, 6)).toEqual(Array(6).fill(200));
  });

  it('holds maxConnectionsPerBind for the process, not per thread', async () => {
    const up = await startUpstream();
    cleanups.push(() => up.close());
    const gw = await startGateway((port) => ({ config: { maxConnectionsPerBind: 4 }, ...simpleConfig(port, [route(up, 'a', '/a')]) }), { workers: 2 });
    cleanups.push(() => gw.close());
    const outcomes: ('answered' | 'closed')[] = [];
    const sockets: Socket[] = [];
    cleanups.push(async () => sockets.forEach((s) => s.destroy()));
    // One at a time, each kept open: whichever thread accepts it counts it against the one cap.
    for (let i = 0; i < 10; i++) {
      const socket = connect(gw.port, '127.0.0.1');
      sockets.push(socket);
      outcomes.push(
        await new Promise<'answered' | 'closed'>((resolve) => {
          socket.once('data', () => resolve('answered'));
          socket.once('close', () => resolve('closed'));
          socket.once('error', () => undefined);
          socket.write(`GET /a HTTP/1.1\r\nhost: gw\r\n\r\n`);
        }),
      );
    }
    expect(outcomes.filter((o) => o === 'answered')).toHaveLength(4);
    expect(await metrics(gw)).toMatch(/^tollgate_client_refusals_total\{reason="connection_limit"\} 6$/m);
  });

  it('stops every thread on close, and the port with them', async () => {
    const { gw } = await setup(3);
    expect(await fresh(`${gw.url}/a`, 6)).toEqual(Array(6).fill(200));
    await gw.gateway.close();
    expect(gw.gateway.workers!.views.map((v) => v.state)).toEqual(['stopped', 'stopped']);
    await expect(send(`${gw.url}/a`)).rejects.toThrow(/ECONNREFUSED/);
  });
});
