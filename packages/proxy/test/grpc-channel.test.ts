// The gRPC channel the policies' services are called through (rate limit, external
// authorization, external processing), against a real gRPC server (grpc-js) and, for what a
// gRPC server never does (an HTTP error status), a plain HTTP/2 server.
import { once } from 'node:events';
import { createServer as createH2Server, type Http2Server } from 'node:http2';
import type { AddressInfo } from 'node:net';
import * as grpc from '@grpc/grpc-js';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { GrpcCallError, GrpcChannel } from '../src/grpc/channel.js';
import { frame, MessageReader } from '../src/grpc/framing.js';

const raw = (b: Buffer): Buffer => b;
const text = (s: string): Buffer => Buffer.from(s);

interface Peer {
  readonly server: grpc.Server;
  readonly port: number;
}

/** A gRPC server with a unary Echo (status and size chosen by the request) and a bidi Chat. */
async function startPeer(port = 0): Promise<Peer> {
  const server = new grpc.Server();
  server.register(
    '/test.T/Echo',
    (call: grpc.ServerUnaryCall<Buffer, Buffer>, cb: grpc.sendUnaryData<Buffer>) => {
      const req = call.request.toString();
      if (req === 'hang') return;
      if (req.startsWith('fail:')) return cb({ code: grpc.status.PERMISSION_DENIED, details: req.slice(5) });
      if (req.startsWith('big:')) return cb(null, Buffer.alloc(Number(req.slice(4)), 1));
      cb(null, text(`echo ${req}`));
    },
    raw,
    raw,
    'unary',
  );
  server.register(
    '/test.T/Many',
    (call: grpc.ServerWritableStream<Buffer, Buffer>) => {
      call.write(text('one'));
      call.write(text('two'));
      call.end();
    },
    raw,
    raw,
    'serverStream',
  );
  server.register(
    '/test.T/Chat',
    (call: grpc.ServerDuplexStream<Buffer, Buffer>) => {
      call.on('data', (m: Buffer) => {
        if (m.toString() === 'bye') return call.emit('error', { code: grpc.status.RESOURCE_EXHAUSTED, details: 'enough' });
        call.write(text(`re ${m.toString()}`));
      });
      call.on('end', () => call.end());
    },
    raw,
    raw,
    'bidi',
  );
  const bound = await new Promise<number>((resolve, reject) => server.bindAsync(`127.0.0.1:${port}`, grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))));
  return { server, port: bound };
}

const stopPeer = (p: Peer): Promise<void> => new Promise((resolve) => p.server.tryShutdown(() => resolve()));

const open: { channels: GrpcChannel[]; peers: Peer[]; h2: Http2Server[] } = { channels: [], peers: [], h2: [] };
afterEach(async () => {
  for (const c of open.channels.splice(0)) c.close();
  for (const p of open.peers.splice(0)) p.server.forceShutdown();
  for (const s of open.h2.splice(0)) s.close();
});

function channel(port: number, options = {}): GrpcChannel {
  const c = new GrpcChannel(`127.0.0.1:${port}`, 'test service', options);
  open.channels.push(c);
  return c;
}

const echo = (c: GrpcChannel, body: string, timeoutMs = 5000): Promise<string> => c.unary('/test.T/Echo', text, (b) => b.toString(), body, timeoutMs);

async function failure(p: Promise<unknown>): Promise<GrpcCallError> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(GrpcCallError);
  return err as GrpcCallError;
}

describe('MessageReader', () => {
  it('reads messages split and joined anywhere', () => {
    const wire = Buffer.concat([frame(text('one')), frame(Buffer.alloc(0)), frame(text('three'))]);
    for (const size of [1, 2, 3, 7, wire.length]) {
      const reader = new MessageReader(1024);
      const got: string[] = [];
      for (let i = 0; i < wire.length; i += size) {
        const read = reader.push(wire.subarray(i, i + size));
        if (typeof read === 'string') throw new Error(read);
        got.push(...read.map((m) => m.toString()));
      }
      expect(got).toEqual(['one', '', 'three']);
    }
  });

  it('refuses a message declared over its bound before reading it, and a compressed one', () => {
    const head = Buffer.from([0, 0, 4, 0, 1]);
    expect(new MessageReader(1024).push(head)).toMatch(/262145 bytes is over the 1024/);
    expect(new MessageReader(1024).push(Buffer.from([1, 0, 0, 0, 1, 65]))).toMatch(/compressed/);
  });
});

