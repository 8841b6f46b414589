// Backends called over HTTP/2 cleartext with prior knowledge (`protocol: H2C`, what a Service
// port's appProtocol kubernetes.io/h2c becomes): a real node:http2 server that speaks nothing
// but HTTP/2, so an HTTP/1.1 request never reaches it.
import { createServer, type Http2Server, type IncomingHttpHeaders, type ServerHttp2Session, type ServerHttp2Stream } from 'node:http2';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { decodeSnapshot, encodeSnapshot, withVersion, type ServiceBackendIR } from '@tollgate/api';
import { send, simpleConfig, startGateway, startUpstream, type TestGateway, type Upstream } from './helpers.js';
import { metricValue } from './support/gateway-files.js';
import { service } from './support/service-backend.js';

interface H2Backend {
  readonly host: string;
  /** Requests that reached it as HTTP/2 streams (an HTTP/1.1 request never gets that far). */
  readonly streams: { headers: IncomingHttpHeaders; body: string }[];
  close(): Promise<void>;
}

async function startH2cBackend(answer: (stream: ServerHttp2Stream, headers: IncomingHttpHeaders, body: string) => void): Promise<H2Backend> {
  const server: Http2Server = createServer();
  const streams: { headers: IncomingHttpHeaders; body: string }[] = [];
  const live = new Set<ServerHttp2Session>();
  server.on('session', (s: ServerHttp2Session) => {
    live.add(s);
    s.on('close', () => live.delete(s));
  });
  server.on('stream', (stream: ServerHttp2Stream, headers: IncomingHttpHeaders) => {
    const chunks: Buffer[] = [];
    stream.on('data', (c: Buffer) => chunks.push(c));
    stream.on('end', () => {
      const body = Buffer.concat(chunks).toString();
      streams.push({ headers, body });
      answer(stream, headers, body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    host: `127.0.0.1:${port}`,
    streams,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        // Sessions kept alive by the proxy's pool would hold close() open.
        for (const s of live) s.destroy();
      }),
  };
}

function echo(stream: ServerHttp2Stream, headers: IncomingHttpHeaders, body: string): void {
  stream.respond({ ':status': 201, 'content-type': 'application/json', 'x-served-by': 'h2c' });
  stream.end(JSON.stringify({ method: headers[':method'], path: headers[':path'], authority: headers[':authority'], scheme: headers[':scheme'], body }));
}

const open: (TestGateway | H2Backend | Upstream)[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((o) => o.close()));
});

