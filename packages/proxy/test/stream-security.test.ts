// The proxy's side of the secured snapshot stream against the controller's real stream server
// on loopback, with TLS from the controller's own CA code: it trusts only the CA file it is
// given and says so plainly when the controller's certificate does not chain to it; it sends
// its token on every connect, read again each time (kubelet rotates it), and follows a CA
// file that changes; the controller's serving certificate rotates without dropping streams.
import { once } from 'node:events';
import { writeFileSync } from 'node:fs';
import { Writable } from 'node:stream';
import { connect } from 'node:tls';
import { standaloneToSnapshot, validateStandaloneConfig } from '@tollgate/api';
import type { SnapshotStore, SnapshotStreamServer, StreamLimits } from '@tollgate/controller';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { ControllerSnapshotSource, type ControllerSecurity } from '../src/source/controller-source.js';
import { streamController } from './support/stream-controller.js';
import { streamTls, type StreamTls } from './support/stream-tls.js';

const GATEWAY = 'edge/public';
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

async function controller(tls: StreamTls, port = 0, limits: Partial<StreamLimits> = {}): Promise<{ server: SnapshotStreamServer; store: SnapshotStore }> {
  const started = await streamController(GATEWAY, tls, port, limits);
  cleanups.push(() => started.server.stop());
  return started;
}

function proxy(port: number, security: ControllerSecurity, gateway = GATEWAY, log = pino({ level: 'silent' })): { source: ControllerSnapshotSource; applied: string[] } {
  const applied: string[] = [];
  const source = new ControllerSnapshotSource({ address: `127.0.0.1:${port}`, security, gateway, pod: 'proxy-0', podNamespace: 'edge', log, initialBackoffMs: 20, maxBackoffMs: 100 });
  void source.start({ apply: async (s) => void applied.push(s.version) });
  cleanups.push(() => source.stop());
  return { source, applied };
}

const reason = (s: ControllerSnapshotSource) => (s.state().lastDisconnect as { reason: string } | null)?.reason;

function tls(): StreamTls {
  const t = streamTls(GATEWAY);
  cleanups.push(() => t.close());
  return t;
}