describe('GrpcChannel against a gRPC server', () => {
  it('makes unary calls, and names the status and message of a failed one', async () => {
    const peer = await startPeer();
    open.peers.push(peer);
    const c = channel(peer.port);
    expect(await echo(c, 'hello')).toBe('echo hello');
    const err = await failure(echo(c, 'fail:not yours, 100% sure'));
    expect(err.grpcCode).toBe('PERMISSION_DENIED');
    expect(err.detail).toBe('not yours, 100% sure');
    expect(c.connected && c.attempted && c.connectedNow).toBe(true);
  });

  it('refuses a unary answer of more than one message: INTERNAL', async () => {
    const peer = await startPeer();
    open.peers.push(peer);
    const c = channel(peer.port);
    const err = await failure(c.unary('/test.T/Many', text, (b) => b.toString(), 'x', 5000));
    expect(err.grpcCode).toBe('INTERNAL');
    expect(err.detail).toMatch(/more than one message/);
    expect(await echo(c, 'after')).toBe('echo after');
  });

  it('ends a call at its deadline, DEADLINE_EXCEEDED, and the channel keeps serving', async () => {
    const peer = await startPeer();
    open.peers.push(peer);
    const c = channel(peer.port);
    expect((await failure(echo(c, 'hang', 200))).grpcCode).toBe('DEADLINE_EXCEEDED');
    expect(await echo(c, 'after')).toBe('echo after');
  });

  it('refuses an answer over its receive bound: RESOURCE_EXHAUSTED', async () => {
    const peer = await startPeer();
    open.peers.push(peer);
    const c = channel(peer.port, { maxReceiveBytes: 1000 });
    expect(await echo(c, 'big:1000')).toHaveLength(1000);
    const err = await failure(echo(c, 'big:1001'));
    expect(err.grpcCode).toBe('RESOURCE_EXHAUSTED');
    expect(err.detail).toMatch(/1001 bytes is over the 1000/);
    const send = channel(peer.port, { maxSendBytes: 4 });
    expect((await failure(echo(send, 'hello'))).grpcCode).toBe('RESOURCE_EXHAUSTED');
  });

  it('fails calls at once while the service is down, and connects when it comes up', async () => {
    const probe = await startPeer();
    const port = probe.port;
    await stopPeer(probe);
    const c = channel(port);
    await vi.waitFor(() => expect(c.attempted).toBe(true));
    expect(c.connected).toBe(false);
    expect((await failure(echo(c, 'while down', 60_000))).grpcCode).toBe('UNAVAILABLE');
    const peer = await startPeer(port);
    open.peers.push(peer);
    await vi.waitFor(() => expect(c.connectedNow).toBe(true), { timeout: 10_000 });
    expect(await echo(c, 'up')).toBe('echo up');
  });

  it('connects again at once when a connected service restarts', async () => {
    const first = await startPeer();
    const c = channel(first.port);
    expect(await echo(c, 'before')).toBe('echo before');
    first.server.forceShutdown();
    const second = await startPeer(first.port);
    open.peers.push(second);
    // A call in the moment the first server went away may fail UNAVAILABLE (the channel learns
    // of it from the connection); the channel then connects to the second by itself.
    await vi.waitFor(async () => expect(await echo(c, 'after')).toBe('echo after'), { timeout: 10_000 });
  });

  it('a closed channel fails its calls UNAVAILABLE and does not connect again', async () => {
    const peer = await startPeer();
    open.peers.push(peer);
    const c = channel(peer.port);
    const hung = failure(echo(c, 'hang', 60_000));
    await vi.waitFor(() => expect(c.connectedNow).toBe(true));
    c.close();
    expect((await hung).grpcCode).toBe('UNAVAILABLE');
    expect((await failure(echo(c, 'later'))).grpcCode).toBe('UNAVAILABLE');
    expect(c.connectedNow).toBe(false);
  });

  it('streams both ways on a duplex call; the server\'s status ends it', async () => {
    const peer = await startPeer();
    open.peers.push(peer);
    const c = channel(peer.port);
    const got: string[] = [];
    let ended: ((e: GrpcCallError | null) => void) | null = null;
    const end = new Promise<GrpcCallError | null>((resolve) => (ended = resolve));
    const call = c.duplex('/test.T/Chat', text, (b) => b.toString(), { message: (m) => got.push(m), end: (e) => ended!(e) });
    call.write('a');
    call.write('b');
    await vi.waitFor(() => expect(got).toEqual(['re a', 're b']));
    call.write('bye');
    const err = await end;
    expect(err?.grpcCode).toBe('RESOURCE_EXHAUSTED');
    expect(err?.detail).toBe('enough');

    // A half-closed call ends with OK once the server ends too.
    const done = new Promise<GrpcCallError | null>((resolve) => {
      const second = c.duplex('/test.T/Chat', text, (b) => b.toString(), { message: () => undefined, end: resolve });
      second.write('x');
      second.end();
    });
    expect(await done).toBeNull();
  });
});

describe('GrpcChannel against a server that is not gRPC', () => {
  it('maps an HTTP error status to its gRPC status (503: UNAVAILABLE)', async () => {
    const server = createH2Server((_req, res) => res.writeHead(503).end());
    open.h2.push(server);
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const c = channel((server.address() as AddressInfo).port);
    const err = await failure(echo(c, 'x'));
    expect(err.grpcCode).toBe('UNAVAILABLE');
    expect(err.detail).toMatch(/HTTP 503/);
  });
});
