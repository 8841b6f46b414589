// Authentication of the snapshot stream: the decisions (a reviewer stands in for the API
// server; the real TokenReview is exercised in e2e/snapshot-stream.test.ts), the review cache,
// and a real TLS gRPC server refusing a stream without a token.
import { Writable } from 'node:stream';
import * as grpc from '@grpc/grpc-js';
import { SNAPSHOT_SERVICE, SNAPSHOT_STREAM_PATH, type ProxyMessage, type SnapshotPush } from '@tollgate/api/snapshot-stream';
import pino from 'pino';
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { CertificateAuthority } from '../src/pki/authority.js';
import { ServingCertificates } from '../src/pki/serving.js';
import { SnapshotStore } from '../src/snapshots/store.js';
import { bearerToken, serviceAccountOf, TokenReviewAuthenticator } from '../src/snapshots/stream-auth.js';
import { StreamMetrics } from '../src/snapshots/stream-metrics.js';
import { SnapshotStreamServer } from '../src/snapshots/stream-server.js';
import { CachingTokenReviewer, tokenExpiry } from '../src/snapshots/token-review.js';
import { expected, GW, GW_SA, OK, TableReviewer, token } from './stream-tokens.js';

const T = {
  good: token({ sub: GW_SA, aud: ['tollgate'] }, 'good'),
  forged: token({ sub: GW_SA, aud: ['tollgate'] }, 'forged'),
  other: token({ sub: 'system:serviceaccount:apps:other-tollgate', aud: ['tollgate'] }, 'other'),
  person: token({ sub: 'alice', aud: ['tollgate'] }, 'person'),
  claimsNothing: token({}, 'nothing'),
  wrongaud: token({ sub: GW_SA, aud: ['https://kubernetes.default.svc'] }, 'wrongaud'),
  expired: token({ sub: GW_SA, aud: ['tollgate'], exp: 1_000 }, 'expired'),
  down: token({ sub: GW_SA, aud: ['tollgate'] }, 'down'),
};


describe('stream authentication decisions', () => {
  const reviewer = new TableReviewer({
    [T.good]: OK,
    [T.other]: { authenticated: true, username: 'system:serviceaccount:apps:other-tollgate', audiences: ['tollgate'] },
    [T.person]: { authenticated: true, username: 'alice', audiences: ['tollgate'] },
    [T.claimsNothing]: { authenticated: true, username: GW_SA, audiences: [] },
  });
  const auth = new TokenReviewAuthenticator(reviewer, expected);

  it.each([
    ['none', undefined, GW, 'UNAUTHENTICATED', /^no token: a proxy sends its projected ServiceAccount token \(audience tollgate\)/, false],
    ['not a JWT', 'garbage', GW, 'UNAUTHENTICATED', /^the token is not a ServiceAccount token \(a JWT\); a proxy presents its current projected ServiceAccount token \(audience tollgate\)$/, false],
    ['too long', `${T.good}${'x'.repeat(16 * 1024)}`, GW, 'UNAUTHENTICATED', /^the token is 16\d{3} bytes, more than the 16384 a ServiceAccount token may be$/, false],
    ['expired', T.expired, GW, 'UNAUTHENTICATED', /^the token expired at 1970-01-01T00:16:40\.000Z/, false],
    ['another audience', T.wrongaud, GW, 'UNAUTHENTICATED', /^the token is not issued for audience tollgate \(it is for https:\/\/kubernetes\.default\.svc\)/, false],
    ['another ServiceAccount', T.other, GW, 'PERMISSION_DENIED', /^ServiceAccount apps\/other-tollgate may not open the stream of Gateway apps\/gw; its proxies run as ServiceAccount apps\/gw-tollgate$/, false],
    ['a person', T.person, GW, 'PERMISSION_DENIED', /^alice is not a ServiceAccount/, false],
    ['an unknown Gateway', T.good, 'apps/unknown', 'PERMISSION_DENIED', /the controller knows no Gateway apps\/unknown$/, false],
    ['refused by the API server', T.forged, GW, 'UNAUTHENTICATED', /^the API server refused the token \(invalid bearer token\)/, true],
    ['reviewed without audience', T.claimsNothing, GW, 'UNAUTHENTICATED', /^the token is not issued for audience tollgate \(it is for no audience\)$/, true],
    ['API server away', T.down, GW, 'UNAVAILABLE', /^the token could not be checked \(TokenReview failed: connect ECONNREFUSED\); retry$/, true],
  ] as const)('%s', async (_name, token, gateway, code, message, reviewed) => {
    const before = reviewer.calls.length;
    const d = await auth.check(token, gateway);
    expect(d.ok).toBe(false);
    if (d.ok) return;
    expect(grpc.status[d.code]).toBe(code);
    expect(d.message).toMatch(message);
    // What the token says of itself refuses it without costing the API server a review.
    expect(reviewer.calls.length - before).toBe(reviewed ? 1 : 0);
  });

  it('allows the Gateway\'s own ServiceAccount', async () => {
    expect(await auth.check(T.good, GW)).toEqual({ ok: true, serviceAccount: { namespace: 'apps', name: 'gw-tollgate' } });
  });

  it('parses usernames and authorization metadata', () => {
    expect(serviceAccountOf('system:serviceaccount:apps:gw-tollgate')).toEqual({ namespace: 'apps', name: 'gw-tollgate' });
    expect(serviceAccountOf('system:serviceaccount:apps')).toBeNull();
    expect(serviceAccountOf('system:node:n1')).toBeNull();
    expect(bearerToken(['Bearer abc.def'])).toBe('abc.def');
    expect(bearerToken(['bearer  abc '])).toBe('abc');
    expect(bearerToken(['Basic abc'])).toBeUndefined();
    expect(bearerToken([])).toBeUndefined();
  });
});

