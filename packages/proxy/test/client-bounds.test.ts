// What clients may hold of the proxy, over real sockets: request-body bytes held in memory stay
// within the process budget (config.maxBufferedRequestBytes) however many clients send bodies
// and stall, a body that does not fit is refused with 503 and Retry-After, and the bytes come
// back when the requests end; a body trickled just fast enough to escape the idle timeout
// misses its deadline (config.requestBodyTimeout); connections beyond a bind's cap
// (config.maxConnectionsPerBind) are closed. Each bound shows in config_dump and metrics.
import { once } from 'node:events';
import { connect, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { send, simpleConfig, startGateway, startUpstream, type TestGateway, type Upstream } from './helpers.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

async function echo(): Promise<Upstream> {
  const up = await startUpstream((_req, res, body) => {
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ choices: [{ message: { content: 'ok' } }], usage: { total_tokens: 1 }, got: body.length }));
  });
  cleanups.push(() => up.close());
  return up;
}

/** A metered route (its bodies are read and held) and a plain one (bodies stream through). */
async function gateway(up: Upstream, config: Record<string, unknown>): Promise<TestGateway> {
  const gw = await startGateway((port) => ({
    config,
    ...simpleConfig(port, [
      { name: 'chat', matches: [{ path: { type: 'PathPrefix', value: '/v1' } }], policies: { traffic: { rateLimit: { local: [{ tokens: 1_000_000, unit: 'Hours' }] } } }, backends: [{ host: up.host }] },
      { name: 'files', backends: [{ host: up.host }] },
    ]),
  }));
  cleanups.push(() => gw.close());
  return gw;
}

const metricsText = async (gw: TestGateway) => (await fetch(`http://${gw.gateway.ops.metrics.address}/metrics`)).text();

async function gauge(gw: TestGateway): Promise<number> {
  return Number(/^tollgate_buffered_request_bytes (\d+)$/m.exec(await metricsText(gw))?.[1] ?? 'NaN');
}

async function refusals(gw: TestGateway, reason: string): Promise<number> {
  return Number(new RegExp(`^tollgate_client_refusals_total\\{reason="${reason}"\\} (\\d+)$`, 'm').exec(await metricsText(gw))?.[1] ?? 0);
}

/** A raw client connection; `closed` resolves with everything the proxy sent once it closes. */
async function rawClient(gw: TestGateway): Promise<{ socket: Socket; closed: Promise<string> }> {
  const socket = connect(gw.port, '127.0.0.1');
  socket.on('error', () => undefined);
  await once(socket, 'connect');
  let text = '';
  socket.on('data', (c: Buffer) => (text += c.toString('latin1')));
  // A connection closed at once may close with a reset (the proxy closed it with the request
  // unread): closed either way.
  const closed = new Promise<string>((resolve) => socket.once('close', () => resolve(text)));
  return { socket, closed };
}

const chatHead = (length: number) => `POST /v1/chat/completions HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n\r\n`;
const chatBody = JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }] });
const chat = (gw: TestGateway) => send(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: chatBody });

describe('the budget of buffered request bytes', () => {
  it('refuses a body that does not fit with 503, Retry-After and TG_BODY_BUDGET_FULL, and takes it once the bytes are given back', async () => {
    const gw = await gateway(await echo(), { maxRequestBodyBytes: 1024, maxBufferedRequestBytes: 1024, requestBodyIdleTimeout: '10m' });
    // One client sends most of its body and stalls: its bytes are held.
    const holder = await rawClient(gw);
    holder.socket.write(chatHead(1024) + 'x'.repeat(1000));
    await expect.poll(() => gauge(gw)).toBe(1000);
    const refused = await chat(gw);
    expect(refused.status).toBe(503);
    expect(refused.headers['retry-after']).toBe('1');
    expect(refused.headers['x-tollgate-error']).toBe('TG_BODY_BUDGET_FULL');
    expect(await refusals(gw, 'body_budget')).toBe(1);
    // A route that streams bodies through holds none of them: it still serves.
    expect((await send(`${gw.url}/files`, { method: 'POST', body: 'y'.repeat(4000) })).status).toBe(200);
    holder.socket.destroy();
    await expect.poll(() => gauge(gw)).toBe(0);
    const served = await chat(gw);
    expect(served.status).toBe(200);
    // The bytes of a request served are given back at its end too (on its thread, which may
    // not be the one that answers the scrape).
    await expect.poll(() => gauge(gw)).toBe(0);
  });

  it('holds 200 clients that send a nearly full body and stall within the budget, and a new client still gets an answer', async () => {
    const maxBody = 64 * 1024;
    const budget = 1024 * 1024;
    const gw = await gateway(await echo(), { maxRequestBodyBytes: maxBody, maxBufferedRequestBytes: budget, requestBodyIdleTimeout: '10m', requestBodyTimeout: '10m' });
    const clients: { socket: Socket; closed: Promise<string> }[] = [];
    const samples: number[] = [];
    for (let i = 0; i < 200; i++) {
      const c = await rawClient(gw);
      c.socket.write(chatHead(maxBody) + 'x'.repeat(maxBody - 1));
      clients.push(c);
      if (i % 10 === 9) samples.push(await gauge(gw));
    }
    // Every body that fitted is held (the budget fills); none beyond it ever is.
    await expect.poll(() => refusals(gw, 'body_budget')).toBeGreaterThan(0);
    await expect.poll(() => gauge(gw)).toBeGreaterThan(budget - maxBody);
    samples.push(await gauge(gw));
    expect(Math.max(...samples)).toBeLessThanOrEqual(budget);
    const fresh = await chat(gw);
    const answer = fresh.status === 503 ? `503, Retry-After ${fresh.headers['retry-after']}` : String(fresh.status);
    expect(['200', '503, Retry-After 1']).toContain(answer);
    expect((await send(`${gw.url}/files`, { method: 'POST', body: 'y'.repeat(4000) })).status).toBe(200);
    expect(await gauge(gw)).toBeLessThanOrEqual(budget);
    for (const c of clients) c.socket.destroy();
    await Promise.all(clients.map((c) => c.closed));
    await expect.poll(() => gauge(gw)).toBe(0);
    expect((await chat(gw)).status).toBe(200);
  });

  it('is at least maxRequestBodyBytes: a config below it is refused naming the field', async () => {
    await expect(gateway(await echo(), { maxRequestBodyBytes: 4096, maxBufferedRequestBytes: 2048 })).rejects.toThrow(/config\.maxBufferedRequestBytes: got 2048; it must be at least maxRequestBodyBytes \(4096\)/);
  });
});

