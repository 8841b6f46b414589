// Client certificates on HTTPS listeners, over real TLS sockets with certificates issued in the
// test: AllowValidOnly closes the connection of a client without a certificate of the
// listener's CAs (none, another CA's, an expired one, over TLS 1.3 and 1.2); AllowInsecureFallback
// serves every client but only a verified certificate is an identity; the verified subject and
// SANs reach authorization rules, keyed budgets and the trace (never the certificate); a
// connection made for a listener that checks nothing cannot reach one that does; a reload that
// changes a listener's CAs stops old connections from serving it; a CA file that is garbage is
// refused and the last good config keeps serving.
import { once } from 'node:events';
import { connect as connectHttp2, type ClientHttp2Session } from 'node:http2';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { Agent, request, type RequestOptions } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TLSSocket } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { issueTestCertificate, type TestCertificate } from '@tollgate/testkit';
import { Secret, withVersion } from '@tollgate/api';
import { compileSnapshot } from '../src/routing/compile.js';
import { openTrace, send, startGateway, startUpstream, type TestGateway, type Upstream } from './helpers.js';
import { h2Request } from './support/http2-client.js';

interface Answer {
  readonly status: number;
  readonly body: string;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly socket: TLSSocket;
}

interface Call {
  readonly host: string;
  /** SNI; '' sends none. Default: the host. */
  readonly servername?: string;
  readonly client?: TestCertificate;
  readonly path?: string;
  readonly agent?: Agent;
  readonly maxVersion?: 'TLSv1.2' | 'TLSv1.3';
}

