// HTTP/2 on HTTPS listeners, negotiated by ALPN, over real TLS sockets through the standalone
// proxy to mock-llm and an echo backend: node:http2's client and the official `openai` client
// (undici with allowH2) get `h2`; a connection whose SNI chose one listener's certificate is
// answered 421 for a host of another listener; rate limits, the trace, the request log and
// metrics see HTTP/2 requests as any; the drain sends GOAWAY; a client that offers only
// http/1.1, or no ALPN at all, is served in HTTP/1.1 on the same port.
import { once } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { connect as connectHttp2, constants, type ClientHttp2Session } from 'node:http2';
import { request as httpsRequest } from 'node:https';
import type { LookupFunction } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect as connectTls, type TLSSocket } from 'node:tls';
import type { MockLlm } from '@tollgate/mock-llm';
import { issueTestCertificate } from '@tollgate/testkit';
import OpenAI from 'openai';
import { Agent, fetch as undiciFetch } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { drainWithOneInFlight, h2Request as request, heldBackend, postUnfinishedBody } from './support/http2-client.js';
import { closedAfterEach, openTrace, startGateway, startUpstream, useMockLlm, type TestGateway, type Upstream } from './helpers.js';

const ca = issueTestCertificate({ commonName: 'tollgate-h2-test-ca', ca: true });
const certs = {
  a: issueTestCertificate({ commonName: 'a.example', names: ['a.example'], issuer: ca }),
  b: issueTestCertificate({ commonName: 'b.example', names: ['b.example'], issuer: ca }),
};

let llm: MockLlm;
useMockLlm((started) => (llm = started));
let dir: string;
let up: Upstream;
const cleanups = closedAfterEach();

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tollgate-h2-'));
  for (const [name, c] of Object.entries(certs)) {
    await writeFile(join(dir, `${name}.crt`), c.cert);
    await writeFile(join(dir, `${name}.key`), c.key);
  }
  up = await startUpstream();
});

afterAll(async () => {
  await up.close();
  await rm(dir, { recursive: true, force: true });
});

const tls = (name: string) => ({ certificates: [{ certFile: join(dir, `${name}.crt`), keyFile: join(dir, `${name}.key`) }] });

/** One HTTPS bind: listener a (a.example, its certificate) with an echo, an LLM and a limited route; listener b (b.example, another certificate). */
async function gateway(config: Record<string, unknown> = {}): Promise<TestGateway> {
  const gw = await startGateway((port) => ({
    config: { logLevel: 'debug', ...config },
    binds: [
      {
        port,
        address: '127.0.0.1',
        listeners: [
          {
            name: 'a',
            protocol: 'HTTPS',
            hostname: 'a.example',
            tls: tls('a'),
            routes: [
              { name: 'llm', matches: [{ path: { type: 'PathPrefix', value: '/v1' } }], policies: { traffic: { rateLimit: { local: [{ tokens: 100000, unit: 'Minutes' }] } } }, backends: [{ host: `127.0.0.1:${llm.port}` }] },
              { name: 'limited', matches: [{ path: { type: 'PathPrefix', value: '/limited' } }], policies: { traffic: { rateLimit: { local: [{ requests: 1, unit: 'Minutes' }] } } }, backends: [{ host: up.host }] },
              { name: 'plain', backends: [{ host: up.host }] },
            ],
          },
          { name: 'b', protocol: 'HTTPS', hostname: 'b.example', tls: tls('b'), routes: [{ name: 'b', backends: [{ host: up.host }] }] },
        ],
      },
    ],
  }));
  cleanups.push(() => gw.close());
  return gw;
}

/** An HTTP/2 session over TLS offering only `h2` in ALPN, with SNI `servername`. */
async function session(gw: TestGateway, servername: string): Promise<ClientHttp2Session> {
  const s = connectHttp2(`https://127.0.0.1:${gw.port}`, { ca: ca.cert, servername });
  s.on('error', () => undefined);
  cleanups.push(async () => {
    s.destroy();
  });
  await once(s, 'connect');
  return s;
}


/** The CN of the certificate the server presented on a session. */
function peerCn(s: ClientHttp2Session): string {
  return String((s.socket as TLSSocket).getPeerCertificate().subject?.CN);
}

