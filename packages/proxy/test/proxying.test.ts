// Upstream calls over real sockets: streaming both ways, hop-by-hop and forwarded headers,
// client disconnects, upstream failures and timeouts, weights, malformed requests.
import { createHash, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { connect } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { echoed, freePort, send, startGateway, startUpstream, type Upstream } from './helpers.js';
import { deferred } from '@tollgate/testkit';

let echo: Upstream;
beforeAll(async () => {
  echo = await startUpstream();
});
afterAll(async () => {
  await echo.close();
});

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

async function gatewayFor(routes: unknown[]) {
  const gw = await startGateway((port) => ({ binds: [{ port, listeners: [{ name: 'main', protocol: 'HTTP', routes }] }] }));
  cleanups.push(() => gw.close());
  return gw;
}
async function upstream(handler: Parameters<typeof startUpstream>[0], opts?: { readBody?: boolean }) {
  const up = await startUpstream(handler, opts);
  cleanups.push(() => up.close());
  return up;
}

describe('streaming', () => {
  it('delivers each response chunk before the upstream finishes (SSE passes through)', async () => {
    const release = deferred();
    const up = await upstream((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: first\n\n');
      void release.promise.then(() => {
        res.write('data: second\n\n');
        res.end('data: [DONE]\n\n');
      });
    });
    const gw = await gatewayFor([{ name: 'sse', backends: [{ host: up.host }] }]);
    const res = await new Promise<IncomingMessage>((resolve, reject) => httpRequest(`${gw.url}/stream`, resolve).on('error', reject).end());
    expect(res.headers['content-type']).toBe('text/event-stream');
    const [first] = (await once(res, 'data')) as [Buffer];
    // The upstream has not finished: it waits for `release`, which only this line triggers.
    expect(first.toString()).toBe('data: first\n\n');
    release.resolve();
    let rest = '';
    res.on('data', (c: Buffer) => (rest += c.toString()));
    await once(res, 'end');
    expect(rest).toBe('data: second\n\ndata: [DONE]\n\n');
  });

  it('sends request body chunks upstream before the client finishes sending', async () => {
    const firstChunk = deferred<string>();
    const up = await upstream(
      (req, res) => {
        let all = '';
        req.once('data', (c: Buffer) => firstChunk.resolve(c.toString()));
        req.on('data', (c: Buffer) => (all += c.toString()));
        req.on('end', () => res.end(all));
      },
      { readBody: false },
    );
    const gw = await gatewayFor([{ name: 'upload', backends: [{ host: up.host }] }]);
    const req = httpRequest(`${gw.url}/upload`, { method: 'POST', headers: { 'transfer-encoding': 'chunked' } });
    const response = new Promise<string>((resolve) =>
      req.on('response', (res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('end', () => resolve(body));
      }),
    );
    req.write('part-one;');
    expect(await firstChunk.promise).toBe('part-one;');
    req.end('part-two');
    expect(await response).toBe('part-one;part-two');
  });

  it('carries large bodies both ways unchanged', async () => {
    const payload = randomBytes(5 * 1024 * 1024);
    const up = await upstream((_req, res, body) => {
      res.setHeader('x-sha', createHash('sha256').update(body).digest('hex'));
      res.end(body);
    });
    const gw = await gatewayFor([{ name: 'big', backends: [{ host: up.host }] }]);
    const body = await new Promise<{ sha: string; echoed: Buffer }>((resolve, reject) => {
      const req = httpRequest(`${gw.url}/big`, { method: 'PUT' }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ sha: String(res.headers['x-sha']), echoed: Buffer.concat(chunks) }));
      });
      req.on('error', reject);
      req.end(payload);
    });
    const sha = createHash('sha256').update(payload).digest('hex');
    expect(body.sha).toBe(sha);
    expect(createHash('sha256').update(body.echoed).digest('hex')).toBe(sha);
  });
});

describe('headers', () => {
  it('drops hop-by-hop request headers, including those named in Connection', async () => {
    const gw = await gatewayFor([{ name: 'e', backends: [{ host: echo.host }] }]);
    const r = echoed(await send(`${gw.url}/h`, { headers: { connection: 'keep-alive, x-private', 'x-private': 'secret', 'keep-alive': 'timeout=5', te: 'trailers', 'x-kept': 'yes' } }));
    expect(r.headers['x-private']).toBeUndefined();
    expect(r.headers['keep-alive']).toBeUndefined();
    expect(r.headers.te).toBeUndefined();
    expect(r.headers['x-kept']).toBe('yes');
  });

  it('drops hop-by-hop response headers', async () => {
    const up = await upstream((_req, res) => {
      res.setHeader('connection', 'keep-alive, x-hop');
      res.setHeader('x-hop', 'internal');
      res.setHeader('x-end-to-end', 'kept');
      res.end('ok');
    });
    const gw = await gatewayFor([{ name: 'r', backends: [{ host: up.host }] }]);
    const r = await send(`${gw.url}/`);
    expect(r.headers['x-hop']).toBeUndefined();
    expect(r.headers['x-end-to-end']).toBe('kept');
  });

  it('sets x-forwarded-for (appending), -proto and -host', async () => {
    const gw = await gatewayFor([{ name: 'e', backends: [{ host: echo.host }] }]);
    const r = echoed(await send(`${gw.url}/`, { headers: { host: 'api.example.com', 'x-forwarded-for': '203.0.113.9' } }));
    expect(r.headers['x-forwarded-for']).toBe('203.0.113.9, 127.0.0.1');
    expect(r.headers['x-forwarded-proto']).toBe('http');
    expect(r.headers['x-forwarded-host']).toBe('api.example.com');
    expect(r.headers.host).toBe('api.example.com');
  });
});

