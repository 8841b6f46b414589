// extAuthz end to end over real sockets: the gRPC protocol against OPA with its Envoy plugin
// (a real process deciding with a Rego policy written here), the HTTP protocol against a plain
// node:http server, and services that misbehave (hang, close the connection, answer bytes that
// are not gRPC or HTTP, a CheckResponse that is not one, headers with CR/LF, huge bodies): a
// clear answer each time, nothing passed that should not be, and the proxy keeps serving.
import { once } from 'node:events';
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createTcpServer, type Server as TcpServer, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fileURLToPath } from 'node:url';
import pino from 'pino';
import { compileExtAuthz } from '../src/auth/ext-authz.js';
import { CHECK_PATH } from '../src/auth/ext-authz-proto.js';
import { ExtAuthzServices } from '../src/auth/ext-authz-services.js';
import type { AuthRequest } from '../src/auth/types.js';
import { loadConfigFile } from '../src/config/load-file.js';
import { closedAfterEach, echoed, send, simpleConfig, startGateway, startUpstream, type TestGateway, type Upstream } from './helpers.js';
import { envoyProtoAvailability, officialDecode, officialEncode } from './support/envoy-proto.js';
import { opaAvailability, startOpa, type Opa } from './support/opa-envoy.js';

const opa = opaAvailability();
const envoyProto = envoyProtoAvailability();

const POLICY = `
package envoy.authz

import rego.v1

http := input.attributes.request.http

default allow := {"allowed": false, "http_status": 403, "body": "denied by policy", "headers": {"x-denied-by": "opa"}}

allow := {"allowed": false, "http_status": 451, "body": "{\\"error\\":\\"blocked\\"}", "headers": {"content-type": "application/json", "x-reason": "blocked-path"}} if {
  startswith(http.path, "/g/blocked")
} else := {
  "allowed": true,
  "headers": {"x-opa-user": "checked", "x-seen": sprintf("%s %s %s %s size=%v", [http.method, http.path, http.host, http.protocol, object.get(http, "size", 0)])},
  "request_headers_to_remove": ["x-secret-hint"],
  "response_headers_to_add": {"x-authz": "opa"},
} if {
  http.method == "GET"
} else := {"allowed": true, "headers": {"x-opa-user": "team-a"}} if {
  http.method == "POST"
  http.headers["x-team"] == "a"
} else := {"allowed": true, "headers": {"x-model": input.parsed_body.model}} if {
  http.method == "PUT"
  not input.truncated_body
  input.parsed_body.model == "gpt-4o"
} else := {"allowed": true, "headers": {"x-truncated": "yes", "x-body-seen": http.body}} if {
  http.method == "PUT"
  input.truncated_body
}
`;

interface Listening {
  readonly address: string;
  close(): Promise<void>;
}

async function listen(server: Server | TcpServer): Promise<Listening> {
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  const sockets = new Set<Socket>();
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  return {
    address: `127.0.0.1:${port}`,
    close: async () => {
      for (const s of sockets) s.destroy();
      server.close();
      await once(server, 'close').catch(() => undefined);
    },
  };
}

/** A TCP server that does `onSocket` with each connection (hang, close, write garbage). */
const tcpService = (onSocket: (s: Socket) => void): Promise<Listening> => listen(createTcpServer(onSocket));

/** A gRPC server whose Check answers the bytes `reply()` gives (written by Envoy's own types, or garbage). */
async function rawGrpcService(reply: () => Buffer): Promise<Listening & { requests: Buffer[] }> {
  const server = new grpc.Server();
  const requests: Buffer[] = [];
  server.register(
    CHECK_PATH,
    (call: grpc.ServerUnaryCall<Buffer, Buffer>, cb: grpc.sendUnaryData<Buffer>) => {
      requests.push(call.request);
      cb(null, reply());
    },
    (b: Buffer) => b,
    (b: Buffer) => b,
    'unary',
  );
  const port = await new Promise<number>((resolve, reject) => server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))));
  return { address: `127.0.0.1:${port}`, requests, close: async () => void server.forceShutdown() };
}