describe('an h2c backend (protocol H2C)', () => {
  it('gets the request over HTTP/2 with prior knowledge: method, path and query, authority, body, headers; its answer is relayed', async () => {
    const backend = await startH2cBackend(echo);
    open.push(backend);
    const gw = await startGateway((port) => simpleConfig(port, [{ name: 'r', backends: [{ host: backend.host, protocol: 'H2C' }] }]));
    open.push(gw);
    const r = await send(`${gw.url}/v1/things?x=1`, { method: 'POST', headers: { host: 'api.example.com', 'content-type': 'text/plain', 'x-custom': 'kept', connection: 'keep-alive, x-hop', 'x-hop': 'dropped' }, body: 'hello over h2' });
    expect(r.status).toBe(201);
    expect(r.headers['x-served-by']).toBe('h2c');
    expect(JSON.parse(r.body)).toEqual({ method: 'POST', path: '/v1/things?x=1', authority: 'api.example.com', scheme: 'http', body: 'hello over h2' });
    const seen = backend.streams[0]!.headers;
    expect(seen['x-custom']).toBe('kept');
    expect(seen['x-hop']).toBeUndefined();
    expect(seen['x-forwarded-proto']).toBe('http');
    // Several requests share the pool's session.
    const again = await Promise.all([1, 2, 3].map((i) => send(`${gw.url}/n/${i}`)));
    expect(again.map((a) => a.status)).toEqual([201, 201, 201]);
  });

  it('the same backend without protocol H2C is spoken to in HTTP/1.1, which it refuses (502)', async () => {
    const backend = await startH2cBackend(echo);
    open.push(backend);
    const gw = await startGateway((port) => simpleConfig(port, [{ name: 'r', backends: [{ host: backend.host }] }]));
    open.push(gw);
    const r = await send(`${gw.url}/`);
    expect(r.status).toBeGreaterThanOrEqual(502);
    expect(backend.streams).toHaveLength(0);
  });

  it('timeouts.backendRequest bounds an h2c backend that never answers (504), and the next request still gets through', async () => {
    let hold = true;
    const backend = await startH2cBackend((stream, headers, body) => {
      if (hold) return; // the stream stays open, unanswered
      echo(stream, headers, body);
    });
    open.push(backend);
    const gw = await startGateway((port) => simpleConfig(port, [{ name: 'r', timeouts: { backendRequest: '300ms' }, backends: [{ host: backend.host, protocol: 'H2C' }] }]));
    open.push(gw);
    const r = await send(`${gw.url}/slow`);
    expect(r.status).toBe(504);
    expect(r.headers['x-tollgate-error']).toBe('TG_UPSTREAM_TIMEOUT');
    hold = false;
    expect((await send(`${gw.url}/fast`)).status).toBe(201);
  });

  it('a refused connection is answered 503 TG_UPSTREAM_REFUSED, as on HTTP/1.1', async () => {
    const backend = await startH2cBackend(echo);
    const host = backend.host;
    await backend.close();
    const gw = await startGateway((port) => simpleConfig(port, [{ name: 'r', backends: [{ host, protocol: 'H2C' }] }]));
    open.push(gw);
    const r = await send(`${gw.url}/`);
    expect(r.status).toBe(503);
    expect(r.headers['x-tollgate-error']).toBe('TG_UPSTREAM_REFUSED');
  });

  it('a response streamed in parts reaches the client whole, with the backend status', async () => {
    const backend = await startH2cBackend((stream) => {
      stream.respond({ ':status': 200, 'content-type': 'text/event-stream' });
      stream.write('data: one\n\n');
      setImmediate(() => stream.end('data: [DONE]\n\n'));
    });
    open.push(backend);
    const gw = await startGateway((port) => simpleConfig(port, [{ name: 'r', backends: [{ host: backend.host, protocol: 'H2C' }] }]));
    open.push(gw);
    const r = await send(`${gw.url}/stream`);
    expect(r.status).toBe(200);
    expect(r.body).toBe('data: one\n\ndata: [DONE]\n\n');
  });

  it('an HTTP/1.1-only backend called as h2c fails the request with a 502, and the proxy keeps serving', async () => {
    const up = await startUpstream();
    open.push(up);
    const gw = await startGateway((port) => simpleConfig(port, [{ name: 'r', backends: [{ host: up.host, protocol: 'H2C' }] }]));
    open.push(gw);
    const r = await send(`${gw.url}/`);
    expect(r.status).toBe(502);
    expect(r.headers['x-tollgate-error']).toBe('TG_UPSTREAM_RESET');
    expect((await send(`${gw.url}/`)).status).toBe(502);
  });

  it('a Service backend with protocol h2c (a controller snapshot): an endpoint that refuses is skipped for the next, counted as an unsent retry', async () => {
    const backend = await startH2cBackend(echo);
    open.push(backend);
    const refusing = await startH2cBackend(echo);
    const refusedPort = Number(refusing.host.split(':')[1]);
    await refusing.close();
    const gw = await startGateway((port) => simpleConfig(port, [{ name: 'r', backends: [{ host: backend.host }] }]));
    open.push(gw);
    const svc: ServiceBackendIR = { ...service('h2'), protocol: 'h2c' };
    const current = gw.gateway.snapshot;
    const next = withVersion({
      source: { kind: 'controller', gateway: 'default/gw' },
      binds: current.binds.map((b) => ({ ...b, listeners: b.listeners.map((l) => ({ ...l, routes: l.routes.map((r) => ({ ...r, backends: [svc] })) })) })),
      // Sorted as the controller sorts them: round robin sends one of the first two requests to the refusing one.
      endpoints: [
        {
          name: svc.name,
          endpoints: [
            { address: '127.0.0.1', port: Math.min(refusedPort, Number(backend.host.split(':')[1])) },
            { address: '127.0.0.1', port: Math.max(refusedPort, Number(backend.host.split(':')[1])) },
          ],
        },
      ],
    });
    await gw.gateway.runtime.apply(decodeSnapshot(encodeSnapshot(next)));
    const answers = await Promise.all([1, 2, 3, 4].map((i) => send(`${gw.url}/svc/${i}`)));
    expect(answers.map((a) => a.status)).toEqual([201, 201, 201, 201]);
    expect(backend.streams).toHaveLength(4);
    expect(await metricValue(gw, 'tollgate_upstream_unsent_retries_total{route="main/r",error="TG_UPSTREAM_REFUSED"}')).toBeGreaterThan(0);
  });

  it('protocol H2C with tls is refused at load, naming the field', async () => {
    await expect(startGateway((port) => simpleConfig(port, [{ name: 'r', backends: [{ host: '127.0.0.1:1', protocol: 'H2C', tls: {} }] }]))).rejects.toThrow(/backends\[0\]\.protocol.*H2C is HTTP\/2 over cleartext/);
  });
});
