// gRPC through the standalone proxy: a real grpc-js server behind it as an h2c backend, a real
// grpc-js client in front (HTTP/2 with prior knowledge on the plain listener). The routes are
// what a GRPCRoute becomes (a method match is a path match on /<service>/<method>).
import * as grpc from '@grpc/grpc-js';
import { connect, constants, createServer as createH2Server, type ServerHttp2Stream } from 'node:http2';
import { createServer as createTcpServer, type AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { freePort, simpleConfig, startGateway, type TestGateway } from './helpers.js';
import { FAIL, HOLD, STREAM, UNARY, frame, grpcCall, startGrpcBackend, type GrpcBackend, type Msg, type Outcome } from './support/grpc-peers.js';

const call = (gw: TestGateway, path: string, request: Msg, streaming = false, metadata: Record<string, string> = {}): Promise<Outcome> => grpcCall(gw.port, path, request, { streaming, metadata });

const open: { close(): Promise<void> }[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((o) => o.close()));
});

async function backends(...names: string[]): Promise<GrpcBackend[]> {
  const out = await Promise.all(names.map((n) => startGrpcBackend(n)));
  open.push(...out);
  return out;
}

async function gateway(routes: unknown[]): Promise<TestGateway> {
  const gw = await startGateway((port) => simpleConfig(port, routes));
  open.push(gw);
  return gw;
}

const h2c = (b: GrpcBackend, weight?: number) => ({ host: b.host, protocol: 'H2C', ...(weight !== undefined ? { weight } : {}) });