const route = (name: string, prefix: string, upstream: Upstream, extAuthz: Record<string, unknown>) => ({
  name,
  matches: [{ path: { type: 'PathPrefix', value: prefix } }],
  policies: { traffic: { extAuthz } },
  backends: [{ host: upstream.host }],
});

/** An echoing upstream for the whole describe block (read it in tests, which run after beforeAll). */
function useUpstream(): () => Upstream {
  let upstream: Upstream | undefined;
  beforeAll(async () => {
    upstream = await startUpstream();
  });
  afterAll(async () => {
    await upstream?.close();
  });
  return () => upstream!;
}

const metricsText = async (gw: TestGateway): Promise<string> => (await fetch(`http://${gw.gateway.ops.metrics.address}/metrics`)).text();

function decisions(text: string, result: string, reason: string): number {
  const line = text.split('\n').find((l) => l.startsWith('tollgate_auth_decisions_total{') && l.includes('kind="extAuthz"') && l.includes(`result="${result}"`) && l.includes(`reason="${reason}"`));
  return line ? Number(line.split(' ').pop()) : 0;
}

describe.skipIf(!opa.run)('extAuthz gRPC against OPA with its Envoy plugin', () => {
  let service: Opa;
  let upstream: Upstream;
  let gw: TestGateway;

  beforeAll(async () => {
    service = await startOpa(POLICY, 'envoy/authz/allow');
    upstream = await startUpstream();
    const opaAuthz = { service: { host: service.grpcAddress }, timeout: '5s' };
    gw = await startGateway((port) =>
      simpleConfig(port, [
        route('grpc', '/g', upstream, opaAuthz),
        route('body', '/body', upstream, { ...opaAuthz, withBody: { maxBytes: 64 } }),
        route('partial', '/partial', upstream, { ...opaAuthz, withBody: { maxBytes: 16, allowPartial: true } }),
      ]),
    );
  });
  afterAll(async () => {
    await gw?.close();
    await upstream?.close();
    await service?.stop();
  });

  it('allows what the policy allows, with the headers it adds upstream and to the response, and the header it removes', async () => {
    const r = await send(`${gw.url}/g/items?limit=2`, { headers: { 'x-secret-hint': 'drop me', 'x-keep': 'kept' } });
    expect(r.status).toBe(200);
    expect(r.headers['x-authz']).toBe('opa');
    const seen = echoed(r);
    expect(seen.url).toBe('/g/items?limit=2');
    expect(seen.headers['x-opa-user']).toBe('checked');
    // What OPA read from the CheckRequest: method, path with the query, host, protocol, size
    // (0, which protojson leaves out).
    expect(seen.headers['x-seen']).toBe(`GET /g/items?limit=2 127.0.0.1:${gw.port} HTTP/1.1 size=0`);
    expect(seen.headers['x-secret-hint']).toBeUndefined();
    expect(seen.headers['x-keep']).toBe('kept');
  });

  it('decides on request headers: POST only with x-team: a; otherwise the denial OPA wrote, status, headers and body', async () => {
    const allowed = await send(`${gw.url}/g/chat`, { method: 'POST', headers: { 'x-team': 'a', 'content-type': 'application/json' }, body: '{}' });
    expect(allowed.status).toBe(200);
    expect(echoed(allowed).headers['x-opa-user']).toBe('team-a');

    const denied = await send(`${gw.url}/g/chat`, { method: 'POST', headers: { 'x-team': 'b' }, body: '{}' });
    expect(denied.status).toBe(403);
    expect(denied.body).toBe('denied by policy');
    expect(denied.headers['x-denied-by']).toBe('opa');
    expect(denied.headers['x-tollgate-error']).toBe('TG_FORBIDDEN');

    const blocked = await send(`${gw.url}/g/blocked`);
    expect(blocked.status).toBe(451);
    expect(blocked.headers['content-type']).toBe('application/json');
    expect(blocked.headers['x-reason']).toBe('blocked-path');
    expect(JSON.parse(blocked.body)).toEqual({ error: 'blocked' });

    const text = await metricsText(gw);
    expect(decisions(text, 'allow', 'allowed')).toBeGreaterThanOrEqual(2);
    expect(decisions(text, 'deny', 'denied')).toBeGreaterThanOrEqual(2);
  });

  it('sends the body up to withBody.maxBytes (OPA parses it); a longer one is 413 unless allowPartial, which cuts it and says so', async () => {
    const ok = await send(`${gw.url}/body`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: '{"model":"gpt-4o"}' });
    expect(ok.status).toBe(200);
    expect(echoed(ok).headers['x-model']).toBe('gpt-4o');
    expect(echoed(ok).body).toBe('{"model":"gpt-4o"}');

    const other = await send(`${gw.url}/body`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: '{"model":"gpt-3"}' });
    expect(other.status).toBe(403);

    const long = JSON.stringify({ model: 'gpt-4o', pad: 'x'.repeat(100) });
    const tooLong = await send(`${gw.url}/body`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: long });
    expect(tooLong.status).toBe(413);
    expect(tooLong.headers['x-tollgate-error']).toBe('TG_AUTHZ_BODY_TOO_LARGE');

    const cut = await send(`${gw.url}/partial`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: long });
    expect(cut.status).toBe(200);
    expect(echoed(cut).headers['x-truncated']).toBe('yes');
    expect(echoed(cut).headers['x-body-seen']).toBe(long.slice(0, 16));
    // The upstream gets the whole body.
    expect(echoed(cut).body).toBe(long);
  });
});

