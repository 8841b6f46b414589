// gRPC to backends over TLS (protocol H2: HTTP/2 by ALPN): real grpc-js servers with TLS
// credentials from a CA made here (a good certificate, one of another name, one of an unknown
// CA, one that requires a client certificate), a real grpc-js client in front of the gateway.
// Besides: an HTTP request to an HTTP/2-over-TLS backend, and backends that do not pick h2 (an
// HTTPS server offering only http/1.1, a TLS server without ALPN), which fail the call rather
// than getting HTTP/1.1.
import * as grpc from '@grpc/grpc-js';
import { once } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createSecureServer, type Http2SecureServer } from 'node:http2';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createServer as createTlsServer, type Server as TlsServer } from 'node:tls';
import { validateStandaloneConfig } from '@tollgate/api';
import { issueTestCertificate, type TestCertificate } from '@tollgate/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfigFile } from '../src/config/load-file.js';
import { send, simpleConfig, startGateway, startUpstream, type TestGateway, type Upstream } from './helpers.js';
import { metricValue } from './support/gateway-files.js';
import { FAIL, HOLD, STREAM, UNARY, grpcCall, startGrpcBackend, type CallOptions, type GrpcBackend, type Msg } from './support/grpc-peers.js';

const ca = issueTestCertificate({ commonName: 'grpc-ca', ca: true });
const otherCa = issueTestCertificate({ commonName: 'other-ca', ca: true });
const clientCa = issueTestCertificate({ commonName: 'client-ca', ca: true });
const CERTS = {
  good: issueTestCertificate({ commonName: 'grpc.internal', names: ['grpc.internal'], issuer: ca }),
  wrongName: issueTestCertificate({ commonName: 'other.internal', names: ['other.internal'], issuer: ca }),
  untrusted: issueTestCertificate({ commonName: 'grpc.internal', names: ['grpc.internal'], issuer: otherCa }),
};
const client = issueTestCertificate({ commonName: 'tollgate-proxy', issuer: clientCa });

function serverCredentials(c: TestCertificate, clientCaPem?: string): grpc.ServerCredentials {
  return grpc.ServerCredentials.createSsl(clientCaPem ? Buffer.from(clientCaPem) : null, [{ private_key: Buffer.from(c.key), cert_chain: Buffer.from(c.cert) }], clientCaPem !== undefined);
}

let dir: string;
let gw: TestGateway;
const grpcs: Record<string, GrpcBackend> = {};
let h1Alpn: Upstream;
let noAlpn: TlsServer;
let noAlpnRequests = 0;
let h2Http: Http2SecureServer;

function route(name: string, host: string, tls: Record<string, unknown> = {}, extra: Record<string, unknown> = {}) {
  return { name, matches: [{ headers: [{ name: 'x-backend', value: name }] }], backends: [{ host, protocol: 'H2', tls: { caFile: join(dir, 'ca.pem'), hostname: 'grpc.internal', ...tls } }], ...extra };
}

const portOf = (s: { address(): AddressInfo | string | null }) => `127.0.0.1:${(s.address() as AddressInfo).port}`;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tollgate-grpc-tls-'));
  await writeFile(join(dir, 'ca.pem'), ca.cert);
  await writeFile(join(dir, 'client.crt'), client.cert);
  await writeFile(join(dir, 'client.key'), client.key);
  grpcs.good = await startGrpcBackend('tls', serverCredentials(CERTS.good));
  grpcs.wrongName = await startGrpcBackend('wrong-name', serverCredentials(CERTS.wrongName));
  grpcs.untrusted = await startGrpcBackend('untrusted', serverCredentials(CERTS.untrusted));
  grpcs.mtls = await startGrpcBackend('mtls', serverCredentials(CERTS.good, clientCa.cert));
  // Node's HTTPS server offers ALPN http/1.1 alone.
  h1Alpn = await startUpstream(undefined, { tls: CERTS.good });
  // A TLS server that negotiates no ALPN protocol at all and would answer HTTP/1.1.
  noAlpn = createTlsServer({ cert: CERTS.good.cert, key: CERTS.good.key }, (socket) => {
    socket.once('data', () => {
      noAlpnRequests++;
      socket.end('HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nh1');
    });
  });
  noAlpn.listen(0, '127.0.0.1');
  await once(noAlpn, 'listening');
  h2Http = createSecureServer({ cert: CERTS.good.cert, key: CERTS.good.key }, (req, res) => {
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ httpVersion: req.httpVersion, path: req.url, host: req.headers[':authority'] ?? req.headers.host }));
  });
  h2Http.listen(0, '127.0.0.1');
  await once(h2Http, 'listening');
  const clientCertificate = { certFile: join(dir, 'client.crt'), keyFile: join(dir, 'client.key') };
  gw = await startGateway((port) =>
    simpleConfig(port, [
      route('good', grpcs.good!.host),
      route('short', grpcs.good!.host, {}, { timeouts: { request: '200ms' } }),
      route('wrong-name', grpcs.wrongName!.host, {}, { retry: { attempts: 3, codes: [502, 503] } }),
      route('untrusted', grpcs.untrusted!.host),
      route('mtls', grpcs.mtls!.host, { clientCertificate }),
      route('mtls-none', grpcs.mtls!.host),
      route('h1-alpn', h1Alpn.host, {}, { retry: { attempts: 3, codes: [502, 503] } }),
      route('no-alpn', portOf(noAlpn)),
      { name: 'http', matches: [{ path: { value: '/http' } }], backends: [{ host: portOf(h2Http), protocol: 'H2', tls: { caFile: join(dir, 'ca.pem'), hostname: 'grpc.internal' } }] },
    ]),
  );
});

