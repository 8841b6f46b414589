// A proxy in cluster mode against the controller's real snapshot stream server on loopback:
// not ready before its first snapshot, then serving it; a new route goes from 404 to 200 with
// nothing in between; a snapshot that fails validation or cannot be applied is NACKed and the
// last good keeps serving; with the controller gone the proxy keeps serving and, once a
// controller is back, resyncs without restarting.
import { EventEmitter, once } from 'node:events';
import { createServer } from 'node:net';
import { standaloneToSnapshot, validateStandaloneConfig, withVersion, type ProxySnapshot, type RouteIR, type ServiceBackendIR } from '@tollgate/api';
import { SnapshotStore, SnapshotStreamServer, StreamMetrics } from '@tollgate/controller';
import pino from 'pino';
import { Registry } from 'prom-client';
import { until } from '@tollgate/testkit';
import { afterEach, describe, expect, it } from 'vitest';
import { startClusterProxy, type ClusterProxy } from '../src/process/cluster.js';
import { echoed, LogSink, onFreePort, send, simpleConfig, startUpstream, testWorkers, type Upstream } from './helpers.js';
import { streamTls, type StreamTls } from './support/stream-tls.js';

const GATEWAY = 'edge/public';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

function snapshotOf(config: Record<string, unknown>): ProxySnapshot {
  return standaloneToSnapshot(validateStandaloneConfig(config, 'pushed'), { kind: 'controller', gateway: GATEWAY });
}

/** Emits `change` whenever a controller's proxies change: a connect, an ACK, a NACK, a disconnect. */
const changes = new EventEmitter();

// The stream as deployed: TLS from the controller's CA, the proxy's token checked.
async function controller(store: SnapshotStore, tls: StreamTls, port = 0, registry = new Registry()): Promise<SnapshotStreamServer> {
  const changed = () => changes.emit('change');
  const server = new SnapshotStreamServer({
    addr: { host: '127.0.0.1', port },
    security: tls.server,
    store,
    metrics: new StreamMetrics(registry),
    log: pino({ level: 'silent' }),
    onProxiesChange: changed,
    onNack: changed,
  });
  await server.start();
  return server;
}

/**
 * Resolves once `holds` is true: checked now and at each change of a controller's proxies,
 * so a test waits on what the controller saw rather than on a polling deadline. The timeout
 * only bounds a broken test (a reconnect on a loaded machine can take seconds).
 */
async function whenProxies(holds: () => boolean, what: string, timeoutMs = 30_000): Promise<void> {
  if (holds()) return;
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      changes.off('change', check);
      reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}`));
    }, timeoutMs);
    function check(): void {
      if (!holds()) return;
      clearTimeout(timer);
      changes.off('change', check);
      resolve();
    }
    changes.on('change', check);
  });
}

const acked = (server: SnapshotStreamServer) => server.proxies().get(GATEWAY)?.[0]?.ackedVersion ?? null;
const lastNack = (server: SnapshotStreamServer) => server.proxies().get(GATEWAY)?.[0]?.lastNack?.error ?? null;

interface Setup {
  store: SnapshotStore;
  server: SnapshotStreamServer;
  proxy: ClusterProxy;
  up: Upstream;
  port: number;
  readiness: string;
  admin: string;
  tls: StreamTls;
  /** The controller's metrics. */
  registry: Registry;
}

/** `workers`: the proxy's threads (default: TOLLGATE_TEST_PROXY_WORKERS, else one). */
async function setup({ workers = testWorkers() }: { workers?: number } = {}): Promise<Setup> {
  const up = await startUpstream();
  cleanups.push(() => up.close());
  const store = new SnapshotStore();
  const tls = streamTls(GATEWAY);
  cleanups.push(() => tls.close());
  const registry = new Registry();
  const holder = { server: await controller(store, tls, 0, registry) };
  cleanups.push(() => holder.server.stop());
  const proxy = await startClusterProxy({
    controller: `127.0.0.1:${holder.server.port}`,
    security: tls.proxy,
    gateway: GATEWAY,
    pod: 'proxy-0',
    podNamespace: 'edge',
    adminAddr: '127.0.0.1:0',
    metricsAddr: '127.0.0.1:0',
    readinessAddr: '127.0.0.1:0',
    initialBackoffMs: 20,
    maxBackoffMs: 200,
    logDestination: new LogSink(),
    workers,
  });
  cleanups.push(() => proxy.close());
  return { store, server: holder.server, proxy, up, port: 0, readiness: `http://${proxy.ops.readiness.address}/healthz/ready`, admin: `http://${proxy.admin.address}`, tls, registry };
}