describe('client disconnect', () => {
  it('aborts the upstream call', async () => {
    const upstreamClosed = deferred();
    const gotRequest = deferred();
    const up = await upstream(
      (req, res) => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write('data: hello\n\n');
        gotRequest.resolve();
        res.on('close', () => upstreamClosed.resolve());
      },
      { readBody: false },
    );
    const gw = await gatewayFor([{ name: 'slow', backends: [{ host: up.host }] }]);
    const req = httpRequest(`${gw.url}/slow`);
    req.on('error', () => undefined);
    req.on('response', (res) => res.once('data', () => req.destroy()));
    req.end();
    await gotRequest.promise;
    await upstreamClosed.promise;
    expect(up.requests).toHaveLength(1);
  });
});

describe('upstream failures', () => {
  it('a refused connection is a 503 saying so', async () => {
    const gw = await gatewayFor([{ name: 'dead', backends: [{ host: `127.0.0.1:${await freePort()}` }] }]);
    const r = await send(`${gw.url}/`);
    expect(r.status).toBe(503);
    expect(r.body).toContain('connection refused');
  });

  it('a reset before the response is a 502 saying so', async () => {
    const up = await upstream((req) => req.socket.destroy(), { readBody: false });
    const gw = await gatewayFor([{ name: 'reset', backends: [{ host: up.host }] }]);
    const r = await send(`${gw.url}/`);
    expect(r.status).toBe(502);
    expect(r.body).toContain('reset');
  });

  it('no response within timeouts.backendRequest is a 504 saying so', async () => {
    const up = await upstream(() => undefined, { readBody: false });
    const gw = await gatewayFor([{ name: 'slow', timeouts: { backendRequest: '100ms' }, backends: [{ host: up.host }] }]);
    const r = await send(`${gw.url}/`);
    expect(r.status).toBe(504);
    expect(r.body).toContain('upstream request timeout');
  });

  it('timeouts.request bounds the whole exchange with a 504', async () => {
    const up = await upstream(() => undefined, { readBody: false });
    const gw = await gatewayFor([{ name: 'slow', timeouts: { request: '100ms' }, backends: [{ host: up.host }] }]);
    const r = await send(`${gw.url}/`);
    expect(r.status).toBe(504);
    expect(r.body).toContain('request timeout');
  });
});

describe('weights', () => {
  it('a backend with weight 0 gets nothing; equal weights share', async () => {
    const a = await upstream((_q, res) => res.end('a'));
    const b = await upstream((_q, res) => res.end('b'));
    const c = await upstream((_q, res) => res.end('c'));
    const gw = await gatewayFor([
      { name: 'zero', matches: [{ path: { value: '/zero' } }], backends: [{ host: a.host, weight: 1 }, { host: c.host, weight: 0 }] },
      { name: 'split', matches: [{ path: { value: '/split' } }], backends: [{ host: a.host }, { host: b.host }] },
    ]);
    const seen = new Set<string>();
    for (let i = 0; i < 100; i++) seen.add((await send(`${gw.url}/zero`)).body);
    expect([...seen]).toEqual(['a']);
    seen.clear();
    // The chance that 100 fair picks all land on one side is 2^-99.
    for (let i = 0; i < 100; i++) seen.add((await send(`${gw.url}/split`)).body);
    expect([...seen].sort()).toEqual(['a', 'b']);
  });
});

describe('malformed requests', () => {
  it('get a 400 and the proxy keeps serving', async () => {
    const gw = await gatewayFor([{ name: 'e', backends: [{ host: echo.host }] }]);
    for (const garbage of ['NOT-HTTP\r\n\r\n', 'GET / HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n', 'GET /%zz HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n']) {
      const sock = connect(gw.port, '127.0.0.1');
      sock.end(garbage);
      let answer = '';
      sock.on('data', (c: Buffer) => (answer += c.toString()));
      await once(sock, 'close');
      expect(answer).toMatch(/^HTTP\/1\.1 400/);
    }
    expect((await send(`${gw.url}/still-here`)).status).toBe(200);
  });
});
