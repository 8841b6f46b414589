// The proxy's way back to a controller, over TLS on loopback against the controller's real
// stream server: an attempt that nobody answers (a peer that takes the connection and says
// nothing, as a half-gone pod or a stale address does) is given up after connectTimeoutMs, and
// the next attempt dials a new connection instead of waiting on the stalled one; once a
// controller listens at the address again the proxy is back on it. An answered stream is not
// cut by that bound.
import { once } from 'node:events';
import { createServer, type Socket } from 'node:net';
import { Writable } from 'node:stream';
import type { SnapshotStreamServer, StreamLimits } from '@tollgate/controller';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { ControllerSnapshotSource } from '../src/source/controller-source.js';
import { streamController } from './support/stream-controller.js';
import { streamTls, type StreamTls } from './support/stream-tls.js';

const GATEWAY = 'edge/public';
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

async function controller(tls: StreamTls, port = 0, limits: Partial<StreamLimits> = {}): Promise<SnapshotStreamServer> {
  const { server } = await streamController(GATEWAY, tls, port, limits);
  cleanups.push(() => server.stop());
  return server;
}

/** A peer that takes every connection and never sends a byte; counts the connections (TCP, each from its own client port). */
async function silentPeer(): Promise<{ port: number; ports: Set<number>; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const ports = new Set<number>();
  const server = createServer((s) => {
    sockets.add(s);
    ports.add(s.remotePort!);
    s.on('error', () => {});
    s.on('close', () => sockets.delete(s));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const close = async () => {
    if (!server.listening) return;
    for (const s of sockets) s.destroy();
    server.close();
    await once(server, 'close');
  };
  cleanups.push(close);
  return { port: (server.address() as { port: number }).port, ports, close };
}

interface Line {
  msg: string;
  reason?: string;
}

function proxy(port: number, tls: StreamTls, connectTimeoutMs?: number): { source: ControllerSnapshotSource; applied: string[]; lines: Line[] } {
  const applied: string[] = [];
  const lines: Line[] = [];
  const log = pino({ level: 'info' }, new Writable({ write: (c: Buffer, _e, cb) => (lines.push(JSON.parse(c.toString()) as Line), cb()) }));
  const source = new ControllerSnapshotSource({ address: `127.0.0.1:${port}`, security: tls.proxy, gateway: GATEWAY, pod: 'proxy-0', podNamespace: 'edge', log, initialBackoffMs: 20, maxBackoffMs: 100, ...(connectTimeoutMs ? { connectTimeoutMs } : {}) });
  void source.start({ apply: async (s) => void applied.push(s.version) });
  cleanups.push(() => source.stop());
  return { source, applied, lines };
}

describe('the proxy finds its way back to a controller', () => {
  it('gives up an attempt nobody answers, dials a new connection for the next, and connects once a controller listens there', async () => {
    const t = streamTls(GATEWAY);
    cleanups.push(() => t.close());
    const peer = await silentPeer();
    const p = proxy(peer.port, t, 200);
    // Each attempt took a connection of its own: the stalled one was not waited on again.
    await expect.poll(() => peer.ports.size, { timeout: 20_000 }).toBeGreaterThanOrEqual(3);
    const lost = p.lines.filter((l) => l.msg.startsWith('snapshot stream to'));
    expect(lost.length).toBeGreaterThanOrEqual(2);
    expect(lost[0]!.reason).toBe(
      `UNAVAILABLE: no answer from the controller at 127.0.0.1:${peer.port} within 200 ms (the connection, its TLS handshake or the controller's check of the token did not complete); ` +
        "check that the controller's pod is Ready, that its Service has a ready endpoint and that nothing between drops the traffic (a NetworkPolicy)",
    );
    expect(['connecting', 'disconnected']).toContain(p.source.state().stream);
    expect(p.source.state()).toMatchObject({ applied: 0, connects: 0 });
    // The address is a controller's again (a pod that became ready behind the same Service).
    await peer.close();
    await controller(t, peer.port);
    await expect.poll(() => p.applied.length, { timeout: 20_000 }).toBe(1);
    expect(p.source.state()).toMatchObject({ stream: 'connected', connects: 1 });
  });

  it('an answered stream outlives the connect timeout: only the controller ends it, at its age, and the proxy is back at once', async () => {
    const t = streamTls(GATEWAY);
    cleanups.push(() => t.close());
    // The stream's age (1 s) is past the connect timeout (300 ms): a timer left running would end it first.
    const server = await controller(t, 0, { maxStreamAgeMs: 1000 });
    const p = proxy(server.port, t, 300);
    await expect.poll(() => p.applied.length).toBe(1);
    await expect.poll(() => p.source.state().connects, { timeout: 10_000 }).toBe(2);
    expect(p.lines.filter((l) => l.msg.startsWith('snapshot stream to'))).toEqual([]);
    expect(p.lines.filter((l) => l.msg.startsWith('the controller ended the snapshot stream')).map((l) => l.reason)).toEqual([expect.stringContaining('maximum age')]);
    expect(p.applied).toHaveLength(1);
  });
});