function get(port: number, c: Call): Promise<Answer> {
  const o: RequestOptions = {
    host: '127.0.0.1',
    port,
    path: c.path ?? '/',
    headers: { host: c.host },
    servername: c.servername ?? c.host,
    agent: c.agent ?? false,
    ca: serverCa.cert,
    checkServerIdentity: () => undefined,
    ...(c.client ? { cert: c.client.cert, key: c.client.key } : {}),
    ...(c.maxVersion ? { maxVersion: c.maxVersion } : {}),
  };
  return new Promise((resolve, reject) => {
    const req = request(o, (res) => {
      const socket = res.socket as TLSSocket;
      const chunks: Buffer[] = [];
      res.on('data', (b: Buffer) => chunks.push(b));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString(), headers: res.headers, socket }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

/** The request fails at the transport (the proxy closed the connection): no HTTP answer. */
async function refused(port: number, c: Call): Promise<string> {
  const err = await get(port, c).then(
    (r) => {
      throw new Error(`expected the connection to be closed, got ${r.status} ${r.body}`);
    },
    (e: NodeJS.ErrnoException) => e,
  );
  return err.code ?? err.message;
}

const serverCa = issueTestCertificate({ commonName: 'tollgate-test-server-ca', ca: true });
const clientCa = issueTestCertificate({ commonName: 'tollgate-test-client-ca', ca: true });
const otherCa = issueTestCertificate({ commonName: 'someone-else-ca', ca: true });
const serverCert = (name: string) => issueTestCertificate({ commonName: name, names: [name], issuer: serverCa });
const clients = {
  teamA: issueTestCertificate({ commonName: 'team-a', names: ['team-a.clients.test'], uris: ['spiffe://tollgate.test/team-a'], issuer: clientCa }),
  teamB: issueTestCertificate({ commonName: 'team-b', uris: ['spiffe://tollgate.test/team-b'], issuer: clientCa }),
  // Same subject as team-a, signed by a CA the listeners do not trust.
  forged: issueTestCertificate({ commonName: 'team-a', uris: ['spiffe://tollgate.test/team-a'], issuer: otherCa }),
  expired: issueTestCertificate({ commonName: 'team-a', issuer: clientCa, notBefore: new Date(Date.now() - 3 * 86_400_000), notAfter: new Date(Date.now() - 86_400_000) }),
  // Valid, of the other CA: what a listener trusting otherCa takes.
  ofOther: issueTestCertificate({ commonName: 'team-c', issuer: otherCa }),
};

let dir: string;
let up: Upstream;
let gw: TestGateway;
let port: number;

const files = (name: string) => ({ certificates: [{ certFile: join(dir, `${name}.crt`), keyFile: join(dir, `${name}.key`) }] });
const ruleRoute = (name: string, prefix: string, expression: string) => ({
  name,
  matches: [{ path: { type: 'PathPrefix', value: prefix } }],
  policies: { traffic: { authorization: { rules: [{ name, action: 'Allow', expression }] } } },
  backends: [{ host: up.host }],
});
const plainRoute = (name: string) => ({ name, backends: [{ host: up.host }], filters: [{ type: 'ResponseHeaderModifier', responseHeaderModifier: { set: [{ name: 'x-route', value: name }] } }] });

/** `strictCa`: the CA file of the strict listener. */
function config(p: number, strictCa = 'client-ca.pem', extra: Record<string, unknown> = {}) {
  return {
    // The refusals of client certificates are logged at debug.
    config: { logLevel: 'debug' },
    binds: [
      {
        port: p,
        address: '127.0.0.1',
        listeners: [
          // First and without hostname: the listener of clients that send no SNI.
          { name: 'plain', protocol: 'HTTPS', tls: files('plain'), routes: [plainRoute('plain')], ...extra },
          {
            name: 'strict',
            protocol: 'HTTPS',
            hostname: 'strict.test',
            tls: { ...files('strict'), clientValidation: { caFile: join(dir, strictCa) } },
            routes: [
              ruleRoute('team-a-only', '/team-a', 'connection.subject == "CN=team-a" && "spiffe://tollgate.test/team-a" in connection.uriSans'),
              {
                name: 'budget',
                matches: [{ path: { type: 'PathPrefix', value: '/budget' } }],
                policies: { traffic: { rateLimit: { local: [{ requests: 1, unit: 'Hours', by: { type: 'ClientCertificate' } }] } } },
                backends: [{ host: up.host }],
              },
              plainRoute('strict'),
            ],
          },
          {
            name: 'open',
            protocol: 'HTTPS',
            hostname: 'open.test',
            tls: { ...files('open'), clientValidation: { caFile: join(dir, 'client-ca.pem'), mode: 'AllowInsecureFallback' } },
            routes: [ruleRoute('verified-only', '/verified', 'connection.verified'), plainRoute('open')],
          },
        ],
      },
    ],
  };
}

beforeAll(async () => {
  up = await startUpstream();
  dir = await mkdtemp(join(tmpdir(), 'tollgate-mtls-'));
  for (const name of ['plain', 'strict', 'open']) {
    const c = serverCert(name === 'plain' ? 'plain.test' : `${name}.test`);
    await writeFile(join(dir, `${name}.crt`), c.cert);
    await writeFile(join(dir, `${name}.key`), c.key);
  }
  await writeFile(join(dir, 'client-ca.pem'), clientCa.cert);
  await writeFile(join(dir, 'other-ca.pem'), otherCa.cert);
  gw = await startGateway((p) => config(p));
  port = gw.port;
});

afterAll(async () => {
  await gw?.close();
  await up?.close();
  await rm(dir, { recursive: true, force: true });
});

async function metric(name: string): Promise<number> {
  const text = (await send(`http://${gw.gateway.ops.metrics.address}/metrics`)).body;
  return Number(new RegExp(`^${name.replace(/[{}"]/g, (c) => `\\${c}`)} (\\d+)`, 'm').exec(text)?.[1] ?? 0);
}

describe('AllowValidOnly', () => {
  it('serves a client whose certificate the listener\'s CA signed', async () => {
    const seen = up.requests.length;
    const r = await get(port, { host: 'strict.test', client: clients.teamA });
    expect([r.status, r.headers['x-route']]).toEqual([200, 'strict']);
    expect(up.requests.length).toBe(seen + 1);
  });

  for (const maxVersion of ['TLSv1.3', 'TLSv1.2'] as const) {
    it(`closes the connection of a client without a certificate, with one of another CA, and with an expired one (${maxVersion})`, async () => {
      const seen = up.requests.length;
      const before = await metric('tollgate_client_certificate_checks_total{result="refused"}');
      for (const client of [undefined, clients.forged, clients.expired, clients.ofOther]) {
        await refused(port, { host: 'strict.test', client, maxVersion });
      }
      // None of them reached a backend.
      expect(up.requests.length).toBe(seen);
      expect(await metric('tollgate_client_certificate_checks_total{result="refused"}')).toBe(before + 4);
      const log = await gw.logs.waitFor((l) => l.msg === 'client certificate refused: the connection is closed' && (l as { reason?: string }).reason === 'CERT_HAS_EXPIRED');
      expect(log).toMatchObject({ listener: 'strict', subject: 'CN=team-a' });
    });
  }

  it('asks for no certificate on a listener of the same port that checks none', async () => {
    const r = await get(port, { host: 'plain.test' });
    expect([r.status, r.headers['x-route']]).toEqual([200, 'plain']);
  });
});

describe('a connection made for a listener that checks less', () => {
  it('does not serve the hosts of a listener that checks client certificates (421, connection closed)', async () => {
    const seen = up.requests.length;
    // No SNI: the handshake is the default listener's (plain), which asks for no certificate.
    const none = await get(port, { host: 'strict.test', servername: '' });
    expect([none.status, none.headers['x-tollgate-error'], none.headers.connection]).toEqual([421, 'TG_CLIENT_CERTIFICATE_NOT_CHECKED', 'close']);
    expect(none.body).toContain('listener strict checks client certificates; the handshake was made for listener plain, which checks no client certificate');
    // With a certificate the default listener did not check either.
    expect((await get(port, { host: 'strict.test', servername: '', client: clients.teamA })).status).toBe(421);
    // SNI of the fallback listener: the SNI and Host disagree (421 as for any two listeners).
    expect((await get(port, { host: 'strict.test', servername: 'open.test', client: clients.teamA })).headers['x-tollgate-error']).toBe('TG_MISDIRECTED_REQUEST');
    expect(up.requests.length).toBe(seen);
  });
});

describe('AllowInsecureFallback', () => {
  it('serves clients without a certificate or with one that does not verify, and rules see only a verified one', async () => {
    for (const client of [undefined, clients.forged, clients.expired, clients.teamA]) {
      expect((await get(port, { host: 'open.test', client })).headers['x-route']).toBe('open');
      const rule = await get(port, { host: 'open.test', client, path: '/verified' });
      expect(rule.status).toBe(client === clients.teamA ? 200 : 403);
    }
    expect(await metric('tollgate_client_certificate_checks_total{result="unverified"}')).toBeGreaterThanOrEqual(6);
  });
});

describe('the verified certificate in rules, budgets and the trace', () => {
  it('authorization rules read the subject and the URI SANs', async () => {
    expect((await get(port, { host: 'strict.test', client: clients.teamA, path: '/team-a' })).status).toBe(200);
    const b = await get(port, { host: 'strict.test', client: clients.teamB, path: '/team-a' });
    expect([b.status, b.headers['x-tollgate-error']]).toEqual([403, 'TG_FORBIDDEN']);
  });

  it('a ClientCertificate key keeps one budget per verified subject', async () => {
    expect((await get(port, { host: 'strict.test', client: clients.teamA, path: '/budget' })).status).toBe(200);
    expect((await get(port, { host: 'strict.test', client: clients.teamA, path: '/budget' })).status).toBe(429);
    expect((await get(port, { host: 'strict.test', client: clients.teamB, path: '/budget' })).status).toBe(200);
    const view = JSON.parse((await send(`${gw.adminUrl}/budgets`)).body) as { budgets: { by: string; key: string | null; used: number }[] };
    const rows = view.budgets.filter((r) => r.by === 'client_certificate').map((r) => [r.key, r.used]);
    expect(rows.sort()).toEqual([
      ['CN=team-a', 1],
      ['CN=team-b', 1],
    ]);
  });

  it('the trace shows the certificate\'s subject, names and fingerprint, never the certificate', async () => {
    const trace = await openTrace(gw.adminUrl);
    await trace.armed;
    expect((await get(port, { host: 'strict.test', client: clients.teamA })).status).toBe(200);
    const events = await trace.events;
    const snapshot = events.find((e) => e.message.type === 'requestSnapshot')!.message as { requestState: { clientCertificate?: Record<string, unknown> } };
    expect(snapshot.requestState.clientCertificate).toMatchObject({
      verified: true,
      error: null,
      subject: 'CN=team-a',
      issuer: 'CN=tollgate-test-client-ca',
      dnsSans: ['team-a.clients.test'],
      uriSans: ['spiffe://tollgate.test/team-a'],
    });
    const text = JSON.stringify(events);
    expect(text).not.toContain('BEGIN CERTIFICATE');
    expect(text).not.toContain(clients.teamA.cert.split('\n')[1]!.slice(0, 40));
  });

  it('config_dump shows the listener\'s mode and CAs, not the bundle', async () => {
    const text = (await send(`${gw.adminUrl}/config_dump`)).body;
    const dump = JSON.parse(text) as { listeners: { name: string; tls?: { clientValidation?: { mode: string; origins: string[]; caCertificates: { subject: string }[] } } }[] };
    expect(dump.listeners.find((l) => l.name === 'strict')!.tls!.clientValidation).toMatchObject({
      mode: 'AllowValidOnly',
      origins: [`file ${join(dir, 'client-ca.pem')}`],
      caCertificates: [{ subject: 'CN=tollgate-test-client-ca' }],
    });
    expect(dump.listeners.find((l) => l.name === 'plain')!.tls!.clientValidation).toBeUndefined();
    expect(text).not.toContain('BEGIN CERTIFICATE');
  });
});

describe('reloads', () => {
  it('a garbage CA file is refused naming the field, and the last good config keeps serving', async () => {
    await writeFile(join(dir, 'garbage.pem'), 'this is not a certificate\n');
    expect(await gw.rewrite(config(port, 'garbage.pem'))).toBe('refused');
    expect(gw.gateway.source.state().lastError).toContain('binds[0].listeners[1].tls.clientValidation.caFile: file ');
    expect(gw.gateway.source.state().lastError).toContain('holds no PEM certificate');
    // A PEM block whose body is not a certificate (another file: garbage.pem is watched now).
    await writeFile(join(dir, 'garbage-block.pem'), '-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydGlmaWNhdGU=\n-----END CERTIFICATE-----\n');
    expect(await gw.rewrite(config(port, 'garbage-block.pem'))).toBe('refused');
    expect(gw.gateway.source.state().lastError).toContain('certificate 1 of the bundle is not a valid PEM certificate');
    expect((await get(port, { host: 'strict.test', client: clients.teamA })).status).toBe(200);
    await refused(port, { host: 'strict.test', client: clients.ofOther });
  });

  it('new CAs apply to new connections; a kept-alive connection verified by the old ones gets 421 and is closed', async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1, ca: serverCa.cert, checkServerIdentity: () => undefined, cert: clients.teamA.cert, key: clients.teamA.key });
    try {
      const first = await get(port, { host: 'strict.test', agent });
      expect(first.status).toBe(200);
      expect(await gw.rewrite(config(port, 'other-ca.pem'))).toBe('reloaded');
      const again = await get(port, { host: 'strict.test', agent });
      expect(again.socket).toBe(first.socket);
      expect([again.status, again.headers['x-tollgate-error']]).toEqual([421, 'TG_CLIENT_CERTIFICATE_NOT_CHECKED']);
      expect(again.body).toContain('the listener\'s client validation changed since the handshake');
      if (!first.socket.destroyed) await once(first.socket, 'close');
      // New connections: the old CA's certificates are refused, the new CA's served.
      await refused(port, { host: 'strict.test', client: clients.teamA });
      expect((await get(port, { host: 'strict.test', client: clients.ofOther })).status).toBe(200);
    } finally {
      agent.destroy();
    }
  });

  it('an edit of the CA file applies without a config change', async () => {
    expect(await gw.rewrite(config(port))).toBe('reloaded');
    expect((await get(port, { host: 'strict.test', client: clients.teamA })).status).toBe(200);
    const reloaded = once(gw.gateway.source, 'reloaded');
    await writeFile(join(dir, 'client-ca.pem'), otherCa.cert);
    await reloaded;
    await refused(port, { host: 'strict.test', client: clients.teamA });
    expect((await get(port, { host: 'strict.test', client: clients.ofOther })).status).toBe(200);
    const back = once(gw.gateway.source, 'reloaded');
    await writeFile(join(dir, 'client-ca.pem'), clientCa.cert);
    await back;
    expect((await get(port, { host: 'strict.test', client: clients.teamA })).status).toBe(200);
  });

  it('validation turned on for a listener stops a kept-alive connection made without it', async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1, ca: serverCa.cert, checkServerIdentity: () => undefined });
    try {
      const first = await get(port, { host: 'plain.test', agent });
      expect(first.status).toBe(200);
      const cfg = config(port);
      (cfg.binds[0]!.listeners[0]!.tls as Record<string, unknown>).clientValidation = { caFile: join(dir, 'client-ca.pem') };
      expect(await gw.rewrite(cfg)).toBe('reloaded');
      const again = await get(port, { host: 'plain.test', agent });
      expect(again.socket).toBe(first.socket);
      expect(again.status).toBe(421);
      await refused(port, { host: 'plain.test' });
      expect((await get(port, { host: 'plain.test', client: clients.teamB })).status).toBe(200);
    } finally {
      agent.destroy();
      expect(await gw.rewrite(config(port))).toBe('reloaded');
    }
  });
});