describe('HTTP/2 on HTTPS listeners (ALPN h2)', () => {
  it('negotiates h2 with the certificate SNI selects; requests share one session and reach the backend as HTTPS requests of their host', async () => {
    const gw = await gateway();
    const s = await session(gw, 'a.example');
    expect(s.alpnProtocol).toBe('h2');
    expect(peerCn(s)).toBe('a.example');
    const answers = await Promise.all([1, 2, 3].map((i) => request(s, { ':path': `/x?n=${i}`, ':authority': 'a.example' }, `body ${i}`)));
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200]);
    const echoed = JSON.parse(answers[1]!.body) as { method: string; url: string; headers: Record<string, string>; body: string };
    expect(echoed).toMatchObject({ method: 'POST', url: '/x?n=2', body: 'body 2' });
    expect(echoed.headers.host).toBe('a.example');
    expect(echoed.headers['x-forwarded-proto']).toBe('https');
    const b = await session(gw, 'b.example');
    expect(peerCn(b)).toBe('b.example');
    expect((await request(b, { ':path': '/', ':authority': 'b.example' })).status).toBe(200);
    // The settings the session got are the ones config_dump shows.
    expect(s.remoteSettings).toMatchObject({ maxConcurrentStreams: 128, maxHeaderListSize: 32 * 1024 });
    const dump = (await (await fetch(`${gw.adminUrl}/config_dump`)).json()) as { settings: { http2: unknown } };
    expect(dump.settings.http2).toEqual({ maxConcurrentStreams: 128, maxHeaderListBytes: 32 * 1024, alpnProtocols: ['h2', 'http/1.1'] });
  });

  it('the official openai client over h2 (undici allowH2): a chat completion through the LLM route; the request log says 2.0', async () => {
    const gw = await gateway();
    // a.example resolves to the gateway: fetch takes the :authority from the URL (Host cannot be set).
    const lookup: LookupFunction = (_host, opts, cb) => (opts.all ? cb(null, [{ address: '127.0.0.1', family: 4 }]) : cb(null, '127.0.0.1', 4));
    const dispatcher = new Agent({ allowH2: true, connect: { ca: ca.cert, lookup } });
    cleanups.push(() => dispatcher.close());
    const client = new OpenAI({
      apiKey: 'sk-test',
      baseURL: `https://a.example:${gw.port}/v1`,
      maxRetries: 0,
      fetch: undiciFetch as unknown as typeof globalThis.fetch,
      fetchOptions: { dispatcher } as unknown as NonNullable<ConstructorParameters<typeof OpenAI>[0]>['fetchOptions'],
    });
    const before = llm.requestCount;
    const done = await client.chat.completions.create({ model: 'mock-gpt', messages: [{ role: 'user', content: 'hi over h2' }] });
    expect(done.choices[0]!.message.content).toBeTruthy();
    expect(done.usage!.total_tokens).toBeGreaterThan(0);
    expect(llm.requestCount).toBe(before + 1);
    const line = await gw.logs.waitFor((l) => l.msg === 'request done' && l.route === 'a/llm');
    expect(line).toMatchObject({ status: 200, http: '2.0' });
  });

  it('a rate limit answers 429 on its stream with the x-ratelimit headers, and the session carries on; metrics count both', async () => {
    const gw = await gateway();
    const s = await session(gw, 'a.example');
    expect((await request(s, { ':path': '/limited', ':authority': 'a.example' })).status).toBe(200);
    const limited = await request(s, { ':path': '/limited', ':authority': 'a.example' });
    expect(limited.status).toBe(429);
    expect(limited.body).toBe('rate limit exceeded');
    expect(limited.headers['x-ratelimit-limit']).toBe('1');
    expect((await request(s, { ':path': '/other', ':authority': 'a.example' })).status).toBe(200);
    const text = await (await fetch(`http://${gw.gateway.ops.metrics.address}/metrics`)).text();
    expect(text).toMatch(/tollgate_requests_total\{route="a\/limited",status="429"\} 1/);
    expect(text).toMatch(/tollgate_requests_total\{route="a\/limited",status="200"\} 1/);
  });

  it('a trace session captures an HTTP/2 request from start to finish', async () => {
    const gw = await gateway();
    const s = await session(gw, 'a.example');
    const t = await openTrace(gw.adminUrl);
    await t.armed;
    expect((await request(s, { ':path': '/traced', ':authority': 'a.example' })).status).toBe(200);
    const messages = (await t.events).map((e) => e.message);
    expect(messages[0]!.type).toBe('requestStarted');
    expect(messages.at(-1)!.type).toBe('requestFinished');
    expect(messages.find((m) => m.type === 'requestSnapshot')).toMatchObject({ requestState: { request: { path: '/traced' } } });
    expect(messages.find((m) => m.type === 'routeSelection')).toMatchObject({ selectedRoute: 'a/plain' });
    expect(messages.filter((m) => m.type === 'responseSnapshot').at(-1)).toMatchObject({ requestState: { response: { code: 200 } } });
  });

  it('a connection whose SNI chose listener a gets 421 for a host of listener b; its requests for a carry on, and a connection for b serves b', async () => {
    const gw = await gateway();
    const s = await session(gw, 'a.example');
    const seen = up.requests.length;
    const misdirected = await request(s, { ':path': '/', ':authority': 'b.example' });
    expect(misdirected.status).toBe(421);
    expect(misdirected.headers['x-tollgate-error']).toBe('TG_MISDIRECTED_REQUEST');
    expect(up.requests.length).toBe(seen);
    expect(s.destroyed).toBe(false);
    expect((await request(s, { ':path': '/still', ':authority': 'a.example' })).status).toBe(200);
    const b = await session(gw, 'b.example');
    expect((await request(b, { ':path': '/', ':authority': 'b.example' })).status).toBe(200);
    expect((await request(b, { ':path': '/', ':authority': 'a.example' })).status).toBe(421);
  });

  it("the Gateway API's misdirected-request cases over h2: a catch-all, an exact name, a wildcard and an exact name under it on one port", async () => {
    // The listeners and routes of the conformance test HTTPRouteHTTPSListenerDetectMisdirectedRequests.
    const names = ['example.org', 'second-example.org', '*.wildcard.org', 'unknown-example.org'];
    const cert = issueTestCertificate({ commonName: 'example.org', names, issuer: ca });
    await writeFile(join(dir, 'matrix.crt'), cert.cert);
    await writeFile(join(dir, 'matrix.key'), cert.key);
    const marked = (name: string, hostnames?: string[]) => ({ name, ...(hostnames ? { hostnames } : {}), backends: [{ host: up.host }], filters: [{ type: 'ResponseHeaderModifier', responseHeaderModifier: { set: [{ name: 'x-route', value: name }] } }] });
    const listener = (name: string, hostname: string | null, route: unknown) => ({ name, protocol: 'HTTPS', ...(hostname ? { hostname } : {}), tls: tls('matrix'), routes: [route] });
    const gw = await startGateway((port) => ({
      binds: [
        {
          port,
          address: '127.0.0.1',
          listeners: [
            listener('https', null, marked('r1', ['example.org'])),
            listener('https-with-hostname', 'second-example.org', marked('r2')),
            listener('https-with-wildcard-hostname', '*.wildcard.org', marked('r3')),
            listener('https-with-hostname-matching-wildcard', 'fourth-example.wildcard.org', marked('r4')),
          ],
        },
      ],
    }));
    cleanups.push(() => gw.close());
    const cases: [sni: string, host: string, status: number, route?: string][] = [
      ['example.org', 'example.org', 200, 'r1'],
      ['example.org', 'second-example.org', 421],
      ['example.org', 'unknown-example.org', 404],
      ['second-example.org', 'second-example.org', 200, 'r2'],
      ['second-example.org', 'example.org', 421],
      ['second-example.org', 'unknown-example.org', 421],
      ['third-example.wildcard.org', 'third-example.wildcard.org', 200, 'r3'],
      ['third-example.wildcard.org', 'fith-example.wildcard.org', 200, 'r3'],
      ['third-example.wildcard.org', 'fourth-example.wildcard.org', 421],
      ['third-example.wildcard.org', 'second-example.org', 421],
      ['third-example.wildcard.org', 'unknown-example.org', 421],
      ['fourth-example.wildcard.org', 'fourth-example.wildcard.org', 200, 'r4'],
      ['fourth-example.wildcard.org', 'fith-example.wildcard.org', 421],
      ['unknown-example.org', 'example.org', 200, 'r1'],
      ['unknown-example.org', 'unknown-example.org', 404],
    ];
    const got = [];
    for (const [sni, host] of cases) {
      const s = await session(gw, sni);
      const a = await request(s, { ':path': '/detect-misdirected-requests', ':authority': host });
      got.push([sni, host, a.status, a.headers['x-route']].filter((x) => x !== undefined));
      s.close();
    }
    expect(got).toEqual(cases);
  });

  it('a body over maxRequestBodyBytes on a metered route is refused 413 on its stream only: no connection header (HTTP/2 has none), the session carries on', async () => {
    const gw = await gateway({ maxRequestBodyBytes: 1024 });
    // node:http2 drops a connection header with a process warning: the refusal must not set one.
    const warnings: Error[] = [];
    const onWarning = (w: Error): void => void warnings.push(w);
    process.on('warning', onWarning);
    cleanups.push(async () => void process.off('warning', onWarning));
    const s = await session(gw, 'a.example');
    const { headers, rstCode } = await postUnfinishedBody(s, 'a.example');
    expect(headers[':status']).toBe(413);
    expect(headers['x-tollgate-error']).toBe('TG_REQUEST_BODY_TOO_LARGE');
    expect(rstCode).toBe(constants.NGHTTP2_NO_ERROR);
    expect(s.destroyed).toBe(false);
    expect((await request(s, { ':path': '/after', ':authority': 'a.example' })).status).toBe(200);
    expect(warnings.map((w) => `${w.name}: ${w.message}`)).toEqual([]);
  });

  it('the drain sends GOAWAY: a request in flight finishes whole, and the proxy stops', async () => {
    const held = await heldBackend();
    cleanups.push(() => held.up.close());
    const gw = await startGateway((port) => ({
      config: { drainTimeout: '10s', drainIdleTimeout: '0s' },
      binds: [{ port, address: '127.0.0.1', listeners: [{ name: 'a', protocol: 'HTTPS', hostname: 'a.example', tls: tls('a'), routes: [{ name: 'slow', backends: [{ host: held.up.host }] }] }] }],
    }));
    expect(await drainWithOneInFlight(await session(gw, 'a.example'), 'a.example', held, () => gw.close())).toMatchObject({ status: 200, body: 'late but whole' });
  });
});

