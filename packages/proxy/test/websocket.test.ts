// WebSocket upgrades through the proxy, over real sockets, with real peers: the `ws` package as
// the backend and as the client, and Node's own WebSocket client. The upgrade request goes
// through routing, authentication, rate limits and header filters like any request; a 101 is
// relayed with the backend's headers and the bytes piped both ways; a refusal or a backend's
// other answer is an ordinary HTTP response. Bounds: the idle timeout, the cap on open
// upgraded connections, the drain.
import { once } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer as createHttp2Server } from 'node:http2';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { stringify } from 'yaml';
import { decodeSnapshot, encodeSnapshot, withVersion } from '@tollgate/api';
import { loadConfigFile } from '../src/config/load-file.js';
import { endpointsOf, service } from './support/service-backend.js';
import { issueTestCertificate, until } from '@tollgate/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closedAfterEach, openTrace, send, simpleConfig, startGateway, startUpstream, type TestGateway } from './helpers.js';
import { metricValue } from './support/gateway-files.js';
import { closed, dial, roundTrip, startRawWsBackend, startWsEcho, type WsBackend } from './support/ws-peers.js';

const cleanups = closedAfterEach();
let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tollgate-ws-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function echoBackend(): Promise<WsBackend> {
  const b = await startWsEcho();
  cleanups.push(() => b.close());
  return b;
}

async function gateway(routes: unknown[], config: Record<string, unknown> = {}): Promise<TestGateway> {
  const gw = await startGateway((port) => ({ ...(Object.keys(config).length ? { config } : {}), ...simpleConfig(port, routes) }));
  cleanups.push(() => gw.close());
  return gw;
}

function wsUrl(gw: TestGateway, path: string): string {
  return `ws://127.0.0.1:${gw.port}${path}`;
}

const KEY = 'sk-realtime-team-0123456789abcdef';

/** A TCP client for requests no WebSocket library sends; `halfOpen`: it keeps its side open when the proxy ends its own. */
async function rawClient(port: number, halfOpen = false): Promise<{ socket: Socket; text: () => string; gone: Promise<unknown> }> {
  const socket = connect({ port, host: '127.0.0.1', allowHalfOpen: halfOpen });
  await once(socket, 'connect');
  const chunks: Buffer[] = [];
  socket.on('data', (c: Buffer) => chunks.push(c));
  socket.on('error', () => undefined);
  const gone = new Promise((resolve) => socket.on('close', resolve));
  return { socket, text: () => Buffer.concat(chunks).toString(), gone };
}