describe('standalone config checks', () => {
  it('refuses clientValidation on an HTTP listener, an unknown mode and a missing file', async () => {
    const base = (listener: Record<string, unknown>) => ({ binds: [{ port: 1, address: '127.0.0.1', listeners: [{ name: 'l', routes: [], ...listener }] }] });
    const check = async (cfg: unknown, expected: string) => {
      expect(await gw.rewrite(cfg)).toBe('refused');
      expect(gw.gateway.source.state().lastError).toContain(expected);
    };
    await check(base({ protocol: 'HTTPS', tls: { ...files('plain'), clientValidation: { caFile: join(dir, 'client-ca.pem'), mode: 'Sometimes' } } }), 'binds[0].listeners[0].tls.clientValidation.mode');
    await check(base({ protocol: 'HTTPS', tls: { ...files('plain'), clientValidation: { caFile: join(dir, 'nope.pem') } } }), `binds[0].listeners[0].tls.clientValidation.caFile: cannot read ${join(dir, 'nope.pem')}: no such file`);
    await check(base({ protocol: 'HTTP', tls: { ...files('plain'), clientValidation: { caFile: join(dir, 'client-ca.pem') } } }), 'binds[0].listeners[0].tls: is set on an HTTP listener');
    expect((await get(port, { host: 'strict.test', client: clients.teamA })).status).toBe(200);
  });
});

