// Slow clients cannot hold connections: the request-headers timeout, the request-body idle
// timeout and the keep-alive idle timeout, each configurable and shown in config_dump; a
// response that pauses while streaming from the backend is governed by the route only.
import { once } from 'node:events';
import { connect, type Socket } from 'node:net';
import type { ServerResponse } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { send, startGateway, startUpstream, type TestGateway, type Upstream } from './helpers.js';

let up: Upstream;
let gw: TestGateway;
/** Responses the backend holds open until the test releases them. */
const held: ServerResponse[] = [];

beforeAll(async () => {
  up = await startUpstream((req, res, body) => {
    if (req.url === '/pause') {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: first\n\n');
      held.push(res);
      return;
    }
    res.end(`got ${body.length} bytes`);
  });
  gw = await startGateway((port) => ({
    config: { requestHeadersTimeout: '300ms', requestBodyIdleTimeout: '300ms', keepAliveTimeout: '300ms' },
    binds: [{ port, listeners: [{ name: 'main', protocol: 'HTTP', routes: [{ name: 'all', backends: [{ host: up.host }] }] }] }],
  }));
});
afterAll(async () => {
  await gw?.close();
  await up?.close();
});

/** A raw connection to the proxy; resolves with everything the proxy sent once it closes. */
async function rawClient(): Promise<{ socket: Socket; closed: Promise<string> }> {
  const socket = connect(gw.port, '127.0.0.1');
  await once(socket, 'connect');
  let text = '';
  socket.on('data', (c: Buffer) => (text += c.toString()));
  const closed = once(socket, 'close').then(() => text);
  return { socket, closed };
}

describe('client timeouts', () => {
  it('a client that never finishes its headers gets 408 and the connection closes', async () => {
    const { socket, closed } = await rawClient();
    socket.write('GET /x HTTP/1.1\r\nHost: a\r\nX-Slow: ');
    expect(await closed).toMatch(/^HTTP\/1\.1 408/);
    expect((await send(`${gw.url}/next`)).status).toBe(200);
  });

  it('a client that stops sending its body gets 408 TG_REQUEST_BODY_TIMEOUT and the connection closes', async () => {
    const { socket, closed } = await rawClient();
    socket.write('POST /upload HTTP/1.1\r\nHost: a\r\nContent-Length: 100\r\n\r\n0123456789');
    const text = await closed;
    expect(text).toMatch(/^HTTP\/1\.1 408/);
    expect(text).toMatch(/request body timeout/);
    expect((await send(`${gw.url}/next`, { method: 'POST', body: 'x'.repeat(100) })).body).toBe('got 100 bytes');
  });

  it('an idle keep-alive connection is closed after the keep-alive timeout', async () => {
    const { socket, closed } = await rawClient();
    socket.write('GET /ka HTTP/1.1\r\nHost: a\r\n\r\n');
    const text = await closed;
    expect(text).toMatch(/^HTTP\/1\.1 200/);
    expect(text).toMatch(/keep-alive/i);
  });

  it('a response that pauses longer than the client timeouts is not cut', async () => {
    const streamed = send(`${gw.url}/pause`);
    await expect.poll(() => held.length).toBe(1);
    // Let a full body idle timeout elapse, shown by another client being timed out meanwhile.
    const { socket, closed } = await rawClient();
    socket.write('POST /upload HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\n0');
    expect(await closed).toMatch(/^HTTP\/1\.1 408/);
    held.pop()!.end('data: last\n\n');
    const r = await streamed;
    expect(r.status).toBe(200);
    expect(r.body).toBe('data: first\n\ndata: last\n\n');
  });

  it('config_dump shows the effective timeouts', async () => {
    const dump = JSON.parse((await send(`${gw.adminUrl}/config_dump`)).body) as { settings: Record<string, number> };
    expect(dump.settings).toMatchObject({ requestHeadersTimeoutMs: 300, requestBodyIdleTimeoutMs: 300, keepAliveTimeoutMs: 300, maxTraceSessions: 32 });
  });
});