afterAll(async () => {
  await gw?.close();
  await Promise.all(Object.values(grpcs).map((b) => b.close()));
  await h1Alpn?.close();
  noAlpn?.close();
  h2Http?.close();
  await rm(dir, { recursive: true, force: true });
});

const call = (backend: string, path: string, request: Msg, opts: CallOptions = {}) => grpcCall(gw.port, path, request, { ...opts, metadata: { 'x-backend': backend, ...opts.metadata } });
const attempts = (routeName: string, host: string, outcome: string) => metricValue(gw, `tollgate_upstream_attempts_total{route="main/${routeName}",backend="${host}",outcome="${outcome}"}`);

describe('gRPC to a backend over TLS (HTTP/2 by ALPN)', () => {
  it('passes a unary call and a server-streaming call: metadata in, messages, trailers and status out', async () => {
    const unary = await call('good', UNARY, { text: 'hello' }, { metadata: { 'x-client': 'one' } });
    expect(unary.code).toBe(grpc.status.OK);
    expect(unary.messages).toEqual([expect.objectContaining({ text: 'hello', server: 'tls' })]);
    expect(unary.messages[0]!.headers!['x-client']).toBe('one');
    expect(unary.trailers['x-trailer']).toBe('from-tls');
    const streamed = await call('good', STREAM, { text: '4' }, { streaming: true });
    expect(streamed.code).toBe(grpc.status.OK);
    expect(streamed.messages.map((m) => m.text)).toEqual(['part 0', 'part 1', 'part 2', 'part 3']);
  });

  it("relays the backend's error status, message and trailing metadata", async () => {
    const r = await call('good', FAIL, { text: 'x' });
    expect(r.code).toBe(grpc.status.NOT_FOUND);
    expect(r.details).toBe('no such thing: 100%');
    expect(r.trailers['x-why']).toBe('missing');
  });

  it("ends a call at the route's deadline with DEADLINE_EXCEEDED from the gateway; the client's deadline reaches the backend", async () => {
    const byRoute = await call('short', HOLD, { text: 'wait' }, { deadlineMs: 3_600_000 });
    expect(byRoute.code).toBe(grpc.status.DEADLINE_EXCEEDED);
    expect(byRoute.headers['x-tollgate-error']).toBe('TG_REQUEST_TIMEOUT');
    // grpc-timeout goes on to the backend over TLS: it ends the call itself (its own status, no gateway code).
    const held = grpcs.good!.calls.length;
    const byClient = await call('good', HOLD, { text: 'wait' }, { deadlineMs: 300 });
    expect(byClient.code).toBe(grpc.status.DEADLINE_EXCEEDED);
    expect(grpcs.good!.calls.slice(held)).toEqual([HOLD]);
    expect(Number.isFinite(grpcs.good!.holdDeadlines.at(-1))).toBe(true);
  });

  it('presents the client certificate to a backend that requires one; without one the call is UNAVAILABLE (TG_UPSTREAM_TLS)', async () => {
    const ok = await call('mtls', UNARY, { text: 'm' });
    expect(ok.code).toBe(grpc.status.OK);
    expect(ok.messages[0]!.server).toBe('mtls');
    const refused = await call('mtls-none', UNARY, { text: 'm' });
    expect(refused.code).toBe(grpc.status.UNAVAILABLE);
    expect(refused.headers['x-tollgate-error']).toBe('TG_UPSTREAM_TLS');
  });

  it('an HTTP request (not gRPC) goes over the same HTTP/2-over-TLS connection kind', async () => {
    const r = await send(`${gw.url}/http/x`, { headers: { host: 'api.example.com' } });
    expect(r.status).toBe(200);
    expect(JSON.parse(r.body)).toEqual({ httpVersion: '2.0', path: '/http/x', host: 'api.example.com' });
  });
});