describe('extAuthz HTTP against a node:http service', () => {
  const cleanups = closedAfterEach();
  let upstream: Upstream;
  const seen: IncomingMessage[] = [];
  let authService: Listening;

  beforeAll(async () => {
    upstream = await startUpstream();
    authService = await listen(
      createHttpServer((req: IncomingMessage, res: ServerResponse) => {
        seen.push(req);
        req.resume();
        if (req.url!.startsWith('/auth/h/deny')) {
          res.writeHead(401, { 'www-authenticate': 'Basic realm="x"', 'x-extra': 'no', 'content-type': 'text/plain' });
          res.end('login first');
        } else if (req.url!.startsWith('/auth/h/huge-deny')) {
          res.writeHead(403, { 'content-type': 'text/plain' });
          res.end('z'.repeat(200 * 1024));
        } else if (req.url!.startsWith('/auth/h/huge-allow')) {
          // 200 and then a body that never ends: the decision is the status.
          res.writeHead(200, { 'x-auth-user': 'u-huge' });
          const chunk = Buffer.alloc(64 * 1024, 'a');
          const pump = (): void => {
            while (res.write(chunk));
          };
          res.on('drain', pump);
          pump();
        } else {
          res.writeHead(200, { 'x-auth-user': 'u1', 'x-other': 'not copied' });
          res.end('ok');
        }
      }),
    );
  });
  afterAll(async () => {
    await authService?.close();
    await upstream?.close();
  });

  const httpAuthz = (extra: Record<string, unknown> = {}) => ({
    service: { host: authService.address },
    protocol: 'HTTP',
    http: { pathPrefix: '/auth' },
    includeRequestHeaders: ['X-Team', 'Content-Type'],
    headersToUpstream: ['X-Auth-User'],
    headersToClient: ['WWW-Authenticate'],
    timeout: '5s',
    ...extra,
  });

  it('sends method, path with prefix and query, the chosen headers; 2xx allows with the chosen headers upstream; otherwise its status, headers and body', async () => {
    const gw = await startGateway((port) => simpleConfig(port, [route('h', '/h', upstream, httpAuthz({ withBody: { maxBytes: 1024 } }))]));
    cleanups.push(() => gw.close());
    seen.length = 0;

    const ok = await send(`${gw.url}/h/items?q=1`, { method: 'POST', headers: { 'x-team': 'a', authorization: 'Bearer not-for-the-service', 'content-type': 'text/plain' }, body: 'hello' });
    expect(ok.status).toBe(200);
    expect(echoed(ok).headers['x-auth-user']).toBe('u1');
    expect(echoed(ok).headers['x-other']).toBeUndefined();
    const req = seen[0]!;
    expect(req.method).toBe('POST');
    expect(req.url).toBe('/auth/h/items?q=1');
    expect(req.headers['x-team']).toBe('a');
    expect(req.headers.authorization).toBeUndefined();
    expect(req.headers['content-length']).toBe('5');

    const denied = await send(`${gw.url}/h/deny`, { headers: { 'x-team': 'a' } });
    expect(denied.status).toBe(401);
    expect(denied.headers['www-authenticate']).toBe('Basic realm="x"');
    expect(denied.headers['x-extra']).toBeUndefined();
    expect(denied.body).toBe('login first');
  });

  it('sends the consumer an earlier check established as x-tollgate-consumer(-group), never the client\'s own', async () => {
    const services = new ExtAuthzServices();
    cleanups.push(() => services.close());
    const check = compileExtAuthz(
      { service: authService.address, protocol: 'HTTP', pathPrefix: '/auth', includeRequestHeaders: null, headersToUpstream: [], headersToClient: null, withBody: null, timeoutMs: 5000, failureMode: 'FailClosed' },
      { log: pino({ level: 'silent' }), extAuthz: services },
    );
    const req: AuthRequest = {
      method: 'GET', path: '/h/who', query: '', host: 'gw', authority: 'gw', scheme: 'http', sourceAddress: '127.0.0.1', sourcePort: 1, model: null, body: null, bodyTooLarge: false, rawHeaders: [],
      headers: { 'x-tollgate-consumer': 'forged', 'x-tollgate-consumer-group': 'forged' },
      consumer: { name: 'alice', group: 'team-a', labels: {}, claims: null, via: 'apiKey', credentialId: 'k:0123abcd' },
    };
    seen.length = 0;
    expect(await check.run(req)).toMatchObject({ ok: true });
    expect([seen[0]!.headers['x-tollgate-consumer'], seen[0]!.headers['x-tollgate-consumer-group']]).toEqual(['alice', 'team-a']);
    expect(await check.run({ ...req, consumer: null })).toMatchObject({ ok: true });
    expect([seen[1]!.headers['x-tollgate-consumer'], seen[1]!.headers['x-tollgate-consumer-group']]).toEqual([undefined, undefined]);
  });

  it('a denial with a huge body keeps its status with the catalog body; a 200 with a body that never ends allows without reading it', async () => {
    const gw = await startGateway((port) => simpleConfig(port, [route('h', '/h', upstream, httpAuthz())]));
    cleanups.push(() => gw.close());
    const denied = await send(`${gw.url}/h/huge-deny`);
    expect(denied.status).toBe(403);
    expect(denied.body.length).toBeLessThan(1024);
    expect(denied.headers['x-tollgate-error']).toBe('TG_FORBIDDEN');

    const allowed = await send(`${gw.url}/h/huge-allow`);
    expect(allowed.status).toBe(200);
    expect(echoed(allowed).headers['x-auth-user']).toBe('u-huge');
  });
});