/**
 * Offers the first snapshot, on a free port, and waits for its ACK; `s.port` is the port it
 * serves. One NACKed because another process took the port in the meantime is offered again
 * on another port.
 */
async function offerFirst(s: Setup, configOf: (port: number) => Record<string, unknown>): Promise<ProxySnapshot> {
  return onFreePort(async (port) => {
    const snapshot = snapshotOf(configOf(port));
    s.store.offer(new Map([[GATEWAY, snapshot]]));
    const nacked = () => s.server.proxies().get(GATEWAY)?.[0]?.lastNack?.version === snapshot.version;
    await whenProxies(() => acked(s.server) === snapshot.version || nacked(), `an ACK or NACK of ${snapshot.version}`);
    if (acked(s.server) !== snapshot.version) throw new Error(lastNack(s.server) ?? 'NACKed');
    s.port = port;
    return snapshot;
  });
}

async function sourceTask(admin: string): Promise<Record<string, unknown>> {
  const body = JSON.parse((await send(`${admin}/debug/tasks`)).body) as { background: ({ name: string } & Record<string, unknown>)[] };
  return body.background.find((t) => t.name === 'controller stream')!;
}

describe('cluster mode', () => {
  it('is not ready before its first snapshot, then serves it; a new route goes from 404 to 200 with nothing in between', async () => {
    const s = await setup();
    await whenProxies(() => s.server.proxies().get(GATEWAY)?.length === 1, 'the proxy to connect');
    const before = await send(s.readiness);
    expect([before.status, before.body]).toEqual([503, 'no config loaded\n']);
    expect(await sourceTask(s.admin)).toMatchObject({ kind: 'controller', stream: 'connected', gateway: GATEWAY, version: null, applied: 0 });
    const early = await send(`${s.admin}/config_dump`);
    expect(early.status).toBe(503);
    expect(JSON.parse(early.body)).toMatchObject({ error: 'no config loaded yet', delivery: { kind: 'controller', stream: 'connected', version: null } });

    const routeA = { name: 'a', matches: [{ path: { type: 'PathPrefix', value: '/a' } }], backends: [{ host: s.up.host }] };
    await offerFirst(s, (port) => simpleConfig(port, [routeA]));
    expect((await send(s.readiness)).status).toBe(200);
    expect(echoed(await send(`http://127.0.0.1:${s.port}/a/1`)).url).toBe('/a/1');
    expect((await send(`http://127.0.0.1:${s.port}/b/1`)).status).toBe(404);

    // Requests to /b keep going while the route is added: 404s, then only 200s.
    const routeB = { name: 'b', matches: [{ path: { type: 'PathPrefix', value: '/b' } }], backends: [{ host: s.up.host }] };
    const v2 = snapshotOf(simpleConfig(s.port, [routeA, routeB]));
    s.store.offer(new Map([[GATEWAY, v2]]));
    const statuses: number[] = [];
    for (let i = 0; i < 5000 && statuses.filter((x) => x === 200).length < 20; i++) statuses.push((await send(`http://127.0.0.1:${s.port}/b/1`)).status);
    expect(statuses.join(',')).toMatch(/^(404,)*(200,){19}200$/);
    expect(acked(s.server)).toBe(v2.version);
    expect(await sourceTask(s.admin)).toMatchObject({ stream: 'connected', version: v2.version, applied: 2, refused: 0, lastNack: null });
  });

  it('NACKs a snapshot that does not validate or cannot be applied; the last good keeps serving', async () => {
    const s = await setup();
    const good = await offerFirst(s, (port) => simpleConfig(port, [{ name: 'a', backends: [{ host: s.up.host }] }]));

    // Altered in transit: the version no longer matches the content.
    const altered = { ...snapshotOf(simpleConfig(s.port, [{ name: 'changed', backends: [{ host: s.up.host }] }])), version: 'ffffffffffff' };
    s.store.offer(new Map([[GATEWAY, altered]]));
    await whenProxies(() => lastNack(s.server) !== null, 'the NACK of the altered snapshot');
    expect(lastNack(s.server)).toMatch(/^snapshot ffffffffffff is invalid:[\s\S]*version: got "ffffffffffff"; the content hashes to/);
    expect(echoed(await send(`http://127.0.0.1:${s.port}/x`)).url).toBe('/x');

    // Valid, but its second port is taken: the runtime refuses it.
    const taken = createServer().listen(0, '127.0.0.1');
    await once(taken, 'listening');
    cleanups.push(() => new Promise((r) => taken.close(() => r())));
    const takenPort = (taken.address() as { port: number }).port;
    const refused = snapshotOf({ binds: [...(simpleConfig(s.port, [{ name: 'a', backends: [{ host: s.up.host }] }]).binds as unknown[]), ...(simpleConfig(takenPort, [], { name: 'other' }).binds as unknown[])] });
    s.store.offer(new Map([[GATEWAY, refused]]));
    await whenProxies(() => s.server.proxies().get(GATEWAY)?.[0]?.lastNack?.version === refused.version, 'the NACK of the snapshot with a taken port');
    expect(lastNack(s.server)).toMatch(new RegExp(`^bind 0\\.0\\.0\\.0:${takenPort} \\(listener other\\) is already in use`));
    expect(acked(s.server)).toBe(good.version);
    expect(echoed(await send(`http://127.0.0.1:${s.port}/x`)).url).toBe('/x');
    expect(await sourceTask(s.admin)).toMatchObject({ version: good.version, applied: 1, refused: 2, lastNack: { version: refused.version } });
    expect(s.proxy.snapshot.version).toBe(good.version);
    const dump = JSON.parse((await send(`${s.admin}/config_dump`)).body) as Record<string, unknown>;
    expect(dump).toMatchObject({
      version: good.version,
      delivery: { kind: 'controller', controller: `127.0.0.1:${s.server.port}`, gateway: GATEWAY, pod: 'proxy-0', stream: 'connected', version: good.version, lastNack: { version: refused.version } },
    });
    expect((dump.delivery as { lastNack: { error: string } }).lastNack.error).toMatch(/already in use/);
  });

  it('takes a change as a delta, and after a refused apply the next delta is relative to the version still serving', async () => {
    const s = await setup();
    const good = await offerFirst(s, (port) => simpleConfig(port, [{ name: 'a', backends: [{ host: s.up.host }] }, { name: 'b', matches: [{ path: { type: 'PathPrefix', value: '/b' } }], backends: [{ host: s.up.host }] }]));
    const served = s.proxy.snapshot.binds[0]!.listeners[0]!.routes;
    const encoded = async (form: string) => Number((await s.registry.metrics()).match(new RegExp(`^tollgate_controller_stream_encodings_total\\{form="${form}"\\} (\\d+)$`, 'm'))?.[1] ?? 0);
    const listener = good.binds[0]!.listeners[0]!;
    const withRoutes = (base: ProxySnapshot, routes: RouteIR[], extraBinds: ProxySnapshot['binds'] = []) =>
      withVersion({ source: base.source, binds: [{ ...base.binds[0]!, listeners: [{ ...listener, routes }] }, ...extraBinds] });
    const [a, b] = listener.routes as [RouteIR, RouteIR];
    const c = { ...b, name: 'c', matches: [{ ...b.matches[0]!, path: { type: 'PathPrefix' as const, value: '/c' } }] };

    // Route b replaced by c: one text crosses, route a is the object the proxy serves.
    const next = withRoutes(good, [a, c]);
    s.store.offer(new Map([[GATEWAY, next]]));
    await whenProxies(() => acked(s.server) === next.version, 'the ACK of the delta');
    expect(await encoded('delta')).toBe(1);
    expect(s.proxy.snapshot.binds[0]!.listeners[0]!.routes[0]).toBe(served[0]);
    expect(echoed(await send(`http://127.0.0.1:${s.port}/c/1`)).url).toBe('/c/1');
    expect((await send(`http://127.0.0.1:${s.port}/b/1`)).status).toBe(200); // route a (prefix /) takes it now

    // A delta the runtime refuses (its second port is taken): NACKed, the proxy keeps `next`.
    const taken = createServer().listen(0, '127.0.0.1');
    await once(taken, 'listening');
    cleanups.push(() => new Promise((r) => taken.close(() => r())));
    const takenPort = (taken.address() as { port: number }).port;
    const otherBind = snapshotOf(simpleConfig(takenPort, [], { name: 'other' })).binds;
    const refused = withRoutes(good, [a, b], otherBind);
    s.store.offer(new Map([[GATEWAY, refused]]));
    await whenProxies(() => s.server.proxies().get(GATEWAY)?.[0]?.lastNack?.version === refused.version, 'the NACK of the delta with a taken port');
    expect(acked(s.server)).toBe(next.version);

    // The next version goes in full (after a refusal) and is served; the one after is a delta against it.
    const third = withRoutes(good, [a, b]);
    s.store.offer(new Map([[GATEWAY, third]]));
    await whenProxies(() => acked(s.server) === third.version, 'the ACK after the refusal');
    const fourth = withRoutes(good, [a, b, c]);
    s.store.offer(new Map([[GATEWAY, fourth]]));
    await whenProxies(() => acked(s.server) === fourth.version, 'the ACK of the delta after it');
    expect(await encoded('delta')).toBe(3);
    expect(echoed(await send(`http://127.0.0.1:${s.port}/c/2`)).url).toBe('/c/2');
    expect(await sourceTask(s.admin)).toMatchObject({ version: fourth.version, refused: 1 });
  });

  it('hands a worker thread only the routes a delta changed: it keeps what it compiled for the others', async () => {
    const s = await setup({ workers: 2 });
    const routes = Array.from({ length: 30 }, (_, i) => ({ name: `r${i}`, matches: [{ path: { type: 'PathPrefix', value: `/r${i}` } }], backends: [{ host: s.up.host }] }));
    const first = await offerFirst(s, (port) => simpleConfig(port, routes));
    const listener = first.binds[0]!.listeners[0]!;
    const edited = listener.routes.map((r, i) => (i === 7 ? { ...r, matches: [{ ...r.matches[0]!, path: { type: 'PathPrefix' as const, value: '/seven' } }] } : r));
    const next = withVersion({ source: first.source, binds: [{ ...first.binds[0]!, listeners: [{ ...listener, routes: edited }] }] });
    s.store.offer(new Map([[GATEWAY, next]]));
    await whenProxies(() => acked(s.server) === next.version, 'the ACK of the delta');
    type Row = { worker: number; figures: { configVersion: string; routes: number; routesCompiled: number; requestsStarted: number } };
    const rows = async () => (JSON.parse((await send(`${s.admin}/workers`)).body) as { workers: Row[] }).workers;
    // Each thread compiled the one edited route; the main thread's snapshot and the worker's
    // copy of it both kept the other 29 route objects, and what was compiled for them.
    expect((await rows()).map((r) => [r.worker, r.figures.configVersion, r.figures.routes, r.figures.routesCompiled])).toEqual([
      [0, next.version, 30, 1],
      [1, next.version, 30, 1],
    ]);
    // And both threads serve the edit (each request on a connection of its own: the kernel picks the thread).
    const before = (await rows()).map((r) => r.figures.requestsStarted);
    const answers: number[] = [];
    for (let i = 0; i < 30; i++) answers.push((await send(`http://127.0.0.1:${s.port}/seven`, { headers: { connection: 'close' } })).status);
    expect(answers).toEqual(Array(30).fill(200));
    expect((await rows()).map((r, i) => r.figures.requestsStarted - before[i]!).every((n) => n > 0)).toBe(true);
  });

  it('takes an endpoint change as the Service\'s entry alone: no route crosses or compiles, every thread sends to the new endpoint', async () => {
    const s = await setup({ workers: 2 });
    const reply = (name: string) => (_req: unknown, res: { end: (body: string) => void }) => res.end(name);
    const [one, two] = [await startUpstream(reply('one')), await startUpstream(reply('two'))];
    cleanups.push(() => one.close(), () => two.close());
    const routes = Array.from({ length: 30 }, (_, i) => ({ name: `r${i}`, matches: [{ path: { type: 'PathPrefix', value: `/r${i}` } }], backends: [{ host: s.up.host }] }));
    const first = await offerFirst(s, (port) => simpleConfig(port, routes));
    const svc: ServiceBackendIR = { kind: 'service', name: 'llm.ai.svc.cluster.local:80', namespace: 'ai', service: 'llm', port: 80, weight: 1 };
    const listener = first.binds[0]!.listeners[0]!;
    const toService = listener.routes.map((r) => ({ ...r, backends: [svc] }));
    const at = (u: Upstream) =>
      withVersion({ source: first.source, binds: [{ ...first.binds[0]!, listeners: [{ ...listener, routes: toService }] }], endpoints: [{ name: svc.name, endpoints: [{ address: '127.0.0.1', port: u.port }] }] });
    const deltas = async () => Number((await s.registry.metrics()).match(/^tollgate_controller_stream_encodings_total\{form="delta"\} (\d+)$/m)?.[1] ?? 0);
    const v1 = at(one);
    s.store.offer(new Map([[GATEWAY, v1]]));
    await whenProxies(() => acked(s.server) === v1.version, 'the ACK of the routes to the Service');
    // Each request on a connection of its own: the kernel picks the thread.
    const bodies = async () => {
      const out = new Set<string>();
      for (let i = 0; i < 30; i++) out.add((await send(`http://127.0.0.1:${s.port}/r${i}/x`, { headers: { connection: 'close' } })).body);
      return [...out];
    };
    expect(await bodies()).toEqual(['one']);
    const v2 = at(two);
    s.store.offer(new Map([[GATEWAY, v2]]));
    await whenProxies(() => acked(s.server) === v2.version, 'the ACK of the endpoint change');
    expect(await deltas()).toBe(2);
    type Row = { worker: number; figures: { configVersion: string; routesCompiled: number; requestsStarted: number } };
    const rows = async () => (JSON.parse((await send(`${s.admin}/workers`)).body) as { workers: Row[] }).workers;
    expect((await rows()).map((r) => [r.worker, r.figures.configVersion, r.figures.routesCompiled])).toEqual([
      [0, v2.version, 0],
      [1, v2.version, 0],
    ]);
    const before = (await rows()).map((r) => r.figures.requestsStarted);
    expect(await bodies()).toEqual(['two']);
    expect((await rows()).map((r, i) => r.figures.requestsStarted - before[i]!).every((n) => n > 0)).toBe(true);
  });

  it('keeps serving while the controller is away and resyncs when it is back', async () => {
    const s = await setup();
    await offerFirst(s, (port) => simpleConfig(port, [{ name: 'a', backends: [{ host: s.up.host }] }]));
    const controllerPort = s.server.port;
    await s.server.stop();
    // The proxy's own view of the stream: read from its admin server (no event to await there).
    await until(async () => (await sourceTask(s.admin)).stream !== 'connected', { what: 'the proxy to notice the controller is gone', timeoutMs: 30_000 });
    expect(echoed(await send(`http://127.0.0.1:${s.port}/still`)).url).toBe('/still');
    expect((await send(s.readiness)).status).toBe(200);

    // A new controller on the same address, with a newer snapshot: the proxy reconnects and applies it.
    const store = new SnapshotStore();
    const v2 = snapshotOf(simpleConfig(s.port, [{ name: 'a', matches: [{ path: { type: 'PathPrefix', value: '/only' } }], backends: [{ host: s.up.host }] }]));
    store.offer(new Map([[GATEWAY, v2]]));
    const back = await controller(store, s.tls, controllerPort);
    cleanups.push(() => back.stop());
    await whenProxies(() => acked(back) === v2.version, `the ACK of ${v2.version} by the reconnected proxy`);
    expect((await send(`http://127.0.0.1:${s.port}/still`)).status).toBe(404);
    expect(echoed(await send(`http://127.0.0.1:${s.port}/only`)).url).toBe('/only');
    const state = await sourceTask(s.admin);
    expect(state).toMatchObject({ stream: 'connected', version: v2.version, connects: 2 });
    expect(typeof (state.lastDisconnect as { reason?: unknown } | null)?.reason).toBe('string');
  });

  it('a reconnecting proxy that has the current version is sent nothing', async () => {
    const s = await setup();
    const v1 = await offerFirst(s, (port) => simpleConfig(port, [{ name: 'a', backends: [{ host: s.up.host }] }]));
    const controllerPort = s.server.port;
    await s.server.stop();
    const back = await controller(s.store, s.tls, controllerPort);
    cleanups.push(() => back.stop());
    // It says it serves v1 in its hello; the controller records that and pushes nothing.
    await whenProxies(() => back.proxies().get(GATEWAY)?.[0]?.ackedVersion === v1.version, 'the reconnected proxy to say it serves v1');
    expect(back.proxies().get(GATEWAY)?.[0]).toMatchObject({ ackedVersion: v1.version, pending: null });
    expect(await sourceTask(s.admin)).toMatchObject({ stream: 'connected', applied: 1, connects: 2 });
  });

  it('a route edited 20 times (matches, filters, backend weights) while requests flow answers only 200', async () => {
    const s = await setup();
    const up2 = await startUpstream();
    cleanups.push(() => up2.close());
    const editConfig = (i: number, port: number) =>
      simpleConfig(port, [
        {
          name: 'm',
          matches: [{ path: { type: 'PathPrefix', value: i % 2 ? '/m' : '/' } }],
          filters: [{ type: 'RequestHeaderModifier', requestHeaderModifier: { set: [{ name: 'x-edit', value: String(i) }] } }],
          backends: [
            { host: s.up.host, weight: (i % 3) + 1 },
            { host: up2.host, weight: 1 },
          ],
        },
      ]);
    const edit = (i: number) => snapshotOf(editConfig(i, s.port));
    await offerFirst(s, (port) => editConfig(0, port));
    let editing = true;
    const statuses = new Map<number, number>();
    const traffic = (async () => {
      while (editing) {
        const status = (await send(`http://127.0.0.1:${s.port}/m/x`)).status;
        statuses.set(status, (statuses.get(status) ?? 0) + 1);
      }
    })();
    for (let i = 1; i <= 20; i++) {
      const next = edit(i);
      s.store.offer(new Map([[GATEWAY, next]]));
      await whenProxies(() => acked(s.server) === next.version, `the ACK of edit ${i}`);
      // At least one request after each edit, so every version served traffic.
      await send(`http://127.0.0.1:${s.port}/m/x`).then((r) => statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1));
    }
    editing = false;
    await traffic;
    expect([...statuses.keys()]).toEqual([200]);
    expect(echoed(await send(`http://127.0.0.1:${s.port}/m/x`)).headers['x-edit']).toBe('20');
  });
});
