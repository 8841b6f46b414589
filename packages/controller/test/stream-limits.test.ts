// The bounds of the snapshot stream, over real gRPC on loopback with a raw client playing the
// proxy (or an attacker): message size, the hello's fields, streams at once and per Gateway,
// messages sent ahead, stream age, re-authentication and token expiry; what a refusal logs is
// clipped, and no client-chosen text becomes a metric label. (The real TokenReview, ServiceAccount
// deletion and a proxy reconnecting with its current token are in e2e/snapshot-stream.test.ts.)
import { Writable } from 'node:stream';
import * as grpc from '@grpc/grpc-js';
import { standaloneToSnapshot, validateStandaloneConfig, type ProxySnapshot } from '@tollgate/api';
import { RECONNECT_TRAILER, SNAPSHOT_SERVICE, SNAPSHOT_STREAM_PATH, type Hello, type ProxyMessage, type SnapshotPush } from '@tollgate/api/snapshot-stream';
import pino from 'pino';
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { SnapshotStore } from '../src/snapshots/store.js';
import type { AuthDecision, StreamAuthenticator } from '../src/snapshots/stream-auth.js';
import type { StreamLimits } from '../src/snapshots/stream-limits.js';
import { StreamMetrics } from '../src/snapshots/stream-metrics.js';
import { SnapshotStreamServer, type StreamSecurity } from '../src/snapshots/stream-server.js';
import { CachingTokenReviewer, ReviewThrottled, type ReviewResult, type TokenReviewer } from '../src/snapshots/token-review.js';
import { CertificateAuthority } from '../src/pki/authority.js';
import { ServingCertificates } from '../src/pki/serving.js';

const GATEWAY = 'edge/public';

function snapshot(gateway = GATEWAY): ProxySnapshot {
  const config = { binds: [{ port: 18080, listeners: [{ name: 'main', protocol: 'HTTP', routes: [{ name: 'r', backends: [{ host: '127.0.0.1:1' }] }] }] }] };
  return standaloneToSnapshot(validateStandaloneConfig(config, 'test'), { kind: 'controller', gateway });
}

interface Harness {
  server: SnapshotStreamServer;
  client: grpc.Client;
  registry: Registry;
  logs: string[];
  store: SnapshotStore;
}

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

/** A server with these limits; with `auth`, TLS and that authenticator. */
async function start(limits: Partial<StreamLimits>, auth?: StreamAuthenticator): Promise<Harness> {
  const store = new SnapshotStore();
  store.offer(new Map([[GATEWAY, snapshot()], ['edge/other', snapshot('edge/other')]]));
  const registry = new Registry();
  const logs: string[] = [];
  const log = pino({ level: 'debug' }, new Writable({ write: (c: Buffer, _e, cb) => (logs.push(c.toString()), cb()) }));
  let security: StreamSecurity = { kind: 'plaintext' };
  let credentials = grpc.credentials.createInsecure();
  if (auth) {
    const { ca } = CertificateAuthority.create();
    const serving = new ServingCertificates(ca, { dnsNames: ['localhost'], ipAddresses: ['127.0.0.1'] }, pino({ level: 'silent' }));
    security = { kind: 'tls', credentials: () => serving.serverCredentials(), auth };
    credentials = grpc.credentials.createSsl(Buffer.from(ca.certificate));
  }
  const server = new SnapshotStreamServer({ addr: { host: '127.0.0.1', port: 0 }, store, metrics: new StreamMetrics(registry), log, limits, security });
  await server.start();
  cleanups.push(() => server.stop());
  const client = new grpc.Client(`127.0.0.1:${server.port}`, credentials);
  cleanups.push(() => client.close());
  return { server, client, registry, logs, store };
}

/** A stream as a client opens it: `accepted` once the hello is admitted, `closed` with the final status. */
function open(client: grpc.Client, hello: Partial<Hello>, metadata = new grpc.Metadata()) {
  const call = client.makeBidiStreamRequest<ProxyMessage, SnapshotPush>(SNAPSHOT_STREAM_PATH, SNAPSHOT_SERVICE.Stream.requestSerialize, SNAPSHOT_SERVICE.Stream.responseDeserialize, metadata);
  const accepted = new Promise<void>((resolve) => call.once('metadata', () => resolve()));
  const closed = new Promise<grpc.StatusObject>((resolve) => call.once('status', resolve));
  const pushes: SnapshotPush[] = [];
  call.on('data', (p: SnapshotPush) => pushes.push(p));
  call.on('error', () => undefined);
  call.write({ hello: { gateway: GATEWAY, pod: 'proxy-0', podNamespace: 'edge', version: '', deltas: true, ...hello } });
  return { call, accepted, closed, pushes };
}