describe('a WebSocket through the proxy', () => {
  it('echoes text and binary frames; the 101 carries the backend headers, the subprotocol it chose and the route filters', async () => {
    const backend = await echoBackend();
    const gw = await gateway([
      {
        name: 'ws',
        filters: [
          { type: 'RequestHeaderModifier', requestHeaderModifier: { add: [{ name: 'x-route', value: 'ws' }] } },
          { type: 'ResponseHeaderModifier', responseHeaderModifier: { add: [{ name: 'x-gateway', value: 'tollgate' }] } },
        ],
        backends: [{ host: backend.host }],
      },
    ]);
    const d = await dial(wsUrl(gw, '/ws?room=1'), { protocols: ['chat.v2', 'chat.v1'] });
    if (d.kind !== 'open') throw new Error(`refused ${d.status}`);
    cleanups.push(async () => d.ws.terminate());
    expect(d.ws.protocol).toBe('chat.v2');
    expect(d.headers['x-backend']).toBe('ws-echo');
    expect(d.headers['x-gateway']).toBe('tollgate');
    const text = await roundTrip(d.ws, 'Websocket Support!');
    expect(text).toEqual({ data: Buffer.from('Websocket Support!'), binary: false });
    const bin = await roundTrip(d.ws, Buffer.from([1, 2, 3, 4, 5, 6, 7]));
    expect(bin).toEqual({ data: Buffer.from([1, 2, 3, 4, 5, 6, 7]), binary: true });
    // A message larger than one TCP segment's worth in each direction.
    const big = Buffer.alloc(256 * 1024, 7);
    expect((await roundTrip(d.ws, big)).data.equals(big)).toBe(true);
    const seen = backend.upgrades[0]!;
    expect(seen['x-route']).toBe('ws');
    expect(seen['sec-websocket-protocol']).toBe('chat.v2,chat.v1');
    expect(seen['x-forwarded-for']).toBe('127.0.0.1');
    expect(seen.upgrade).toBe('websocket');
    expect(await metricValue(gw, 'tollgate_websocket_connections')).toBe(1);
    expect(await metricValue(gw, 'tollgate_requests_total{route="main/ws",status="101"}')).toBe(1);
    d.ws.close(1000, 'bye');
    expect(await closed(d.ws)).toBe(1000);
    await until(async () => (await metricValue(gw, 'tollgate_websocket_connections')) === 0);
    // The connection's own log line: bytes each way (frames and their headers), duration, who closed.
    const line = await until(() => gw.logs.lines.find((l) => l.msg === 'websocket closed'));
    expect(line).toMatchObject({ route: 'main/ws', upstream: backend.host, path: '/ws' });
    expect(line.fromClient as number).toBeGreaterThan(big.length);
    expect(line.toClient as number).toBeGreaterThan(big.length);
    expect(typeof line.durationMs).toBe('number');
    expect(await metricValue(gw, 'tollgate_websocket_bytes_total{route="main/ws",direction="client_to_backend"}')).toBe(line.fromClient);
  });

  it('wss: a WebSocket over an HTTPS listener (TLS terminated at the proxy)', async () => {
    const backend = await echoBackend();
    const ca = issueTestCertificate({ commonName: 'ws-test-ca', ca: true });
    const leaf = issueTestCertificate({ commonName: 'ws.example.com', names: ['ws.example.com'], issuer: ca });
    await writeFile(join(dir, 'ws.crt'), leaf.cert);
    await writeFile(join(dir, 'ws.key'), leaf.key);
    const gw = await startGateway((port) => ({
      binds: [{ port, address: '127.0.0.1', listeners: [{ name: 'tls', protocol: 'HTTPS', tls: { certificates: [{ certFile: join(dir, 'ws.crt'), keyFile: join(dir, 'ws.key') }] }, routes: [{ name: 'ws', backends: [{ host: backend.host }] }] }] }],
    }));
    cleanups.push(() => gw.close());
    const d = await dial(`wss://127.0.0.1:${gw.port}/secure`, { ca: ca.cert, servername: 'ws.example.com', headers: { host: 'ws.example.com' } });
    if (d.kind !== 'open') throw new Error(`refused ${d.status}`);
    cleanups.push(async () => d.ws.terminate());
    expect((await roundTrip(d.ws, 'over tls')).data.toString()).toBe('over tls');
    expect(backend.upgrades[0]!['x-forwarded-proto']).toBe('https');
  });

  it('a cluster route (a Service backend, from a snapshot over the wire) takes WebSockets; its RequestMirror copies no handshake', async () => {
    const backend = await echoBackend();
    const shadow = await startUpstream();
    cleanups.push(() => shadow.close());
    const gw = await gateway([{ name: 'r', backends: [{ host: backend.host }] }]);
    const port = (host: string): number => Number(host.split(':')[1]);
    const current = gw.gateway.snapshot;
    const next = withVersion({
      source: { kind: 'controller', gateway: 'default/gw' },
      binds: current.binds.map((b) => ({
        ...b,
        listeners: b.listeners.map((l) => ({
          ...l,
          routes: l.routes.map((r) => ({ ...r, filters: [{ type: 'RequestMirror' as const, backend: service('shadow'), numerator: 1, denominator: 1 }], backends: [service('echo')] })),
        })),
      })),
      endpoints: endpointsOf({ echo: port(backend.host), shadow: port(shadow.host) }),
    });
    await gw.gateway.runtime.apply(decodeSnapshot(encodeSnapshot(next)));
    const d = await dial(wsUrl(gw, '/cluster'));
    if (d.kind !== 'open') throw new Error(`refused ${d.status}`);
    cleanups.push(async () => d.ws.terminate());
    expect((await roundTrip(d.ws, 'via a Service')).data.toString()).toBe('via a Service');
    // An ordinary request after it is copied; the handshake before it was not.
    await send(`${gw.url}/after`);
    await until(() => shadow.requests.length > 0);
    expect(shadow.requests.map((r) => r.url)).toEqual(['/after']);
  });

  it("works with Node's own WebSocket client", async () => {
    const backend = await echoBackend();
    const gw = await gateway([{ name: 'ws', backends: [{ host: backend.host }] }]);
    const ws = new WebSocket(wsUrl(gw, '/'));
    cleanups.push(async () => ws.close());
    await once(ws, 'open');
    const reply = new Promise<string>((resolve) => ws.addEventListener('message', (e) => resolve(String(e.data)), { once: true }));
    ws.send('hello from undici');
    expect(await reply).toBe('hello from undici');
  });

  it('OpenAI-Realtime-like: a bearer key consumed by apiKey (never forwarded), a subprotocol, a beta header; a bad key is an HTTP 401', async () => {
    const backend = await echoBackend();
    const keys = join(dir, 'keys.yaml');
    await writeFile(keys, stringify([{ key: KEY, consumer: 'realtime-team' }]));
    const gw = await gateway([{ name: 'realtime', matches: [{ path: { value: '/v1/realtime' } }], policies: { traffic: { apiKey: { file: keys } } }, backends: [{ host: backend.host }] }]);
    const ok = await dial(wsUrl(gw, '/v1/realtime?model=gpt-realtime'), { protocols: ['realtime'], headers: { authorization: `Bearer ${KEY}`, 'openai-beta': 'realtime=v1' } });
    if (ok.kind !== 'open') throw new Error(`refused ${ok.status}: ${ok.body}`);
    cleanups.push(async () => ok.ws.terminate());
    expect(ok.ws.protocol).toBe('realtime');
    const event = JSON.stringify({ type: 'session.update', session: { modalities: ['text'] } });
    expect((await roundTrip(ok.ws, event)).data.toString()).toBe(event);
    const seen = backend.upgrades[0]!;
    expect(seen.authorization).toBeUndefined();
    expect(seen['openai-beta']).toBe('realtime=v1');
    const bad = await dial(wsUrl(gw, '/v1/realtime'), { headers: { authorization: 'Bearer sk-wrong-key-000000000000' } });
    expect(bad).toMatchObject({ kind: 'refused', status: 401 });
    const none = await dial(wsUrl(gw, '/v1/realtime'));
    expect(none).toMatchObject({ kind: 'refused', status: 401 });
    expect(backend.upgrades).toHaveLength(1);
    // The consumer is in the connection's log line; the key is in no line.
    ok.ws.close();
    const line = await until(() => gw.logs.lines.find((l) => l.msg === 'websocket closed'));
    expect(line.consumer).toBe('realtime-team');
    expect(JSON.stringify(gw.logs.lines)).not.toContain(KEY);
  });

  it('a route rate limit counts upgrade requests: the one over it gets 429 with the limit headers', async () => {
    const backend = await echoBackend();
    const gw = await gateway([{ name: 'ws', policies: { traffic: { rateLimit: { local: [{ requests: 1, unit: 'Minutes' }] } } }, backends: [{ host: backend.host }] }]);
    const first = await dial(wsUrl(gw, '/'));
    if (first.kind !== 'open') throw new Error(`refused ${first.status}`);
    cleanups.push(async () => first.ws.terminate());
    expect(first.headers['x-ratelimit-limit']).toBe('1');
    const second = await dial(wsUrl(gw, '/'));
    expect(second).toMatchObject({ kind: 'refused', status: 429, body: 'rate limit exceeded' });
    expect(backend.upgrades).toHaveLength(1);
  });

  it('no route is a 404, a backend that is down a 503, and the proxy keeps serving', async () => {
    const backend = await echoBackend();
    const gw = await gateway([
      { name: 'ws', matches: [{ path: { value: '/ws' } }], backends: [{ host: backend.host }] },
      { name: 'down', matches: [{ path: { value: '/down' } }], backends: [{ host: '127.0.0.1:1' }] },
    ]);
    expect(await dial(wsUrl(gw, '/elsewhere'))).toMatchObject({ kind: 'refused', status: 404 });
    const down = await dial(wsUrl(gw, '/down'));
    expect(down).toMatchObject({ kind: 'refused', status: 503, headers: { 'x-tollgate-error': 'TG_UPSTREAM_REFUSED' } });
    const ok = await dial(wsUrl(gw, '/ws'));
    expect(ok.kind).toBe('open');
    if (ok.kind === 'open') ok.ws.terminate();
    await until(async () => (await metricValue(gw, 'tollgate_websocket_connections')) === 0);
  });

  it("a backend's answer other than 101 is relayed as an ordinary response, and the connection closes after it", async () => {
    const up = await startUpstream((req, res) => {
      res.writeHead(426, { 'content-type': 'text/plain', 'x-saw-upgrade': String(req.headers.upgrade) });
      res.end('not here');
    });
    cleanups.push(() => up.close());
    const gw = await gateway([{ name: 'plain', backends: [{ host: up.host }] }]);
    const d = await dial(wsUrl(gw, '/'));
    expect(d).toMatchObject({ kind: 'refused', status: 426, body: 'not here', headers: { 'x-saw-upgrade': 'websocket' } });
  });

  it('an upgrade to an h2c or an h2 (HTTP/2 over TLS) backend is refused with 502 TG_WEBSOCKET_H2C_BACKEND', async () => {
    const h2 = createHttp2Server();
    h2.listen(0, '127.0.0.1');
    await once(h2, 'listening');
    cleanups.push(() => new Promise<void>((r) => h2.close(() => r())));
    const host = `127.0.0.1:${(h2.address() as AddressInfo).port}`;
    const gw = await gateway([
      { name: 'h2-tls', matches: [{ path: { value: '/tls' } }], backends: [{ host, protocol: 'H2', tls: {} }] },
      { name: 'h2', backends: [{ host, protocol: 'H2C' }] },
    ]);
    for (const path of ['/', '/tls']) {
      const d = await dial(wsUrl(gw, path));
      expect(d).toMatchObject({ kind: 'refused', status: 502, headers: { 'x-tollgate-error': 'TG_WEBSOCKET_H2C_BACKEND' } });
    }
  });

  it('an Upgrade other than websocket is an ordinary request: its Upgrade and Connection headers do not reach the backend', async () => {
    const up = await startUpstream();
    cleanups.push(() => up.close());
    const gw = await gateway([{ name: 'plain', backends: [{ host: up.host }] }]);
    const r = await send(`${gw.url}/`, { headers: { connection: 'Upgrade, HTTP2-Settings', upgrade: 'h2c', 'http2-settings': 'AAMAAABkAAQAAP__' } });
    expect(r.status).toBe(200);
    const seen = up.requests.at(-1)!.headers;
    expect(seen.upgrade).toBeUndefined();
    expect(seen['http2-settings']).toBeUndefined();
  });

  it('the trace of an upgrade request runs from requestStarted to requestFinished with status 101', async () => {
    const backend = await echoBackend();
    const gw = await gateway([{ name: 'ws', backends: [{ host: backend.host }] }]);
    const trace = await openTrace(gw.adminUrl);
    await trace.armed;
    const d = await dial(wsUrl(gw, '/traced'));
    if (d.kind !== 'open') throw new Error(`refused ${d.status}`);
    cleanups.push(async () => d.ws.terminate());
    const events = await trace.events;
    const types = events.map((e) => e.message.type);
    expect(types[0]).toBe('requestStarted');
    expect(types.at(-1)).toBe('requestFinished');
    expect(events.find((e) => e.message.type === 'backendCallResult')!.message).toMatchObject({ status: 101, error: null });
    const final = events.map((e) => e.message).find((m) => m.type === 'responseSnapshot' && m.stage === 'final response');
    expect(final?.type === 'responseSnapshot' ? final.requestState.response.code : null).toBe(101);
  });
});

