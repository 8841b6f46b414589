// The snapshot stream's protocol over real gRPC on loopback: a raw client plays the proxy so
// each answer (ACK, NACK, silence) is chosen by the test.
import { Writable } from 'node:stream';
import * as grpc from '@grpc/grpc-js';
import { SnapshotDecoder, type ProxySnapshot } from '@tollgate/api';
import { SNAPSHOT_SERVICE, SNAPSHOT_STREAM_PATH, type ProxyMessage, type SnapshotPush } from '@tollgate/api/snapshot-stream';
import pino from 'pino';
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { AdminServer } from '../src/admin/server.js';
import { createLogs } from '../src/log/components.js';
import { SnapshotStore } from '../src/snapshots/store.js';
import { SnapshotStreamServer, type NackReport } from '../src/snapshots/stream-server.js';
import { StreamMetrics } from '../src/snapshots/stream-metrics.js';
import { GATEWAY, partsOf, routesOf, snapshot, withRoutes } from './stream-snapshots.js';

/** A proxy played by hand: received pushes are queued, answers are sent explicitly. */
class FakeProxy {
  readonly call: grpc.ClientDuplexStream<ProxyMessage, SnapshotPush>;
  readonly #received: SnapshotPush[] = [];
  readonly #waiters: ((p: SnapshotPush) => void)[] = [];
  readonly accepted: Promise<void>;
  readonly closed: Promise<grpc.StatusObject>;

  constructor(client: grpc.Client, hello: { gateway?: string; version?: string; pod?: string; deltas?: boolean }) {
    this.call = client.makeBidiStreamRequest(SNAPSHOT_STREAM_PATH, SNAPSHOT_SERVICE.Stream.requestSerialize, SNAPSHOT_SERVICE.Stream.responseDeserialize);
    this.accepted = new Promise((resolve) => this.call.once('metadata', () => resolve()));
    this.closed = new Promise((resolve) => this.call.once('status', resolve));
    this.call.on('error', () => undefined);
    this.call.on('data', (p: SnapshotPush) => {
      const w = this.#waiters.shift();
      if (w) w(p);
      else this.#received.push(p);
    });
    this.call.write({ hello: { gateway: hello.gateway ?? GATEWAY, pod: hello.pod ?? 'proxy-0', podNamespace: 'edge', version: hello.version ?? '', deltas: hello.deltas ?? true } });
  }