const jwt = (exp: number) => `h.${Buffer.from(JSON.stringify({ exp })).toString('base64url')}.s`;

describe('token review cache', () => {
  it('asks once per token while fresh, again after the TTL, and never past the token\'s expiry', async () => {
    let now = 1_000_000;
    const valid = jwt((now + 60_001) / 1000 + 30); // expires 30 s after the second step below
    const inner = new TableReviewer({ [valid]: OK, plain: OK });
    const cache = new CachingTokenReviewer(inner, { positiveTtlMs: 60_000, negativeTtlMs: 5_000, now: () => now });
    await Promise.all([cache.review('plain'), cache.review('plain')]);
    await cache.review('plain');
    expect(inner.calls).toEqual(['plain']);
    now += 60_001;
    await cache.review('plain');
    expect(inner.calls).toEqual(['plain', 'plain']);
    await cache.review(valid);
    now += 29_000;
    await cache.review(valid);
    expect(inner.calls.filter((c) => c === valid)).toHaveLength(1);
    now += 1_001; // past exp, well within the TTL
    await cache.review(valid);
    expect(inner.calls.filter((c) => c === valid)).toHaveLength(2);
  });

  it('keeps refusals briefly and failures not at all; bounds its size', async () => {
    let now = 0;
    const inner = new TableReviewer({});
    const cache = new CachingTokenReviewer(inner, { negativeTtlMs: 5_000, maxEntries: 2, now: () => now });
    await cache.review('bad');
    await cache.review('bad');
    expect(inner.calls).toEqual(['bad']);
    now += 5_001;
    await cache.review('bad');
    await expect(cache.review('down')).rejects.toThrow('ECONNREFUSED');
    await expect(cache.review('down')).rejects.toThrow('ECONNREFUSED');
    expect(inner.calls).toEqual(['bad', 'bad', 'down', 'down']);
    await cache.review('b');
    await cache.review('c');
    // 'bad' was the oldest of three: evicted, asked again.
    await cache.review('bad');
    expect(inner.calls.slice(-3)).toEqual(['b', 'c', 'bad']);
  });

  it('reads exp without trusting anything else', () => {
    expect(tokenExpiry(jwt(1234))).toBe(1_234_000);
    expect(tokenExpiry('opaque')).toBeUndefined();
    expect(tokenExpiry('a.!!!.b')).toBeUndefined();
    expect(tokenExpiry(`a.${Buffer.from('{"exp":"soon"}').toString('base64url')}.b`)).toBeUndefined();
  });
});

describe('stream server with TLS and authentication', () => {
  const cleanups: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    while (cleanups.length) await cleanups.pop()!();
  });

  async function open(metadata: grpc.Metadata): Promise<{ status: grpc.StatusObject; logs: string; registry: Registry }> {
    const { ca } = CertificateAuthority.create();
    const serving = new ServingCertificates(ca, { dnsNames: ['localhost'], ipAddresses: ['127.0.0.1'] }, pino({ level: 'silent' }));
    let logs = '';
    const log = pino({ level: 'debug' }, new Writable({ write: (c: Buffer, _e, cb) => ((logs += c.toString()), cb()) }));
    const registry = new Registry();
    const server = new SnapshotStreamServer({
      addr: { host: '127.0.0.1', port: 0 },
      security: { kind: 'tls', credentials: () => serving.serverCredentials(), auth: new TokenReviewAuthenticator(new TableReviewer({ [T.good]: OK }), expected) },
      store: new SnapshotStore(),
      metrics: new StreamMetrics(registry),
      log,
    });
    await server.start();
    cleanups.push(() => server.stop());
    const client = new grpc.Client(`127.0.0.1:${server.port}`, grpc.credentials.createSsl(Buffer.from(ca.certificate)));
    cleanups.push(() => client.close());
    const call = client.makeBidiStreamRequest<ProxyMessage, SnapshotPush>(SNAPSHOT_STREAM_PATH, SNAPSHOT_SERVICE.Stream.requestSerialize, SNAPSHOT_SERVICE.Stream.responseDeserialize, metadata);
    call.on('error', () => undefined);
    const status = new Promise<grpc.StatusObject>((resolve) => call.once('status', resolve));
    call.write({ hello: { gateway: GW, pod: 'gw-0', podNamespace: 'apps', version: '' } });
    return { status: await status, logs, registry };
  }

  it('ends a stream without a token with UNAUTHENTICATED, counts and logs it without any token', async () => {
    const r = await open(new grpc.Metadata());
    expect(grpc.status[r.status.code]).toBe('UNAUTHENTICATED');
    expect(r.status.details).toMatch(/^no token: a proxy sends its projected ServiceAccount token/);
    expect(await r.registry.metrics()).toContain('tollgate_controller_stream_auth_total{result="unauthenticated"} 1');
    expect(r.logs).toContain('"code":"TG_CONTROLLER_STREAM_REFUSED"');
  });

  it('ends a stream with a token the API server refuses with UNAUTHENTICATED; the token is not logged', async () => {
    const md = new grpc.Metadata();
    const secret = token({ sub: GW_SA, aud: ['tollgate'] }, 'c2lnbmF0dXJlLXRoYXQtbXVzdC1ub3QtbGVhaw');
    md.set('authorization', `Bearer ${secret}`);
    const r = await open(md);
    expect(grpc.status[r.status.code]).toBe('UNAUTHENTICATED');
    expect(r.status.details).toMatch(/^the API server refused the token \(invalid bearer token\)/);
    expect(r.logs).not.toContain('c2lnbmF0dXJl');
    expect(r.logs).not.toContain(secret);
  });
});