describe('an adversarial client or backend', () => {
  it('oversized upgrade headers get 431 before any backend is called, and the proxy keeps serving', async () => {
    const backend = await echoBackend();
    const gw = await gateway([{ name: 'ws', backends: [{ host: backend.host }] }]);
    const { socket, text, gone } = await rawClient(gw.port);
    socket.write(`GET / HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nX-Big: ${'a'.repeat(64 * 1024)}\r\n\r\n`);
    await gone;
    expect(text()).toMatch(/^HTTP\/1\.1 431/);
    expect(backend.upgrades).toHaveLength(0);
    const after = await dial(wsUrl(gw, '/'));
    expect(after.kind).toBe('open');
    if (after.kind === 'open') after.ws.terminate();
  });

  it('a refused upgrade whose client keeps its side of the connection open is let go of anyway', async () => {
    const backend = await echoBackend();
    const gw = await gateway([{ name: 'ws', matches: [{ path: { value: '/ws' } }], backends: [{ host: backend.host }] }]);
    // allowHalfOpen: the client does not end its side when the proxy ends its own.
    const { socket, text, gone } = await rawClient(gw.port, true);
    socket.write('GET /nowhere HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n');
    await once(socket, 'end');
    expect(text()).toMatch(/^HTTP\/1\.1 404/);
    // A half-open client learns that the proxy let go of the connection when it writes: a reset.
    let closed = false;
    void gone.then(() => (closed = true));
    await until(() => {
      if (!closed && !socket.destroyed) socket.write('still here');
      return closed;
    });
  });

  it('an upgrade request whose headers never end is answered 408 after requestHeadersTimeout and closed', async () => {
    const backend = await echoBackend();
    const gw = await gateway([{ name: 'ws', backends: [{ host: backend.host }] }], { requestHeadersTimeout: '300ms' });
    const { socket, text, gone } = await rawClient(gw.port);
    // A slowloris: the request line and the upgrade headers, then nothing more.
    socket.write('GET / HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n');
    await gone;
    expect(text()).toMatch(/^HTTP\/1\.1 408/);
    expect(backend.upgrades).toHaveLength(0);
  });

  it('a WebSocket idle past websocketIdleTimeout is closed on both sides (a client that sends nothing holds nothing)', async () => {
    const backend = await echoBackend();
    const gw = await gateway([{ name: 'ws', backends: [{ host: backend.host }] }], { websocketIdleTimeout: '300ms' });
    const d = await dial(wsUrl(gw, '/'));
    if (d.kind !== 'open') throw new Error(`refused ${d.status}`);
    // The client stays silent: the proxy closes it, and the backend's side too.
    expect(await closed(d.ws)).toBe(1006);
    await until(() => backend.sockets[0]?.readyState === backend.sockets[0]?.CLOSED);
    const line = await until(() => gw.logs.lines.find((l) => l.msg === 'websocket closed'));
    expect(line.closedBy).toBe('idle');
    expect(await metricValue(gw, 'tollgate_client_refusals_total{reason="websocket_idle"}')).toBe(1);
    expect(await metricValue(gw, 'tollgate_websocket_connections')).toBe(0);
  });

  it('a backend that closes mid-frame: the client sees the connection end (1006), the proxy keeps serving', async () => {
    const raw = await startRawWsBackend();
    cleanups.push(() => raw.close());
    const echo = await echoBackend();
    const gw = await gateway([
      { name: 'raw', matches: [{ path: { value: '/raw' } }], backends: [{ host: raw.host }] },
      { name: 'echo', matches: [{ path: { value: '/echo' } }], backends: [{ host: echo.host }] },
    ]);
    const d = await dial(wsUrl(gw, '/raw'));
    if (d.kind !== 'open') throw new Error(`refused ${d.status}`);
    const backendSide = await raw.upgraded;
    // A text frame header announcing 100 bytes, then 10 of them, then the backend is gone.
    backendSide.end(Buffer.concat([Buffer.from([0x81, 100]), Buffer.alloc(10, 0x61)]));
    expect(await closed(d.ws)).toBe(1006);
    const line = await until(() => gw.logs.lines.find((l) => l.msg === 'websocket closed'));
    expect(line).toMatchObject({ route: 'main/raw', closedBy: 'backend', toClient: 12 });
    const next = await dial(wsUrl(gw, '/echo'));
    if (next.kind !== 'open') throw new Error(`refused ${next.status}`);
    expect((await roundTrip(next.ws, 'still here')).data.toString()).toBe('still here');
    next.ws.terminate();
  });

  it('maxWebSocketConnections: one more upgrade is refused 503 TG_WEBSOCKET_LIMIT until one closes', async () => {
    const backend = await echoBackend();
    const gw = await gateway([{ name: 'ws', backends: [{ host: backend.host }] }], { maxWebSocketConnections: 1 });
    const first = await dial(wsUrl(gw, '/'));
    if (first.kind !== 'open') throw new Error(`refused ${first.status}`);
    const second = await dial(wsUrl(gw, '/'));
    expect(second).toMatchObject({ kind: 'refused', status: 503, headers: { 'x-tollgate-error': 'TG_WEBSOCKET_LIMIT' } });
    expect(await metricValue(gw, 'tollgate_client_refusals_total{reason="websocket_limit"}')).toBe(1);
    // Ordinary requests are not capped by it.
    first.ws.close();
    await closed(first.ws);
    await until(async () => (await metricValue(gw, 'tollgate_websocket_connections')) === 0);
    const third = await dial(wsUrl(gw, '/'));
    expect(third.kind).toBe('open');
    if (third.kind === 'open') third.ws.terminate();
  });

  it('the drain closes the WebSockets still open at its deadline, and the proxy stops', async () => {
    const backend = await echoBackend();
    const gw = await startGateway((port) => ({ config: { drainTimeout: '200ms', drainIdleTimeout: '0s' }, ...simpleConfig(port, [{ name: 'ws', backends: [{ host: backend.host }] }]) }));
    const d = await dial(wsUrl(gw, '/'));
    if (d.kind !== 'open') throw new Error(`refused ${d.status}`);
    const code = closed(d.ws);
    await gw.close();
    expect(await code).toBe(1006);
    await until(() => backend.sockets[0]?.readyState === backend.sockets[0]?.CLOSED);
    const line = gw.logs.lines.find((l) => l.msg === 'websocket closed');
    expect(line?.closedBy).toBe('drain');
  });
});

describe('examples/websocket-h2c.yaml', () => {
  it('loads: its WebSocket bounds, the realtime route behind apiKey and a requests limit, the h2c backend', async () => {
    const loaded = await loadConfigFile(fileURLToPath(new URL('../../../examples/websocket-h2c.yaml', import.meta.url)));
    expect(loaded.config.config).toMatchObject({ maxWebSocketConnections: 1024, websocketIdleTimeout: '300s' });
    const routes = loaded.snapshot.binds[0]!.listeners[0]!.routes;
    const realtime = routes.find((r) => r.name === 'main/realtime')!;
    expect(realtime.policy?.apiKey).toBeTruthy();
    expect(routes.find((r) => r.name === 'main/h2c')!.backends[0]).toMatchObject({ kind: 'static', protocol: 'h2c' });
  });
});