describe('gRPC through the gateway (h2c on both sides)', () => {
  it('passes a unary call and a server-streaming call, with metadata in, and trailers and status out', async () => {
    const [a] = await backends('a');
    const gw = await gateway([{ name: 'grpc', backends: [h2c(a!)] }]);
    const unary = await call(gw, UNARY, { text: 'hello' }, false, { 'x-client': 'one' });
    expect(unary.code).toBe(grpc.status.OK);
    expect(unary.messages).toEqual([expect.objectContaining({ text: 'hello', server: 'a' })]);
    expect(unary.messages[0]!.headers!['x-client']).toBe('one');
    expect(unary.trailers['x-trailer']).toBe('from-a');
    const streamed = await call(gw, STREAM, { text: '5' }, true);
    expect(streamed.code).toBe(grpc.status.OK);
    expect(streamed.messages.map((m) => m.text)).toEqual(['part 0', 'part 1', 'part 2', 'part 3', 'part 4']);
  });

  it("relays a backend's error status, message and trailing metadata (a Trailers-Only answer)", async () => {
    const [a] = await backends('a');
    const gw = await gateway([{ name: 'grpc', backends: [h2c(a!)] }]);
    const r = await call(gw, FAIL, { text: 'x' });
    expect(r.code).toBe(grpc.status.NOT_FOUND);
    expect(r.details).toBe('no such thing: 100%');
    expect(r.trailers['x-why']).toBe('missing');
  });

  it('routes by method (exact path, service prefix) and by header', async () => {
    const [a, b, c] = await backends('a', 'b', 'c');
    const gw = await gateway([
      { name: 'by-header', matches: [{ path: { type: 'Exact', value: UNARY }, headers: [{ name: 'x-version', value: 'two' }] }], backends: [h2c(c!)] },
      { name: 'unary', matches: [{ path: { type: 'Exact', value: UNARY } }], backends: [h2c(a!)] },
      { name: 'service', matches: [{ path: { type: 'PathPrefix', value: '/test.Echo' } }], backends: [h2c(b!)] },
    ]);
    expect((await call(gw, UNARY, { text: '1' })).messages[0]!.server).toBe('a');
    expect((await call(gw, STREAM, { text: '1' }, true)).messages[0]!.server).toBe('b');
    expect((await call(gw, UNARY, { text: '1' }, false, { 'x-version': 'two' })).messages[0]!.server).toBe('c');
  });

  it('splits calls by weight: a backend of weight 0 gets none', async () => {
    const [a, b] = await backends('a', 'b');
    const gw = await gateway([{ name: 'grpc', backends: [h2c(a!, 0), h2c(b!, 1)] }]);
    const servers = await Promise.all(Array.from({ length: 8 }, () => call(gw, UNARY, { text: 'w' })));
    expect(servers.map((s) => s.messages[0]!.server)).toEqual(Array(8).fill('b'));
    expect(a!.calls).toEqual([]);
  });

  it('answers UNIMPLEMENTED (12) to a call no route matches', async () => {
    const [a] = await backends('a');
    const gw = await gateway([{ name: 'unary', matches: [{ path: { type: 'Exact', value: UNARY } }], backends: [h2c(a!)] }]);
    const r = await call(gw, STREAM, { text: '1' }, true);
    expect(r.code).toBe(grpc.status.UNIMPLEMENTED);
    expect(r.details).toContain('no route');
    expect(a!.calls).toEqual([]);
  });

  it('answers UNAVAILABLE (14) when the backend refuses connections', async () => {
    const gone = await freePort();
    const gw = await gateway([{ name: 'grpc', backends: [{ host: `127.0.0.1:${gone}`, protocol: 'H2C' }] }]);
    const r = await call(gw, UNARY, { text: 'x' });
    expect(r.code).toBe(grpc.status.UNAVAILABLE);
  });

  it('answers RESOURCE_EXHAUSTED (8) to a call over the rate limit', async () => {
    const [a] = await backends('a');
    const gw = await gateway([{ name: 'grpc', policies: { traffic: { rateLimit: { local: [{ requests: 1, unit: 'Minutes' }] } } }, backends: [h2c(a!)] }]);
    expect((await call(gw, UNARY, { text: '1' })).code).toBe(grpc.status.OK);
    const refused = await call(gw, UNARY, { text: '2' });
    expect(refused.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
    expect(a!.calls).toEqual([UNARY]);
  });

  it("takes grpc-timeout as the call's deadline (DEADLINE_EXCEEDED, 4), and the route's timeouts.request when that is sooner; a call already answering gets it in its trailers", async () => {
    // A backend that never answers and keeps no deadline of its own (a grpc-js server would
    // end the call at grpc-timeout itself): only the gateway can end these calls.
    const held: ServerHttp2Stream[] = [];
    const silent = createH2Server();
    silent.on('stream', (stream: ServerHttp2Stream, headers) => {
      held.push(stream);
      // The stream method answers one message, then nothing more.
      if (headers[':path'] !== STREAM) return;
      stream.respond({ ':status': 200, 'content-type': 'application/grpc' });
      stream.write(frame({ text: 'first', server: 'silent' }));
    });
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    open.push({ close: () => new Promise<void>((resolve) => {
      for (const s of held) s.close();
      silent.close(() => resolve());
    }) });
    const host = `127.0.0.1:${(silent.address() as AddressInfo).port}`;
    const gw = await gateway([
      { name: 'short', matches: [{ path: { type: 'Exact', value: HOLD }, headers: [{ name: 'x-route', value: 'short' }] }], timeouts: { request: '200ms' }, backends: [{ host, protocol: 'H2C' }] },
      { name: 'grpc', backends: [{ host, protocol: 'H2C' }] },
    ]);
    // A raw HTTP/2 client: grpc-js would end the call at its own deadline, whatever the gateway did.
    const rawCall = (headers: Record<string, string>, path = HOLD) =>
      new Promise<{ status: number; error: unknown; trailers: Record<string, unknown>; bytes: number }>((resolve, reject) => {
        const session = connect(gw.url);
        session.on('error', reject);
        const req = session.request({ ':method': 'POST', ':path': path, 'content-type': 'application/grpc', te: 'trailers', ...headers });
        let status = 0;
        let error: unknown;
        let bytes = 0;
        req.on('response', (h) => {
          status = Number(h[constants.HTTP2_HEADER_STATUS]);
          error = h['x-tollgate-error'];
        });
        req.on('trailers', (t) => {
          session.close();
          resolve({ status, error, trailers: t, bytes });
        });
        req.on('data', (c: Buffer) => (bytes += c.length));
        req.on('error', reject);
        req.end(frame({ text: 'wait' }));
      });
    const byDeadline = await rawCall({ 'grpc-timeout': '150m' });
    expect(byDeadline).toMatchObject({ status: 200, error: 'TG_REQUEST_TIMEOUT' });
    expect(byDeadline.trailers['grpc-status']).toBe('4');
    // The route's 200ms ends the call before the client's hour.
    const byRoute = await rawCall({ 'grpc-timeout': '1H', 'x-route': 'short' });
    expect(byRoute.trailers['grpc-status']).toBe('4');
    // Headers and a message went out already: the deadline ends the call with its status as trailers, not a reset.
    const midStream = await rawCall({ 'grpc-timeout': '150m' }, STREAM);
    expect(midStream.status).toBe(200);
    expect(midStream.bytes).toBe(frame({ text: 'first', server: 'silent' }).length);
    expect(midStream.trailers['grpc-status']).toBe('4');
    expect(held).toHaveLength(3);
  });

  it("relays an HTTP/1.1 backend's trailers end to end only: a hostile connection trailer is dropped, the stream completes", async () => {
    const raw = createTcpServer((socket) => {
      socket.once('data', () =>
        socket.end('HTTP/1.1 200 OK\r\ncontent-type: application/grpc\r\ntransfer-encoding: chunked\r\n\r\n2\r\nok\r\n0\r\ngrpc-status: 0\r\nconnection: close\r\nx-kept: yes\r\n\r\n'),
      );
    });
    await new Promise<void>((resolve) => raw.listen(0, '127.0.0.1', resolve));
    open.push({ close: () => new Promise<void>((resolve) => raw.close(() => resolve())) });
    const gw = await gateway([{ name: 'h1', backends: [{ host: `127.0.0.1:${(raw.address() as AddressInfo).port}` }] }]);
    const trailers = await new Promise<Record<string, unknown>>((resolve, reject) => {
      const session = connect(gw.url);
      session.on('error', reject);
      const req = session.request({ ':method': 'POST', ':path': UNARY, 'content-type': 'application/grpc' });
      req.on('trailers', (t) => {
        session.close();
        resolve(t);
      });
      req.on('data', () => {});
      req.on('error', reject);
      req.end(frame({ text: 'x' }));
    });
    expect(trailers).toMatchObject({ 'grpc-status': '0', 'x-kept': 'yes' });
    expect(trailers['connection']).toBeUndefined();

  });
});