describe('extAuthz services that misbehave', () => {
  const cleanups = closedAfterEach();
  const upstream = useUpstream();

  async function gatewayFor(services: Record<string, { address: string; protocol: 'GRPC' | 'HTTP' }>, failureMode: 'FailOpen' | 'FailClosed'): Promise<TestGateway> {
    const routes = Object.entries(services).map(([name, s]) => route(name, `/${name}`, upstream(), { service: { host: s.address }, protocol: s.protocol, timeout: '300ms', failureMode }));
    const gw = await startGateway((port) => simpleConfig(port, [...routes, { name: 'open', matches: [{ path: { type: 'PathPrefix', value: '/open' } }], backends: [{ host: upstream().host }] }]));
    cleanups.push(() => gw.close());
    return gw;
  }

  async function misbehaving(): Promise<Record<string, { address: string; protocol: 'GRPC' | 'HTTP' }>> {
    const hang = await tcpService(() => {});
    const closes = await tcpService((s) => s.destroy());
    const garbage = await tcpService((s) => {
      s.on('error', () => {});
      s.end('this is not a protocol\r\n\r\n\u0000\u0001\u0002');
    });
    // A header line folded over two lines, and one with a bare CR in its value.
    const crlf = await tcpService((s) => {
      s.on('error', () => {});
      s.once('data', () => s.end('HTTP/1.1 200 OK\r\nx-auth-user: a\r\n injected: yes\r\nx-b: c\rd\r\ncontent-length: 0\r\n\r\n'));
    });
    const notACheckResponse = await rawGrpcService(() => Buffer.from([0xff, 0xff, 0xff, 0xff]));
    for (const s of [hang, closes, garbage, crlf, notACheckResponse]) cleanups.push(() => s.close());
    return {
      'grpc-hang': { address: hang.address, protocol: 'GRPC' },
      'http-hang': { address: hang.address, protocol: 'HTTP' },
      'grpc-closes': { address: closes.address, protocol: 'GRPC' },
      'http-closes': { address: closes.address, protocol: 'HTTP' },
      'grpc-garbage': { address: garbage.address, protocol: 'GRPC' },
      'http-garbage': { address: garbage.address, protocol: 'HTTP' },
      'http-crlf': { address: crlf.address, protocol: 'HTTP' },
      'grpc-undecodable': { address: notACheckResponse.address, protocol: 'GRPC' },
    };
  }

  it('FailClosed: 403 TG_AUTHZ_SERVICE_FAILED with the reason counted, and the proxy keeps serving', async () => {
    const services = await misbehaving();
    const gw = await gatewayFor(services, 'FailClosed');
    for (const name of Object.keys(services)) {
      const r = await send(`${gw.url}/${name}`);
      expect({ name, status: r.status, code: r.headers['x-tollgate-error'] }).toEqual({ name, status: 403, code: 'TG_AUTHZ_SERVICE_FAILED' });
      expect(r.body).toMatch(/the authorization service could not decide \((timeout|unavailable|bad_response)\)/);
    }
    expect(upstream().requests.filter((r) => r.url !== '/open')).toHaveLength(0);
    const text = await metricsText(gw);
    // The two hanging services can only time out; a service that closes or answers garbage is
    // unavailable or a bad answer, or, on a loaded machine, may reach the 300ms deadline first.
    // Every request is counted once, as one of the three.
    expect(decisions(text, 'deny', 'timeout')).toBeGreaterThanOrEqual(2);
    expect(decisions(text, 'deny', 'timeout') + decisions(text, 'deny', 'unavailable') + decisions(text, 'deny', 'bad_response')).toBe(Object.keys(services).length);
    expect((await send(`${gw.url}/open`)).status).toBe(200);
  });

  it('FailOpen: the request passes, counted as failed_open', async () => {
    const services = await misbehaving();
    const gw = await gatewayFor(services, 'FailOpen');
    for (const name of Object.keys(services)) {
      const r = await send(`${gw.url}/${name}`);
      expect({ name, status: r.status }).toEqual({ name, status: 200 });
      // Nothing of a bad answer applies: the folded and CR-carrying headers never reach the upstream.
      expect(echoed(r).headers['injected']).toBeUndefined();
      expect(echoed(r).headers['x-auth-user']).toBeUndefined();
    }
    expect(decisions(await metricsText(gw), 'allow', 'failed_open')).toBe(Object.keys(services).length);
  });
});