describe('snapshot stream security, proxy side', () => {
  it('connects with the published CA and presents its token', async () => {
    const t = tls();
    const { server } = await controller(t);
    const p = proxy(server.port, t.proxy);
    await expect.poll(() => p.applied.length).toBe(1);
    expect(p.source.state()).toMatchObject({ stream: 'connected', security: 'tls' });
    expect(t.checks).toEqual([{ token: 'token-of-the-proxy', gateway: GATEWAY }]);
  });

  it('refuses a controller whose certificate does not chain to its CA file, saying so', async () => {
    const t = tls();
    const stranger = tls();
    const { server } = await controller(t);
    const p = proxy(server.port, { ...t.proxy, caFile: stranger.proxy.caFile });
    await expect.poll(() => reason(p.source)).toMatch(/^TLS: the controller at 127\.0\.0\.1:\d+ is not trusted with the CA in \S+ca\.crt \(unable to verify the first certificate\); the CA file must be the ca\.crt of the tollgate-ca ConfigMap/);
    expect(p.source.state()).toMatchObject({ connects: 0 });
    // The handshake failed before any stream: the controller was never asked about a token.
    expect(t.checks).toEqual([]);
    expect(p.applied).toEqual([]);
  });

  it('reports the controller refusing its token, and retries', async () => {
    const t = tls();
    const { server } = await controller(t);
    writeFileSync(t.proxy.tokenFile, 'stale');
    const p = proxy(server.port, t.proxy);
    await expect.poll(() => reason(p.source)).toBe('UNAUTHENTICATED: unknown token');
    const goodToken = `${t.dir}/good-token`;
    writeFileSync(goodToken, 'token-of-the-proxy');
    const other = proxy(server.port, { ...t.proxy, tokenFile: goodToken }, 'edge/other');
    await expect.poll(() => reason(other.source)).toBe('PERMISSION_DENIED: not the proxy of edge/other');
    // The token file is read on every connect: the rotated token gets in without a restart.
    writeFileSync(t.proxy.tokenFile, 'token-of-the-proxy');
    await expect.poll(() => p.applied.length).toBe(1);
    expect(t.checks.filter((c) => c.gateway === GATEWAY).map((c) => c.token)).toContain('stale');
    expect(t.checks.filter((c) => c.gateway === GATEWAY).at(-1)).toEqual({ token: 'token-of-the-proxy', gateway: GATEWAY });
  });

  it('follows a CA file that changes, as a mounted ConfigMap does', async () => {
    const before = tls();
    const { server } = await controller(before);
    const p = proxy(server.port, before.proxy);
    await expect.poll(() => p.source.state().stream).toBe('connected');
    // A new CA: the controller comes back with it on the same port, the ConfigMap is updated.
    const port = server.port;
    await server.stop();
    const after = tls();
    await controller(after, port);
    await expect.poll(() => reason(p.source)).toMatch(/^TLS: /);
    writeFileSync(before.proxy.caFile, after.ca.certificate);
    writeFileSync(before.proxy.tokenFile, 'token-of-the-proxy');
    await expect.poll(() => p.source.state().connects).toBe(2);
    expect(after.checks).toEqual([{ token: 'token-of-the-proxy', gateway: GATEWAY }]);
  });

  it('a rotated serving certificate is presented to new connections; open streams stay', async () => {
    const t = tls();
    const { server, store } = await controller(t);
    const p = proxy(server.port, t.proxy);
    await expect.poll(() => p.applied.length).toBe(1);
    const peerSerial = async () => {
      const socket = connect({ host: '127.0.0.1', port: server.port, ca: t.ca.certificate, servername: 'localhost', ALPNProtocols: ['h2'] });
      await once(socket, 'secureConnect');
      const serial = socket.getPeerCertificate().serialNumber;
      socket.destroy();
      return serial;
    };
    const first = await peerSerial();
    expect(first).toBe(t.serving.current.serialNumber);
    t.serving.rotate();
    const second = await peerSerial();
    expect(second).toBe(t.serving.current.serialNumber);
    expect(second).not.toBe(first);
    // The proxy's stream was not dropped: a new version reaches it on the same connection.
    const config = { binds: [{ port: 18080, listeners: [{ name: 'main', protocol: 'HTTP', routes: [{ name: 'r2', backends: [{ host: '127.0.0.1:1' }] }] }] }] };
    store.offer(new Map([[GATEWAY, standaloneToSnapshot(validateStandaloneConfig(config, 'test'), { kind: 'controller', gateway: GATEWAY })]]));
    await expect.poll(() => p.applied.length).toBe(2);
    expect(p.source.state()).toMatchObject({ connects: 1 });
  });

  it('a stream the controller ends at its age is opened again at once with the token the proxy holds now; it keeps serving and is sent nothing again', async () => {
    const t = streamTls(GATEWAY, ['token-first', 'token-renewed']);
    cleanups.push(() => t.close());
    const { server } = await controller(t, 0, { maxStreamAgeMs: 1000 });
    const lines: { msg: string; reason?: string }[] = [];
    const log = pino({ level: 'info' }, new Writable({ write: (c: Buffer, _e, cb) => (lines.push(JSON.parse(c.toString()) as { msg: string }), cb()) }));
    const p = proxy(server.port, t.proxy, GATEWAY, log);
    await expect.poll(() => p.applied.length).toBe(1);
    const serving = p.source.state().version;
    // The kubelet renews the projected token in place.
    writeFileSync(t.proxy.tokenFile, 'token-renewed\n');
    await expect.poll(() => p.source.state().connects, { timeout: 10_000 }).toBe(2);
    expect(t.checks.map((c) => c.token)).toEqual(['token-first', 'token-renewed']);
    expect(lines.find((l) => l.msg.startsWith('the controller ended the snapshot stream'))).toMatchObject({
      msg: `the controller ended the snapshot stream (UNAVAILABLE: the stream reached its maximum age (1s, --snapshot-max-stream-age); reconnect); serving ${serving} and reconnecting now`,
    });
    // Nothing was lost or sent again: the proxy served its version throughout and still does.
    expect(p.applied).toEqual([serving]);
    expect(p.source.state()).toMatchObject({ stream: 'connected', version: serving, applied: 1 });
  });
});