describe('a snapshot whose client CA bundle is garbage (one that skipped validation)', () => {
  it('is refused by the compile naming the listener, whatever node:tls would take silently', () => {
    const pair = serverCert('api.test');
    const snapshot = (caCertificates: string) =>
      withVersion({
        source: { kind: 'controller', gateway: 'default/gw' },
        binds: [
          {
            port: 8443,
            address: '0.0.0.0',
            listeners: [
              {
                name: 'default/gw/https',
                protocol: 'HTTPS',
                hostname: null,
                tls: { mode: 'Terminate', certificates: [{ origin: { kind: 'Secret', namespace: 'default', name: 'tls' }, certificate: pair.cert, key: new Secret(pair.key) }], clientValidation: { caCertificates, mode: 'AllowValidOnly', origins: ['ConfigMap default/ca'] } },
                policy: null,
                routes: [],
              },
            ],
          },
        ],
      });
    expect(() => compileSnapshot(snapshot('garbage'))).toThrow(/listener default\/gw\/https: the client CA certificates cannot be used: the CA bundle \(ConfigMap default\/ca\) holds no PEM certificate/);
    expect(compileSnapshot(snapshot(clientCa.cert)).binds.get(8443)!.tls!.validation.get('default/gw/https')!.ir.mode).toBe('AllowValidOnly');
  });
});