describe.skipIf(!envoyProto.run)("extAuthz gRPC answers written by Envoy's own types", () => {
  const cleanups = closedAfterEach();
  const upstream = useUpstream();

  const RESPONSE = 'envoy.service.auth.v3.CheckResponse';
  const REQUEST = 'envoy.service.auth.v3.CheckRequest';

  async function answering(response: unknown, extAuthz: Record<string, unknown> = {}): Promise<{ gw: TestGateway; requests: Buffer[] }> {
    const bytes = officialEncode(RESPONSE, response);
    const svc = await rawGrpcService(() => bytes);
    cleanups.push(() => svc.close());
    const gw = await startGateway((port) => simpleConfig(port, [route('r', '/r', upstream(), { service: { host: svc.address }, timeout: '5s', ...extAuthz })]));
    cleanups.push(() => gw.close());
    return { gw, requests: svc.requests };
  }

  it('sends a CheckRequest Envoy reads field for field: peers, method, headers, path, host, scheme, size, protocol, body', async () => {
    const { gw, requests } = await answering({ status: { code: 0 } }, { withBody: { maxBytes: 4 } });
    expect((await send(`${gw.url}/r/x?y=1`, { method: 'POST', headers: { 'x-a': 'b', 'content-type': 'text/plain' }, body: 'abc' })).status).toBe(200);
    const req = officialDecode(REQUEST, requests[0]!) as { attributes: { source: unknown; destination: unknown; request: { http: Record<string, unknown> } } };
    expect(req.attributes.source).toMatchObject({ address: { socket_address: { address: '127.0.0.1' } } });
    expect(req.attributes.destination).toEqual({ address: { socket_address: { address: '127.0.0.1', port_value: gw.port } } });
    const http = req.attributes.request.http;
    expect(http).toMatchObject({ method: 'POST', path: '/r/x?y=1', host: `127.0.0.1:${gw.port}`, scheme: 'http', size: '3', protocol: 'HTTP/1.1', body: 'abc' });
    expect(http.headers).toMatchObject({ 'x-a': 'b', 'content-type': 'text/plain', 'x-envoy-auth-partial-body': 'false' });
    expect(typeof http.id).toBe('string');
  });

  it('applies the OK response: append, overwrite and add-if-absent against the request, removals, response headers', async () => {
    const { gw } = await answering({
      status: { code: 0 },
      ok_response: {
        headers: [
          { header: { key: 'x-list', value: 'svc' }, append_action: 'APPEND_IF_EXISTS_OR_ADD' },
          { header: { key: 'x-over', value: 'svc' }, append: false },
          { header: { key: 'x-absent', value: 'svc' }, append_action: 'ADD_IF_ABSENT' },
          { header: { key: 'x-present', value: 'svc' }, append_action: 'ADD_IF_ABSENT' },
          { header: { key: 'x-only-if', value: 'svc' }, append_action: 'OVERWRITE_IF_EXISTS' },
          { header: { key: 'content-length', value: '999' } },
        ],
        headers_to_remove: ['x-drop', 'host'],
        response_headers_to_add: [{ header: { key: 'x-resp', value: 'r1' } }, { header: { key: 'x-tollgate-error', value: 'forged' } }],
      },
    });
    const r = await send(`${gw.url}/r`, { headers: { 'x-list': 'client', 'x-over': 'client', 'x-present': 'client', 'x-drop': 'client' } });
    expect(r.status).toBe(200);
    expect(r.headers['x-resp']).toBe('r1');
    expect(r.headers['x-tollgate-error']).toBeUndefined();
    const h = echoed(r).headers;
    expect(h).toMatchObject({ 'x-list': 'client, svc', 'x-over': 'svc', 'x-absent': 'svc', 'x-present': 'client', host: `127.0.0.1:${gw.port}` });
    expect(h['x-only-if']).toBeUndefined();
    expect(h['x-drop']).toBeUndefined();
    expect(h['content-length']).toBeUndefined();
  });

  it('a status other than OK without a denied_response is 403; a CheckResponse without a status or with CR/LF in a header is a bad answer', async () => {
    const plain = await answering({ status: { code: 7 } });
    const r = await send(`${plain.gw.url}/r`);
    expect(r.status).toBe(403);
    expect(r.headers['x-tollgate-error']).toBe('TG_FORBIDDEN');

    const empty = await answering({});
    const e = await send(`${empty.gw.url}/r`);
    expect([e.status, e.headers['x-tollgate-error']]).toEqual([403, 'TG_AUTHZ_SERVICE_FAILED']);

    const injected = await answering({ status: { code: 0 }, ok_response: { headers: [{ header: { key: 'x-a', value: 'ok\r\nx-injected: yes' } }] } }, { failureMode: 'FailOpen' });
    const i = await send(`${injected.gw.url}/r`);
    expect(i.status).toBe(200);
    expect(echoed(i).headers['x-a']).toBeUndefined();
    expect(echoed(i).headers['x-injected']).toBeUndefined();

    const deniedInjected = await answering({ status: { code: 7 }, denied_response: { status: { code: 401 }, headers: [{ header: { key: 'x-a', value: 'no\nx-injected: yes' } }] } });
    const d = await send(`${deniedInjected.gw.url}/r`);
    expect([d.status, d.headers['x-tollgate-error'], d.headers['x-injected']]).toEqual([403, 'TG_AUTHZ_SERVICE_FAILED', undefined]);
  });
});