describe('the request body deadline', () => {
  it('cuts a client that trickles its body faster than the idle timeout with 408 TG_REQUEST_BODY_DEADLINE, which the client reads', async () => {
    const gw = await gateway(await echo(), { requestBodyIdleTimeout: '30s', requestBodyTimeout: '500ms' });
    let refused = 0;
    for (const path of ['/v1/chat/completions', '/files']) {
      const { socket, closed } = await rawClient(gw);
      // The client reads nothing until the proxy has refused it and it has sent more bytes
      // after that: the 408 must still be there to read (a connection closed with unread bytes
      // is reset, which would destroy the answer in the client's buffers; see linger.ts).
      socket.pause();
      // 100 bytes, one every 50 ms: the body would take 5 s, each byte well within the idle timeout.
      socket.write(`POST ${path} HTTP/1.1\r\nHost: a\r\nContent-Length: 100\r\n\r\n`);
      let sent = 0;
      const trickle = setInterval(() => {
        // Once the proxy's FIN is read, the client's side ends too: no write after that.
        if (sent < 100 && socket.writable) socket.write('x', () => undefined);
        sent++;
      }, 50);
      await expect.poll(() => refusals(gw, 'body_deadline')).toBe(++refused);
      const after = sent;
      await expect.poll(() => sent).toBeGreaterThanOrEqual(after + 2);
      socket.resume();
      const text = await closed.finally(() => clearInterval(trickle));
      expect(text).toMatch(/^HTTP\/1\.1 408/);
      expect(text).toMatch(/x-tollgate-error: TG_REQUEST_BODY_DEADLINE/);
      expect(sent).toBeLessThan(100);
    }
    expect(await refusals(gw, 'body_deadline')).toBe(2);
    expect((await chat(gw)).status).toBe(200);
  });
});

describe('the connection cap of a bind', () => {
  it('closes connections beyond maxConnectionsPerBind at once, counts them, and accepts again once one closes', async () => {
    const gw = await gateway(await echo(), { maxConnectionsPerBind: 3 });
    const open: Socket[] = [];
    for (let i = 0; i < 3; i++) {
      const c = await rawClient(gw);
      // Answered: the proxy has accepted it, and keeps it open (keep-alive).
      c.socket.write('GET /files HTTP/1.1\r\nHost: a\r\n\r\n');
      await once(c.socket, 'data');
      open.push(c.socket);
    }
    const extra = await rawClient(gw);
    extra.socket.write('GET /files HTTP/1.1\r\nHost: a\r\n\r\n');
    expect(await extra.closed).toBe('');
    expect(await refusals(gw, 'connection_limit')).toBe(1);
    open.pop()!.destroy();
    await expect.poll(() => send(`${gw.url}/files`).then((r) => r.status, () => 0)).toBe(200);
    for (const s of open) s.destroy();
  });
});

describe('config_dump', () => {
  it('shows the bounds with their defaults applied', async () => {
    const gw = await gateway(await echo(), {});
    const dump = JSON.parse((await send(`${gw.adminUrl}/config_dump`)).body) as { settings: Record<string, number> };
    expect(dump.settings).toMatchObject({ requestBodyTimeoutMs: 60_000, maxRequestBodyBytes: 8 * 1024 * 1024, maxBufferedRequestBytes: 64 * 1024 * 1024, maxConnectionsPerBind: 4096 });
    const raised = await gateway(await echo(), { maxRequestBodyBytes: 128 * 1024 * 1024, requestBodyTimeout: '2m', maxConnectionsPerBind: 10 });
    const dumped = JSON.parse((await send(`${raised.adminUrl}/config_dump`)).body) as { settings: Record<string, number> };
    expect(dumped.settings).toMatchObject({ requestBodyTimeoutMs: 120_000, maxRequestBodyBytes: 128 * 1024 * 1024, maxBufferedRequestBytes: 128 * 1024 * 1024, maxConnectionsPerBind: 10 });
  });
});