  next(): Promise<SnapshotPush> {
    const p = this.#received.shift();
    return p ? Promise.resolve(p) : new Promise((resolve) => this.#waiters.push(resolve));
  }

  ack(p: SnapshotPush): void {
    this.call.write({ ack: { version: p.version, nonce: p.nonce } });
  }

  nack(p: SnapshotPush, error: string, wantFull = false): void {
    this.call.write({ nack: { nonce: p.nonce, error, wantFull } });
  }
}

interface Harness {
  store: SnapshotStore;
  server: SnapshotStreamServer;
  client: grpc.Client;
  nacks: NackReport[];
  rejectionChanges: string[];
  registry: Registry;
}

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

async function start(answerTimeoutMs?: number, shutdownGraceMs?: number): Promise<Harness> {
  const store = new SnapshotStore();
  const registry = new Registry();
  const nacks: NackReport[] = [];
  const rejectionChanges: string[] = [];
  const server = new SnapshotStreamServer({
    addr: { host: '127.0.0.1', port: 0 },
    store,
    metrics: new StreamMetrics(registry),
    log: pino({ level: 'silent' }),
    answerTimeoutMs,
    shutdownGraceMs,
    onNack: (r) => nacks.push(r),
    onRejectionChange: (g) => rejectionChanges.push(g),
  });
  await server.start();
  cleanups.push(() => server.stop());
  const client = new grpc.Client(`127.0.0.1:${server.port}`, grpc.credentials.createInsecure());
  cleanups.push(() => client.close());
  return { store, server, client, nacks, rejectionChanges, registry };
}

const offer = (h: Harness, s: ProxySnapshot) => h.store.offer(new Map([[GATEWAY, s]]));

/** A harness serving snapshot `one` of GATEWAY, and a proxy connected to it with the first push it got. */
async function servingOne(): Promise<{ h: Harness; v1: ProxySnapshot; proxy: FakeProxy; push: SnapshotPush }> {
  const h = await start();
  const v1 = snapshot('one');
  offer(h, v1);
  const proxy = new FakeProxy(h.client, {});
  return { h, v1, proxy, push: await proxy.next() };
}

describe('snapshot stream protocol', () => {
  it('sends the current snapshot on connect and records the ACK', async () => {
    const h = await start();
    const v1 = snapshot('one');
    offer(h, v1);
    const proxy = new FakeProxy(h.client, {});
    const push = await proxy.next();
    expect(push.version).toBe(v1.version);
    // The payload is the wire encoding: the proxy's validator takes it as is.
    const parts = { skeleton: push.snapshot.toString('utf8'), routes: push.routes.map((r) => r.toString('utf8')), routeCounts: push.routeCounts };
    expect(parts.routeCounts).toEqual([1]);
    expect(new SnapshotDecoder().decodeParts(parts).version).toBe(v1.version);
    expect(h.server.proxies().get(GATEWAY)?.[0]).toMatchObject({ pod: 'proxy-0', ackedVersion: null, pending: v1.version });
    proxy.ack(push);
    // A new version is pushed only once the first is ACKed; its arrival proves the ACK counted.
    const v2 = snapshot('two');
    offer(h, v2);
    expect((await proxy.next()).version).toBe(v2.version);
    expect(h.server.proxies().get(GATEWAY)?.[0]).toMatchObject({ ackedVersion: v1.version, pending: v2.version });
    const metrics = await h.registry.metrics();
    expect(metrics).toContain(`tollgate_controller_stream_proxies{gateway="${GATEWAY}"} 1`);
    expect(metrics).toContain(`tollgate_controller_stream_acked_proxies{gateway="${GATEWAY}",version="${v1.version}"} 1`);
    expect(metrics).toContain(`tollgate_controller_stream_desired_version_info{gateway="${GATEWAY}",version="${v2.version}"} 1`);
    expect(metrics).toMatch(new RegExp(`tollgate_controller_stream_push_seconds_count\\{gateway="${GATEWAY}"\\} 1`));
  });

  it('sends nothing newer while a push is unanswered, then only the newest', async () => {
    const h = await start();
    offer(h, snapshot('one'));
    const proxy = new FakeProxy(h.client, {});
    const first = await proxy.next();
    offer(h, snapshot('two'));
    const v3 = snapshot('three');
    offer(h, v3);
    // Still waiting on the first push.
    expect(h.server.proxies().get(GATEWAY)?.[0]?.pending).toBe(first.version);
    proxy.ack(first);
    // Versions two was overtaken before it could be sent: three follows directly.
    expect((await proxy.next()).version).toBe(v3.version);
  });

  it('a NACK is reported, the refused version is not sent again, the next version is', async () => {
    const { h, v1, proxy, push } = await servingOne();
    proxy.nack(push, 'listener main: port 18080 is already in use');
    const v2 = snapshot('two');
    offer(h, v2);
    // The next push is v2, not v1 again.
    const next = await proxy.next();
    expect(next.version).toBe(v2.version);
    expect(h.nacks).toEqual([{ gateway: GATEWAY, pod: 'proxy-0', version: v1.version, error: 'listener main: port 18080 is already in use' }]);
    expect(h.server.proxies().get(GATEWAY)?.[0]).toMatchObject({ ackedVersion: null, lastNack: { version: v1.version, error: 'listener main: port 18080 is already in use' } });
    proxy.ack(next);
    offer(h, snapshot('three'));
    await proxy.next();
    expect(h.server.proxies().get(GATEWAY)?.[0]).toMatchObject({ ackedVersion: v2.version, lastNack: null });
  });

  it('a reconnecting proxy gets the current version at once, or nothing when it has it', async () => {
    const h = await start();
    const v1 = snapshot('one');
    offer(h, v1);
    const stale = new FakeProxy(h.client, { version: 'aaaaaaaaaaaa', pod: 'stale' });
    expect((await stale.next()).version).toBe(v1.version);

    const current = new FakeProxy(h.client, { version: v1.version, pod: 'current' });
    await current.accepted;
    expect(h.server.proxies().get(GATEWAY)?.find((p) => p.pod === 'current')).toMatchObject({ ackedVersion: v1.version, pending: null });
    // Nothing was sent to it: the first push it receives is the next version.
    const v2 = snapshot('two');
    offer(h, v2);
    expect((await current.next()).version).toBe(v2.version);
  });

  it('an unanswered push times out and the current version is sent again', async () => {
    const h = await start(50);
    const v1 = snapshot('one');
    offer(h, v1);
    const proxy = new FakeProxy(h.client, {});
    const first = await proxy.next();
    const again = await proxy.next();
    expect([again.version, again.nonce === first.nonce]).toEqual([v1.version, false]);
    // The late answer to the first push is stale and changes nothing; the answer to the second counts.
    proxy.ack(first);
    proxy.ack(again);
    const v2 = snapshot('two');
    offer(h, v2);
    expect((await proxy.next()).version).toBe(v2.version);
    expect(await h.registry.metrics()).toMatch(new RegExp(`tollgate_controller_stream_answers_total\\{gateway="${GATEWAY}",answer="timeout"\\} [1-9]`));
  });

  it('a stream that does not start with a valid hello is refused with INVALID_ARGUMENT', async () => {
    const h = await start();
    const bad = new FakeProxy(h.client, { gateway: 'no-slash' });
    const status = await bad.closed;
    expect([grpc.status[status.code], status.details]).toEqual(['INVALID_ARGUMENT', `hello.gateway "no-slash" is not <namespace>/<name> (a namespace of at most 63 and a name of at most 253 lower-case letters, digits, '-' and '.')`]);
    expect(h.server.proxies().size).toBe(0);
  });

  it('keeps an acked-proxies series only for versions a connected proxy holds', async () => {
    const h = await start();
    const acked = async () => [...(await h.registry.metrics()).matchAll(/^tollgate_controller_stream_acked_proxies\{gateway="[^"]*",version="([^"]*)"\} (\S+)$/gm)].map((m) => `${m[1]}=${m[2]}`);
    const a = new FakeProxy(h.client, { pod: 'proxy-a' });
    const b = new FakeProxy(h.client, { pod: 'proxy-b' });
    const versions: string[] = [];
    // Twenty versions in a row, each ACKed by both proxies: one series at the end, not twenty.
    for (let i = 0; i < 20; i++) {
      const v = snapshot(`route-${i}`);
      versions.push(v.version);
      offer(h, v);
      for (const p of [a, b]) {
        const push = await p.next();
        expect(push.version).toBe(v.version);
        p.ack(push);
      }
      await expect.poll(() => h.server.proxies().get(GATEWAY)?.every((v2) => v2.ackedVersion === v.version)).toBe(true);
    }
    expect(await acked()).toEqual([`${versions.at(-1)}=2`]);
    // One proxy leaves: the version is still held by the other, at 1.
    a.call.cancel();
    await a.closed;
    await expect.poll(acked).toEqual([`${versions.at(-1)}=1`]);
    // The last one leaves: no series left.
    b.call.cancel();
    await b.closed;
    await expect.poll(acked).toEqual([]);
  });

  it('a proxy that goes away is forgotten', async () => {
    const h = await start();
    // A Gateway still served keeps its series (at 0 proxies).
    offer(h, snapshot('one'));
    const proxy = new FakeProxy(h.client, {});
    await proxy.accepted;
    expect(h.server.proxies().get(GATEWAY)).toHaveLength(1);
    proxy.call.cancel();
    await proxy.closed;
    await expect.poll(() => h.server.proxies().size).toBe(0);
    expect(await h.registry.metrics()).toContain(`tollgate_controller_stream_proxies{gateway="${GATEWAY}"} 0`);
  });

  it("a deleted Gateway's series and rejection go once its last proxy has gone", async () => {
    const { h, v1, proxy, push } = await servingOne();
    proxy.nack(push, 'refused for the test');
    await expect.poll(() => h.server.rejection(GATEWAY)?.version).toBe(v1.version);
    const series = async () => (await h.registry.metrics()).split('\n').filter((l) => l.includes(`gateway="${GATEWAY}"`));
    expect(await series()).not.toEqual([]);
    // The Gateway is deleted while its proxy is still connected: its series stay.
    h.store.offer(new Map());
    expect(await series()).toContain(`tollgate_controller_stream_proxies{gateway="${GATEWAY}"} 1`);
    proxy.call.cancel();
    await proxy.closed;
    await expect.poll(series).toEqual([]);
    expect(h.server.rejection(GATEWAY)).toBeUndefined();
  });

  it('admin /snapshots lists each connected proxy with its acked version', async () => {
    const h = await start();
    const v1 = snapshot('one');
    offer(h, v1);
    const admin = new AdminServer({ host: '127.0.0.1', port: 0 }, createLogs('error', new Writable({ write: (_c, _e, cb) => cb() })), h.store, () => undefined, () => h.server.proxies());
    await admin.start();
    cleanups.push(() => admin.stop());
    const proxy = new FakeProxy(h.client, { pod: 'proxy-a' });
    proxy.ack(await proxy.next());
    // A second proxy, for a Gateway with no snapshot, is listed as waiting.
    const other = new FakeProxy(h.client, { gateway: 'edge/private', pod: 'proxy-b' });
    await other.accepted;
    await expect
      .poll(async () => ((await (await fetch(`http://${admin.address}/snapshots`)).json()) as { gateways: { proxies: { ackedVersion: string | null }[] }[] }).gateways[0]?.proxies[0]?.ackedVersion)
      .toBe(v1.version);
    const body = (await (await fetch(`http://${admin.address}/snapshots`)).json()) as Record<string, unknown>;
    expect(body).toMatchObject({
      gateways: [{ gateway: GATEWAY, version: v1.version, proxies: [{ pod: 'proxy-a', podNamespace: 'edge', ackedVersion: v1.version, pending: null, lastNack: null }] }],
      waiting: [{ gateway: 'edge/private', proxies: [{ pod: 'proxy-b', ackedVersion: null }] }],
    });
  });

  it('a NACK rejects the Gateway until a later version is ACKed by every connected proxy', async () => {
    const h = await start();
    const v1 = snapshot('one');
    offer(h, v1);
    const a = new FakeProxy(h.client, { pod: 'a' });
    const b = new FakeProxy(h.client, { pod: 'b' });
    a.ack(await a.next());
    const pushB = await b.next();
    b.nack(pushB, 'listener main: port 18080 is already in use');
    await expect.poll(() => h.server.rejection(GATEWAY)).toEqual({ version: v1.version, pod: 'b', error: 'listener main: port 18080 is already in use' });
    expect(h.rejectionChanges).toEqual([GATEWAY]);

    const v2 = snapshot('two');
    offer(h, v2);
    const [a2, b2] = await Promise.all([a.next(), b.next()]);
    a.ack(a2);
    // One of two proxies ACKed v2: still rejected. The next push to `a` proves its ACK counted.
    offer(h, snapshot('three'));
    const a3 = await a.next();
    expect(h.server.rejection(GATEWAY)?.version).toBe(v1.version);
    b.ack(b2);
    await expect.poll(() => h.server.rejection(GATEWAY)).toBeUndefined();
    expect(h.rejectionChanges).toEqual([GATEWAY, GATEWAY]);
    a.ack(a3);
  });

  it('stop ends within its grace period even while a stream is still open on the server', async () => {
    // A stream whose authentication never completes is open on the server and held by no
    // proxy record: the graceful shutdown alone would wait for it (here until its hello
    // timeout, by default 15 s).
    let reached!: () => void;
    const authStarted = new Promise<void>((r) => (reached = r));
    const server = new SnapshotStreamServer({
      addr: { host: '127.0.0.1', port: 0 },
      security: { kind: 'tls', credentials: () => grpc.ServerCredentials.createInsecure(), auth: { check: () => (reached(), new Promise(() => undefined)) } },
      store: new SnapshotStore(),
      metrics: new StreamMetrics(new Registry()),
      log: pino({ level: 'silent' }),
      helloTimeoutMs: 600_000,
      shutdownGraceMs: 100,
    });
    await server.start();
    const client = new grpc.Client(`127.0.0.1:${server.port}`, grpc.credentials.createInsecure());
    cleanups.push(() => client.close());
    const proxy = new FakeProxy(client, {});
    await authStarted;
    await server.stop();
    // Forced: the stream was cut, not completed.
    expect((await proxy.closed).code).not.toBe(grpc.status.OK);
  });
});

describe('snapshot stream deltas', () => {
  const counter = async (h: Harness, name: string, labels: string) => {
    const m = (await h.registry.metrics()).match(new RegExp(`^${name}\\{${labels}\\} (\\d+)$`, 'm'));
    return m ? Number(m[1]) : 0;
  };

  it('after an ACK, a new version carries only the new routes; the rest are positions in the ACKed one', async () => {
    const h = await start();
    const v1 = snapshot('one');
    const two = routesOf(snapshot('two'))[0]!;
    offer(h, v1);
    const proxy = new FakeProxy(h.client, {});
    const decoder = new SnapshotDecoder();
    const first = await proxy.next();
    expect(first.baseVersion).toBe('');
    const a = decoder.decodeParts(partsOf(first));
    proxy.ack(first);
    const v2 = withRoutes(v1, [routesOf(v1)[0]!, two]);
    offer(h, v2);
    const second = await proxy.next();
    expect([second.baseVersion, second.routeRefs, second.routes.length]).toEqual([v1.version, [1, 0], 1]);
    const b = decoder.decodeParts(partsOf(second));
    expect(b.version).toBe(v2.version);
    expect(routesOf(b)[0]).toBe(routesOf(a)[0]);
    expect(await counter(h, 'tollgate_controller_stream_encodings_total', 'form="delta"')).toBe(1);
  });

  it('proxies holding the same version share one encoding of the delta', async () => {
    const h = await start();
    const v1 = snapshot('one');
    offer(h, v1);
    const proxies = ['a', 'b', 'c'].map((pod) => new FakeProxy(h.client, { pod }));
    for (const p of proxies) p.ack(await p.next());
    // Every ACK has arrived once the server lists each proxy at v1.
    await expect.poll(() => h.server.proxies().get(GATEWAY)?.map((p) => p.ackedVersion)).toEqual([v1.version, v1.version, v1.version]);
    offer(h, withRoutes(v1, [routesOf(v1)[0]!, routesOf(snapshot('two'))[0]!]));
    const pushes = await Promise.all(proxies.map((p) => p.next()));
    expect(new Set(pushes.map((p) => p.baseVersion))).toEqual(new Set([v1.version]));
    expect(new Set(pushes.map((p) => p.nonce)).size).toBe(3);
    expect(await counter(h, 'tollgate_controller_stream_encodings_total', 'form="delta"')).toBe(1);
    expect(await counter(h, 'tollgate_controller_stream_encodings_total', 'form="full"')).toBe(1);
  });

  /** A proxy that ACKed v1 and has been sent v2 (v1's route kept, one new) as a delta. */
  async function deltaSent() {
    const h = await start();
    const v1 = snapshot('one');
    offer(h, v1);
    const proxy = new FakeProxy(h.client, {});
    proxy.ack(await proxy.next());
    const v2 = withRoutes(v1, [routesOf(v1)[0]!, routesOf(snapshot('two'))[0]!]);
    offer(h, v2);
    const delta = await proxy.next();
    expect(delta.baseVersion).toBe(v1.version);
    return { h, v1, v2, proxy, delta };
  }

  it('a delta the proxy cannot resolve is sent again in full, and the Gateway is not rejected for it', async () => {
    const { h, v1, v2, proxy, delta } = await deltaSent();
    proxy.nack(delta, `baseVersion: got "${v1.version}"; this proxy holds no snapshot yet: send the full snapshot`, true);
    const full = await proxy.next();
    expect([full.version, full.baseVersion, full.routes.length]).toEqual([v2.version, '', 2]);
    expect(new SnapshotDecoder().decodeParts(partsOf(full)).version).toBe(v2.version);
    expect(h.nacks).toEqual([]);
    expect(h.server.rejection(GATEWAY)).toBeUndefined();
    expect(await counter(h, 'tollgate_controller_stream_answers_total', `gateway="${GATEWAY}",answer="nack_delta"`)).toBe(1);
    // A refusal of the full form is a refusal of the snapshot.
    proxy.nack(full, 'listener main: port 18080 is already in use');
    await expect.poll(() => h.server.rejection(GATEWAY)?.version).toBe(v2.version);
    expect(h.nacks.map((n) => n.version)).toEqual([v2.version]);
  });

  it('a delta refused for its content is a refusal of the snapshot: not sent again', async () => {
    const { h, v1, v2, proxy, delta } = await deltaSent();
    proxy.nack(delta, 'listener main: port 18080 is already in use');
    await expect.poll(() => h.server.rejection(GATEWAY)?.version).toBe(v2.version);
    // The next push is the next version, in full (after a refusal the proxy's base is not assumed).
    const v3 = withRoutes(v1, [routesOf(v1)[0]!, routesOf(snapshot('three'))[0]!]);
    offer(h, v3);
    const next = await proxy.next();
    expect([next.version, next.baseVersion]).toEqual([v3.version, '']);
  });

  it('a proxy announcing a version the controller does not know gets the full form; one announcing the version before the current gets a delta', async () => {
    const h = await start();
    const v1 = snapshot('one');
    offer(h, v1);
    const holder = new FakeProxy(h.client, { pod: 'holder' });
    holder.ack(await holder.next());
    await expect.poll(() => h.server.proxies().get(GATEWAY)?.[0]?.ackedVersion).toBe(v1.version);
    offer(h, withRoutes(v1, [routesOf(v1)[0]!, routesOf(snapshot('two'))[0]!]));
    await holder.next(); // v2 pending on the holder: it still holds v1
    const unknown = new FakeProxy(h.client, { version: 'aaaaaaaaaaaa', pod: 'unknown' });
    expect((await unknown.next()).baseVersion).toBe('');
    const known = new FakeProxy(h.client, { version: v1.version, pod: 'known' });
    expect((await known.next()).baseVersion).toBe(v1.version);
  });

  it('a proxy that does not say it takes deltas is sent the full form only', async () => {
    const h = await start();
    const v1 = snapshot('one');
    offer(h, v1);
    const proxy = new FakeProxy(h.client, { deltas: false });
    proxy.ack(await proxy.next());
    const v2 = withRoutes(v1, [routesOf(v1)[0]!, routesOf(snapshot('two'))[0]!]);
    offer(h, v2);
    const push = await proxy.next();
    expect([push.version, push.baseVersion, push.routes.length]).toEqual([v2.version, '', 2]);
  });

  it('keeps no base version that is neither current nor held by a connected proxy', async () => {
    const h = await start();
    let current = snapshot('one');
    offer(h, current);
    const proxy = new FakeProxy(h.client, {});
    let push = await proxy.next();
    for (let i = 0; i < 20; i++) {
      proxy.ack(push);
      current = withRoutes(current, [...routesOf(current).slice(-3), routesOf(snapshot(`r${i}`))[0]!]);
      offer(h, current);
      push = await proxy.next();
      expect(push.baseVersion).not.toBe('');
      // The version the proxy ACKed (the base of the push it is being sent) and the current one.
      expect(h.server.baseVersions(GATEWAY).sort()).toEqual([push.baseVersion, current.version].sort());
    }
    proxy.call.end();
    await proxy.closed;
    await expect.poll(() => h.server.proxies().get(GATEWAY)).toBeUndefined();
    expect(h.server.baseVersions(GATEWAY)).toEqual([current.version]);
  });
});