describe('extAuthz config', () => {
  it.each([
    [{ service: { host: '127.0.0.1:1' }, headersToUpstream: ['x-a'] }, 'extAuthz.headersToUpstream: applies to protocol HTTP only'],
    [{ service: { host: '127.0.0.1:1' }, http: { pathPrefix: '/a' } }, 'extAuthz.http: applies to protocol HTTP only'],
    [{ service: { host: '127.0.0.1:1' }, timeout: '2m' }, 'extAuthz.timeout: got "2m": at most 60s'],
    [{ service: { backendRef: { name: 'authz', port: 9000 } } }, 'extAuthz.service.backendRef: is not available in a standalone config'],
  ])('refuses %j, naming the field', async (extAuthz, message) => {
    await expect(startGateway((port) => simpleConfig(port, [{ name: 'r', matches: [{ path: { type: 'PathPrefix', value: '/' } }], policies: { traffic: { extAuthz } }, backends: [{ host: '127.0.0.1:1' }] }]))).rejects.toThrow(message);
  });
});

describe('examples/auth-ext-authz.yaml', () => {
  it('loads, with the defaults written out and the route-level policy in place of the listener one', async () => {
    const loaded = await loadConfigFile(fileURLToPath(new URL('../../../examples/auth-ext-authz.yaml', import.meta.url)));
    const listener = loaded.snapshot.binds[0]!.listeners[0]!;
    expect(listener.policy?.extAuthz).toEqual({
      service: '127.0.0.1:9191',
      protocol: 'GRPC',
      pathPrefix: '',
      includeRequestHeaders: null,
      headersToUpstream: [],
      headersToClient: null,
      withBody: { maxBytes: 8192, allowPartial: true },
      timeoutMs: 250,
      failureMode: 'FailClosed',
    });
    const admin = listener.routes.find((r) => r.name === 'main/admin');
    expect(admin?.policy?.extAuthz).toMatchObject({ service: '127.0.0.1:9300', protocol: 'HTTP', pathPrefix: '/check', includeRequestHeaders: ['authorization', 'cookie'], headersToUpstream: ['x-user-id'], timeoutMs: 200 });
  });
});
