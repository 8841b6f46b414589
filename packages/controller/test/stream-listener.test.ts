// The stream's gRPC server alone, over real gRPC on loopback: it serves each stream to its
// handler within its message bound, and stop() drains, then cuts what is still open after the
// grace period.
import { Writable } from 'node:stream';
import * as grpc from '@grpc/grpc-js';
import { SNAPSHOT_SERVICE, SNAPSHOT_STREAM_PATH, type ProxyMessage, type SnapshotPush } from '@tollgate/api/snapshot-stream';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULT_STREAM_LIMITS } from '../src/snapshots/stream-limits.js';
import { StreamListener, type StreamCall } from '../src/snapshots/stream-listener.js';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

/** A listener whose handler hands each stream to the test; `logs` has what it logged. */
async function listen(shutdownGraceMs: number) {
  const logs: string[] = [];
  const log = pino({ level: 'debug' }, new Writable({ write: (c: Buffer, _e, cb) => (logs.push(c.toString()), cb()) }));
  const listener = new StreamListener({ addr: { host: '127.0.0.1', port: 0 }, limits: { ...DEFAULT_STREAM_LIMITS, maxMessageBytes: 1024 }, shutdownGraceMs, log });
  const calls: StreamCall[] = [];
  let arrived: (c: StreamCall) => void = () => undefined;
  const address = await listener.start(grpc.ServerCredentials.createInsecure(), (call) => (calls.push(call), arrived(call)));
  cleanups.push(() => listener.stop());
  const client = new grpc.Client(address, grpc.credentials.createInsecure());
  cleanups.push(() => client.close());
  const open = () => {
    const call = client.makeBidiStreamRequest<ProxyMessage, SnapshotPush>(SNAPSHOT_STREAM_PATH, SNAPSHOT_SERVICE.Stream.requestSerialize, SNAPSHOT_SERVICE.Stream.responseDeserialize);
    call.on('error', () => undefined);
    const status = new Promise<grpc.StatusObject>((resolve) => call.once('status', resolve));
    const served = new Promise<StreamCall>((resolve) => (arrived = resolve));
    return { call, status, served };
  };
  return { listener, address, logs, open, calls };
}

describe('stream listener', () => {
  it('binds the address it is given and serves each stream to the handler, in its message bound', async () => {
    const t = await listen(5_000);
    expect(t.address).toBe(`127.0.0.1:${t.listener.port}`);
    const small = t.open();
    small.call.write({ hello: { gateway: 'edge/public', pod: 'p', podNamespace: 'edge', version: '' } });
    const served = await small.served;
    const first = await new Promise<ProxyMessage>((resolve) => served.once('data', resolve));
    expect(first).toMatchObject({ hello: { gateway: 'edge/public' } });
    served.end();
    expect((await small.status).code).toBe(grpc.status.OK);
    const big = t.open();
    big.call.write({ nack: { nonce: 'n', error: 'x'.repeat(2048), wantFull: false } });
    // Messages are read (and their size checked) as the handler takes them.
    const reading = await big.served;
    reading.on('error', () => undefined);
    reading.on('data', () => expect.unreachable('a message over the bound reached the handler'));
    expect(grpc.status[(await big.status).code]).toBe('RESOURCE_EXHAUSTED');
  });

  it('stop lets streams that end in time end, and logs no cut', async () => {
    const t = await listen(600_000);
    const s = t.open();
    s.call.write({ hello: { gateway: 'edge/public', pod: 'p', podNamespace: 'edge', version: '' } });
    const served = await s.served;
    const stopped = t.listener.stop();
    served.end();
    await stopped;
    expect((await s.status).code).toBe(grpc.status.OK);
    expect(t.logs).toEqual([]);
  });

  it('stop cuts the streams still open after the grace period', async () => {
    const t = await listen(50);
    const s = t.open();
    s.call.write({ hello: { gateway: 'edge/public', pod: 'p', podNamespace: 'edge', version: '' } });
    await s.served;
    // The handler never ends the stream and the client never closes its side.
    await t.listener.stop();
    expect((await s.status).code).not.toBe(grpc.status.OK);
    expect(t.logs.join('')).toContain('snapshot streams still open after the grace period; cutting them');
  });
});
