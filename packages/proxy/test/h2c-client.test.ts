// HTTP/2 from clients by prior knowledge on a plain HTTP listener (what Gateway API
// conformance's HTTPRouteBackendProtocolH2C sends): node:http2's client over a real socket, to
// an HTTP/1.1 backend and to an h2c backend, beside HTTP/1.1 on the same port.
import { once } from 'node:events';
import { connect as connectHttp2, constants, createServer as createHttp2Server, type ClientHttp2Session, type IncomingHttpHeaders, type ServerHttp2Stream } from 'node:http2';
import { connect, type AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { drainWithOneInFlight, h2Request as request, heldBackend, postUnfinishedBody } from './support/http2-client.js';
import { closedAfterEach, send, simpleConfig, startGateway, startUpstream, type TestGateway } from './helpers.js';

const cleanups = closedAfterEach();

async function gateway(routes: unknown[], config: Record<string, unknown> = {}): Promise<TestGateway> {
  const gw = await startGateway((port) => ({ ...(Object.keys(config).length ? { config } : {}), ...simpleConfig(port, routes) }));
  cleanups.push(() => gw.close());
  return gw;
}

function session(gw: TestGateway): ClientHttp2Session {
  const s = connectHttp2(`http://127.0.0.1:${gw.port}`);
  s.on('error', () => undefined);
  cleanups.push(async () => {
    s.destroy();
  });
  return s;
}


describe('HTTP/2 clients by prior knowledge', () => {
  it('reach an HTTP/1.1 backend: :authority is the host routes match and the backend gets, no pseudo-header goes out, requests share one session', async () => {
    const up = await startUpstream();
    cleanups.push(() => up.close());
    const gw = await gateway([{ name: 'api', hostnames: ['api.example.com'], backends: [{ host: up.host }] }]);
    const s = session(gw);
    const answers = await Promise.all([1, 2, 3].map((i) => request(s, { ':path': `/v1/x?n=${i}`, ':authority': 'api.example.com', 'x-custom': 'kept' }, `body ${i}`)));
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200]);
    const echoed = JSON.parse(answers[0]!.body) as { method: string; url: string; headers: Record<string, string>; body: string };
    expect(echoed.method).toBe('POST');
    expect(echoed.url).toBe('/v1/x?n=1');
    expect(echoed.body).toBe('body 1');
    expect(echoed.headers.host).toBe('api.example.com');
    expect(echoed.headers['x-custom']).toBe('kept');
    expect(Object.keys(echoed.headers).some((n) => n.startsWith(':'))).toBe(false);
    // Another host matches no route: the gateway's own answer, over HTTP/2.
    const none = await request(s, { ':path': '/', ':authority': 'other.example.com' });
    expect(none.status).toBe(404);
    expect(none.headers['x-tollgate-error']).toBe('TG_NO_ROUTE');
  });

  it('reach an h2c backend end to end (HTTPRouteBackendProtocolH2C), while HTTP/1.1 keeps working on the same port', async () => {
    const h2 = createHttp2Server();
    h2.on('stream', (stream: ServerHttp2Stream, headers: IncomingHttpHeaders) => {
      stream.respond({ ':status': 200, 'content-type': 'application/json' });
      stream.end(JSON.stringify({ path: headers[':path'], authority: headers[':authority'] }));
    });
    h2.listen(0, '127.0.0.1');
    await once(h2, 'listening');
    cleanups.push(() => new Promise<void>((r) => h2.close(() => r())));
    const gw = await gateway([{ name: 'h2c', backends: [{ host: `127.0.0.1:${(h2.address() as AddressInfo).port}`, protocol: 'H2C' }] }]);
    const s = session(gw);
    const a = await request(s, { ':path': '/', ':authority': `127.0.0.1:${gw.port}` });
    expect(a.status).toBe(200);
    expect(JSON.parse(a.body)).toEqual({ path: '/', authority: `127.0.0.1:${gw.port}` });
    const h1 = await send(`${gw.url}/over-http1`);
    expect(h1.status).toBe(200);
    expect(JSON.parse(h1.body)).toMatchObject({ path: '/over-http1' });
  });

  it('a rate limit answers 429 on the stream, and the session carries on', async () => {
    const up = await startUpstream();
    cleanups.push(() => up.close());
    const gw = await gateway([{ name: 'api', policies: { traffic: { rateLimit: { local: [{ requests: 1, unit: 'Minutes' }] } } }, backends: [{ host: up.host }] }]);
    const s = session(gw);
    expect((await request(s, { ':path': '/', ':authority': 'a' })).status).toBe(200);
    const limited = await request(s, { ':path': '/', ':authority': 'a' });
    expect(limited.status).toBe(429);
    expect(limited.body).toBe('rate limit exceeded');
    expect(limited.headers['x-ratelimit-limit']).toBe('1');
  });

  it('a body over maxRequestBodyBytes on a metered route is refused 413 on its stream only (RST_STREAM NO_ERROR): the session carries on', async () => {
    const up = await startUpstream();
    cleanups.push(() => up.close());
    const gw = await gateway([{ name: 'llm', policies: { traffic: { rateLimit: { local: [{ tokens: 100000, unit: 'Minutes' }] } } }, backends: [{ host: up.host }] }], { maxRequestBodyBytes: 1024 });
    const s = session(gw);
    const { headers, rstCode } = await postUnfinishedBody(s, 'a');
    expect(headers[':status']).toBe(413);
    expect(headers['x-tollgate-error']).toBe('TG_REQUEST_BODY_TOO_LARGE');
    expect(rstCode).toBe(constants.NGHTTP2_NO_ERROR);
    expect(s.destroyed).toBe(false);
    const small = await request(s, { ':path': '/v1/chat/completions', ':authority': 'a', 'content-type': 'application/json' }, JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }));
    expect(small.status).toBe(200);
  });

  it('a connection that sends nothing is closed after requestHeadersTimeout, as one that never finishes its headers', async () => {
    const up = await startUpstream();
    cleanups.push(() => up.close());
    const gw = await gateway([{ name: 'api', backends: [{ host: up.host }] }], { requestHeadersTimeout: '300ms' });
    const socket = connect(gw.port, '127.0.0.1');
    socket.on('error', () => undefined);
    await once(socket, 'connect');
    // Half the preface, then silence.
    socket.write('PRI * HTTP/2.0\r\n');
    await once(socket, 'close');
    expect((await send(`${gw.url}/`)).status).toBe(200);
  });

  it('the drain sends GOAWAY: a request in flight finishes, and the proxy stops', async () => {
    const held = await heldBackend();
    cleanups.push(() => held.up.close());
    const gw = await startGateway((port) => ({ config: { drainTimeout: '10s', drainIdleTimeout: '0s' }, ...simpleConfig(port, [{ name: 'api', backends: [{ host: held.up.host }] }]) }));
    expect(await drainWithOneInFlight(session(gw), 'a', held, () => gw.close())).toMatchObject({ status: 200, body: 'late but whole' });
  });
});