describe('HTTP/1.1 on the same HTTPS listeners', () => {
  it('a client offering only http/1.1 in ALPN, or no ALPN, is served in HTTP/1.1; one offering neither h2 nor http/1.1 is refused in the handshake', async () => {
    const gw = await gateway();
    const handshake = (ALPNProtocols: string[] | undefined) =>
      new Promise<TLSSocket>((resolve, reject) => {
        const socket = connectTls({ host: '127.0.0.1', port: gw.port, servername: 'a.example', ca: ca.cert, ...(ALPNProtocols ? { ALPNProtocols } : {}) }, () => resolve(socket));
        socket.once('error', reject);
      });
    for (const offered of [['http/1.1'], undefined]) {
      const socket = await handshake(offered);
      cleanups.push(async () => void socket.destroy());
      expect(socket.alpnProtocol).toBe(offered ? 'http/1.1' : false);
      socket.write('GET /over-http1 HTTP/1.1\r\nhost: a.example\r\nconnection: close\r\n\r\n');
      let text = '';
      socket.on('data', (c: Buffer) => (text += c.toString()));
      await once(socket, 'end');
      expect(text).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
      expect(text).toContain('"/over-http1"');
    }
    await expect(handshake(['h3'])).rejects.toThrow(/no application protocol/);
    // node:https (no ALPN) on the same port, the 421 of HTTP/1.1 as before.
    const status = await new Promise<number>((resolve, reject) => {
      httpsRequest({ host: '127.0.0.1', port: gw.port, servername: 'a.example', ca: ca.cert, headers: { host: 'b.example' }, agent: false }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      })
        .on('error', reject)
        .end();
    });
    expect(status).toBe(421);
  });
});