const metric = async (h: Harness, name: string, labels: string) => {
  const line = (await h.registry.metrics()).split('\n').find((l) => l.startsWith(`${name}{${labels}}`));
  return line ? Number(line.split(' ').at(-1)) : 0;
};

describe('snapshot stream bounds', () => {
  it('refuses hello fields out of bounds, naming the field; nothing long reaches a log line or a label', async () => {
    const h = await start({ maxMessageBytes: 64 * 1024 });
    const long = 'a'.repeat(60_000);
    const cases: [Partial<Hello>, RegExp][] = [
      [{ pod: long }, /^hello\.pod "a{128}… \(60000 characters\)" is not a pod name \(at most 253 /],
      [{ pod: 'Proxy_0' }, /^hello\.pod "Proxy_0" is not a pod name/],
      [{ podNamespace: 'x'.repeat(64) }, /^hello\.podNamespace "x{64}" is not a namespace \(at most 63 /],
      [{ version: `v${'1'.repeat(64)}` }, /^hello\.version "v1{64}" is not a snapshot version \(at most 64 /],
      [{ version: 'a"b{c}' }, /^hello\.version "a\\"b\{c\}" is not a snapshot version/],
      [{ gateway: `edge/${long}` }, /^hello\.gateway "edge\/a{123}… \(60005 characters\)" is not <namespace>\/<name>/],
      [{ gateway: `${'n'.repeat(64)}/gw` }, /^hello\.gateway "n{64}\/gw" is not <namespace>\/<name>/],
    ];
    for (const [hello, details] of cases) {
      const s = open(h.client, hello);
      const status = await s.closed;
      expect([grpc.status[status.code], status.details]).toEqual(['INVALID_ARGUMENT', expect.stringMatching(details)]);
    }
    expect(await metric(h, 'tollgate_controller_stream_limited_total', 'limit="hello"')).toBe(cases.length);
    expect(h.server.proxies().size).toBe(0);
    // Refusals are logged (once a second at most, the rest counted), each line short.
    expect(h.logs.some((l) => l.includes('TG_CONTROLLER_STREAM_REFUSED'))).toBe(true);
    expect(Math.max(...h.logs.map((l) => l.length))).toBeLessThan(2048);
    expect((await h.registry.metrics()).includes('aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa')).toBe(false);
  });

  it('refuses a message larger than the bound before decoding it', async () => {
    const h = await start({ maxMessageBytes: 4096 });
    const s = open(h.client, { pod: `p${'a'.repeat(5000)}` });
    const status = await s.closed;
    expect(grpc.status[status.code]).toBe('RESOURCE_EXHAUSTED');
    expect(status.details).toMatch(/larger than max \(\d+ vs 4096\)/);
    expect(h.server.proxies().size).toBe(0);
  });

  it('serves at most maxStreams at once and maxStreamsPerGateway per Gateway; a freed place is taken again', async () => {
    const h = await start({ maxStreams: 3, maxStreamsPerGateway: 2 });
    const a = open(h.client, { pod: 'a' });
    const b = open(h.client, { pod: 'b' });
    await Promise.all([a.accepted, b.accepted]);
    const c = open(h.client, { pod: 'c' });
    const refusedC = await c.closed;
    expect([grpc.status[refusedC.code], refusedC.details]).toEqual(['RESOURCE_EXHAUSTED', 'Gateway edge/public has 2 streams open, the most one Gateway may have (--snapshot-max-streams-per-gateway); retry later']);
    const other = open(h.client, { gateway: 'edge/other', pod: 'o' });
    await other.accepted;
    const d = open(h.client, { gateway: 'edge/other', pod: 'd' });
    const refusedD = await d.closed;
    expect([grpc.status[refusedD.code], refusedD.details]).toEqual(['RESOURCE_EXHAUSTED', 'the controller serves at most 3 streams at once (--snapshot-max-streams); retry later']);
    expect(await metric(h, 'tollgate_controller_stream_limited_total', 'limit="streams_per_gateway"')).toBe(1);
    expect(await metric(h, 'tollgate_controller_stream_limited_total', 'limit="streams"')).toBe(1);
    a.call.end();
    await a.closed;
    const e = open(h.client, { pod: 'e' });
    await e.accepted;
    expect(h.server.proxies().get(GATEWAY)?.map((p) => p.pod)).toEqual(['b', 'e']);
    expect(await h.registry.metrics()).toContain('\ntollgate_controller_stream_open 3\n');
  });

  it('admits at most 16 streams waiting for their hello (or its authentication) from one address', async () => {
    const h = await start({});
    const raw = () => {
      const call = h.client.makeBidiStreamRequest<ProxyMessage, SnapshotPush>(SNAPSHOT_STREAM_PATH, SNAPSHOT_SERVICE.Stream.requestSerialize, SNAPSHOT_SERVICE.Stream.responseDeserialize);
      call.on('error', () => undefined);
      return { call, closed: new Promise<grpc.StatusObject>((resolve) => call.once('status', resolve)) };
    };
    const probe = open(h.client, { pod: 'probe' });
    await probe.accepted;
    // Sixteen streams that say nothing: each holds a place until its hello (or the hello timeout).
    const silent = Array.from({ length: 16 }, raw);
    await expect.poll(async () => (await h.registry.metrics()).includes('\ntollgate_controller_stream_open 17\n')).toBe(true);
    const refused = open(h.client, { pod: 'seventeenth' });
    const status = await refused.closed;
    expect([grpc.status[status.code], status.details]).toEqual(['RESOURCE_EXHAUSTED', '16 streams from 127.0.0.1 are waiting to be admitted, the most one address may have; retry later']);
    expect(await metric(h, 'tollgate_controller_stream_limited_total', 'limit="pending_per_peer"')).toBe(1);
    // One of them says hello: admitted, its place is free again.
    silent[0]!.call.write({ hello: { gateway: GATEWAY, pod: 'late', podNamespace: 'edge', version: '' } });
    await expect.poll(() => h.server.proxies().get(GATEWAY)?.map((p) => p.pod)).toEqual(['late', 'probe']);
    const next = open(h.client, { pod: 'next' });
    await next.accepted;
    for (const s of silent) s.call.cancel();
  });

  it('ends a stream at its maximum age with a reconnect trailer; the proxy is sent nothing it has', async () => {
    const h = await start({ maxStreamAgeMs: 300 });
    const s = open(h.client, { pod: 'a', version: h.store.get(GATEWAY)!.version });
    await s.accepted;
    let trailer: string[] = [];
    s.call.on('status', (st: grpc.StatusObject) => (trailer = st.metadata.get(RECONNECT_TRAILER) as string[]));
    const status = await s.closed;
    expect([grpc.status[status.code], status.details]).toEqual(['UNAVAILABLE', 'the stream reached its maximum age (300ms, --snapshot-max-stream-age); reconnect']);
    expect(status.metadata.get(RECONNECT_TRAILER)).toEqual(['max_age']);
    expect(trailer).toEqual(['max_age']);
    expect(s.pushes).toEqual([]);
    expect(await metric(h, 'tollgate_controller_stream_ended_total', 'reason="max_age"')).toBe(1);
    expect(h.server.proxies().size).toBe(0);
  });
});

/** Admits `good` (ok), and answers each later check with the next decision of `rechecks`. */
class ScriptedAuth implements StreamAuthenticator {
  checks: { token: string | undefined; fresh: boolean }[] = [];
  constructor(private readonly rechecks: AuthDecision[]) {}
  async check(token: string | undefined, _gateway: string, options: { fresh?: boolean } = {}): Promise<AuthDecision> {
    this.checks.push({ token, fresh: options.fresh === true });
    if (!options.fresh) return token ? { ok: true, serviceAccount: { namespace: 'edge', name: 'public-tollgate' } } : { ok: false, code: grpc.status.UNAUTHENTICATED, result: 'unauthenticated', message: 'no token' };
    return this.rechecks.shift() ?? { ok: true, serviceAccount: { namespace: 'edge', name: 'public-tollgate' } };
  }
}

const bearer = (token: string) => {
  const md = new grpc.Metadata();
  md.set('authorization', `Bearer ${token}`);
  return md;
};
const jwt = (claims: Record<string, unknown>) => `eyJhbGciOiJFUzI1NiJ9.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.sig`;

describe('snapshot stream re-authentication', () => {
  it('re-checks an open stream; kept while the check cannot be made, ended when it is refused', async () => {
    const auth = new ScriptedAuth([
      { ok: true, serviceAccount: { namespace: 'edge', name: 'public-tollgate' } },
      { ok: false, code: grpc.status.UNAVAILABLE, result: 'unavailable', message: 'the token could not be checked (TokenReview failed: HTTP 503); retry' },
      { ok: false, code: grpc.status.UNAUTHENTICATED, result: 'unauthenticated', message: 'the API server refused the token (serviceaccounts "public-tollgate" not found)' },
    ]);
    const h = await start({ reauthIntervalMs: 50 }, auth);
    const token = jwt({ sub: 'system:serviceaccount:edge:public-tollgate' });
    const s = open(h.client, { pod: 'a' }, bearer(token));
    await s.accepted;
    const status = await s.closed;
    expect([grpc.status[status.code], status.details]).toEqual(['UNAUTHENTICATED', 're-authentication refused: the API server refused the token (serviceaccounts "public-tollgate" not found)']);
    // A refusal is no planned end: the proxy backs off.
    expect(status.metadata.get(RECONNECT_TRAILER)).toEqual([]);
    expect(auth.checks).toEqual([{ token, fresh: false }, { token, fresh: true }, { token, fresh: true }, { token, fresh: true }]);
    expect(await metric(h, 'tollgate_controller_stream_reauth_total', 'result="ok"')).toBe(1);
    expect(await metric(h, 'tollgate_controller_stream_reauth_total', 'result="unavailable"')).toBe(1);
    expect(await metric(h, 'tollgate_controller_stream_reauth_total', 'result="unauthenticated"')).toBe(1);
    expect(await metric(h, 'tollgate_controller_stream_ended_total', 'reason="reauth_refused"')).toBe(1);
    expect(h.logs.join('')).not.toContain(token);
  });

  it('ends a stream when the token it opened with expires, asking the proxy to reconnect with its current one', async () => {
    const h = await start({}, new ScriptedAuth([]));
    const exp = Math.ceil(Date.now() / 1000) + 1;
    const s = open(h.client, { pod: 'a' }, bearer(jwt({ exp })));
    await s.accepted;
    const status = await s.closed;
    expect([grpc.status[status.code], status.details]).toEqual(['UNAVAILABLE', `the token this stream was opened with expired at ${new Date(exp * 1000).toISOString()}; reconnect with the current one`]);
    expect(status.metadata.get(RECONNECT_TRAILER)).toEqual(['token_expired']);
    expect(await metric(h, 'tollgate_controller_stream_ended_total', 'reason="token_expired"')).toBe(1);
  });

  it('refuses a stream that sends messages ahead of its answers', async () => {
    // The hello waits on an authentication that never ends; what follows it piles up.
    const h = await start({}, { check: () => new Promise<AuthDecision>(() => undefined) });
    const s = open(h.client, { pod: 'a' }, bearer('t'));
    for (let i = 0; i < 20; i++) s.call.write({ ack: { version: 'v', nonce: String(i) } });
    const status = await s.closed;
    expect([grpc.status[status.code], status.details]).toEqual(['RESOURCE_EXHAUSTED', "more than 8 messages sent ahead of the controller's answers; a proxy sends its hello, then one answer per push"]);
    expect(await metric(h, 'tollgate_controller_stream_limited_total', 'limit="messages"')).toBe(1);
  });
});

describe('token review pacing', () => {
  class Counting implements TokenReviewer {
    calls = 0;
    async review(): Promise<ReviewResult> {
      this.calls++;
      return { authenticated: false, error: 'invalid bearer token' };
    }
  }

  it('reviews at most reviewsPerSecond new tokens a second; cached and fresh reviews are not paced', async () => {
    let now = 0;
    const inner = new Counting();
    const counted: string[] = [];
    const r = new CachingTokenReviewer(inner, { reviewsPerSecond: 3, now: () => now, counted: (x) => counted.push(x) });
    for (const t of ['a', 'b', 'c']) await r.review(t);
    await expect(r.review('d')).rejects.toBeInstanceOf(ReviewThrottled);
    await expect(r.review('e')).rejects.toThrow('more new tokens than the 3 reviews per second the controller makes (--snapshot-token-reviews-per-second)');
    // Known tokens are answered from the cache; a re-check of an open stream is always made.
    await r.review('a');
    await r.review('a', { fresh: true });
    expect(inner.calls).toBe(4);
    now += 1000;
    for (const t of ['d', 'e', 'f']) await r.review(t);
    await expect(r.review('g')).rejects.toBeInstanceOf(ReviewThrottled);
    expect(inner.calls).toBe(7);
    expect(counted.filter((c) => c === 'new')).toHaveLength(6);
    expect(counted.filter((c) => c === 'recheck')).toHaveLength(1);
    expect(counted.filter((c) => c === 'throttled')).toHaveLength(3);
  });
});