describe('a certificate that does not verify: UNAVAILABLE, counted as TG_UPSTREAM_CERTIFICATE, not retried', () => {
  for (const [name, key] of [['wrong-name', 'wrongName'], ['untrusted', 'untrusted']] as const) {
    it(name, async () => {
      const before = grpcs[key]!.calls.length;
      const r = await call(name, UNARY, { text: 'x' });
      expect(r.code).toBe(grpc.status.UNAVAILABLE);
      expect(r.details).toContain('upstream certificate did not verify');
      expect(r.headers['x-tollgate-error']).toBe('TG_UPSTREAM_CERTIFICATE');
      // One attempt, though the wrong-name route retries 502 and 503 three times.
      expect(await attempts(name, grpcs[key]!.host, 'TG_UPSTREAM_CERTIFICATE')).toBe(1);
      expect(grpcs[key]!.calls.length).toBe(before);
    });
  }
});

describe('a TLS backend that does not pick h2 fails the call (TG_UPSTREAM_NO_H2, UNAVAILABLE), never HTTP/1.1', () => {
  it('an HTTPS server offering ALPN http/1.1 only', async () => {
    const r = await call('h1-alpn', UNARY, { text: 'x' });
    expect(r.code).toBe(grpc.status.UNAVAILABLE);
    expect(r.headers['x-tollgate-error']).toBe('TG_UPSTREAM_NO_H2');
    expect(r.details).toContain('upstream did not negotiate HTTP/2 over TLS');
    expect(h1Alpn.requests).toHaveLength(0);
    expect(await attempts('h1-alpn', h1Alpn.host, 'TG_UPSTREAM_NO_H2')).toBe(1);
  });

  it('a TLS server without ALPN', async () => {
    const r = await call('no-alpn', UNARY, { text: 'x' });
    expect(r.code).toBe(grpc.status.UNAVAILABLE);
    expect(r.headers['x-tollgate-error']).toBe('TG_UPSTREAM_NO_H2');
    expect(noAlpnRequests).toBe(0);
  });

  it('the gateway keeps serving the good backend', async () => {
    expect((await call('good', UNARY, { text: 'after' })).code).toBe(grpc.status.OK);
  });
});

describe('standalone protocol H2 and H2C with tls: refused naming the field and the fix', () => {
  const config = (backend: Record<string, unknown>) => simpleConfig(8080, [{ name: 'r', backends: [{ host: '10.0.0.1:443', ...backend }] }]);
  it('H2 without tls', () => {
    expect(() => validateStandaloneConfig(config({ protocol: 'H2' }), 'config.yaml')).toThrow(/routes\[0\]\.backends\[0\]\.protocol: H2 is HTTP\/2 over TLS and needs tls; add tls/);
  });
  it('H2C with tls', () => {
    expect(() => validateStandaloneConfig(config({ protocol: 'H2C', tls: {} }), 'config.yaml')).toThrow(/routes\[0\]\.backends\[0\]\.protocol: H2C is HTTP\/2 over cleartext and cannot go with tls; set protocol: H2/);
  });
  it('H2 with tls is valid', () => {
    expect(validateStandaloneConfig(config({ protocol: 'H2', tls: {} }), 'config.yaml').binds[0]!.listeners[0]!.routes[0]!.backends![0]!.protocol).toBe('H2');
  });
});

describe('examples/grpc.yaml', () => {
  it('loads: h2c backends, and the payments route over HTTP/2 with TLS', async () => {
    const loaded = await loadConfigFile(fileURLToPath(new URL('../../../examples/grpc.yaml', import.meta.url)));
    const routes = loaded.snapshot.binds[0]!.listeners[0]!.routes;
    expect(routes.find((r) => r.name === 'grpc/health')!.backends[0]).toMatchObject({ kind: 'static', protocol: 'h2c' });
    expect(routes.find((r) => r.name === 'grpc/payments')!.backends[0]).toMatchObject({ kind: 'static', protocol: 'h2', tls: { hostname: 'payments.internal', caCertificates: null } });
  });
});