describe('over HTTP/2 (ALPN h2)', () => {
  /** An h2 session with SNI `servername` ('' sends none), presenting `client`. */
  async function h2Session(servername: string, client?: TestCertificate): Promise<ClientHttp2Session> {
    const s = connectHttp2(`https://127.0.0.1:${port}`, { ca: serverCa.cert, servername, checkServerIdentity: () => undefined, ...(client ? { cert: client.cert, key: client.key } : {}) });
    s.on('error', () => undefined);
    await once(s, 'connect');
    return s;
  }

  it('rules read the verified subject of the connection; a client the listener refuses gets no session', async () => {
    const a = await h2Session('strict.test', clients.teamA);
    expect(a.alpnProtocol).toBe('h2');
    expect((await h2Request(a, { ':path': '/team-a', ':authority': 'strict.test' })).status).toBe(200);
    a.close();
    const b = await h2Session('strict.test', clients.teamB);
    const denied = await h2Request(b, { ':path': '/team-a', ':authority': 'strict.test' });
    expect([denied.status, denied.headers['x-tollgate-error']]).toEqual([403, 'TG_FORBIDDEN']);
    b.close();
    const seen = up.requests.length;
    const forged = connectHttp2(`https://127.0.0.1:${port}`, { ca: serverCa.cert, servername: 'strict.test', checkServerIdentity: () => undefined, cert: clients.forged.cert, key: clients.forged.key });
    forged.on('error', () => undefined);
    const stream = forged.request({ ':path': '/', ':authority': 'strict.test' });
    stream.on('error', () => undefined);
    let answered = false;
    stream.on('response', () => (answered = true));
    await once(forged, 'close');
    expect(answered).toBe(false);
    expect(up.requests.length).toBe(seen);
  });

  it('a session made for a listener that checks none gets 421 for the hosts of one that does, on that stream only', async () => {
    const s = await h2Session('', clients.teamA);
    const none = await h2Request(s, { ':path': '/', ':authority': 'strict.test' });
    expect([none.status, none.headers['x-tollgate-error'], none.headers.connection]).toEqual([421, 'TG_CLIENT_CERTIFICATE_NOT_CHECKED', undefined]);
    expect(s.destroyed).toBe(false);
    const plain = await h2Request(s, { ':path': '/', ':authority': 'plain.test' });
    expect([plain.status, plain.headers['x-route']]).toEqual([200, 'plain']);
    s.close();
  });
});
