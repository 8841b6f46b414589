// HTTPS listeners over real TLS sockets: the certificate a ClientHello gets is chosen by its
// SNI name (exact over wildcard, the catch-all listener's for no or an unknown name), a Host
// served by another listener than the SNI chose answers 421, certificates swap on reload
// without cutting an open connection, and the key never leaves the process.
import { X509Certificate } from 'node:crypto';
import { once } from 'node:events';
import { createConnection } from 'node:net';
import { mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import { Agent, request, type RequestOptions } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TLSSocket } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { issueTestCertificate, type TestCertificate } from '@tollgate/testkit';
import { startGateway, startUpstream, type TestGateway, type Upstream } from './helpers.js';

interface Answer {
  status: number;
  body: string;
  headers: Record<string, string | string[] | undefined>;
  /** CN of the certificate the server presented. */
  cn: string;
  fingerprint: string;
  socket: TLSSocket;
}

function get(port: number, opts: { servername?: string; host: string; path?: string; ca?: string; agent?: Agent }): Promise<Answer> {
  const o: RequestOptions = {
    host: '127.0.0.1',
    port,
    path: opts.path ?? '/',
    headers: { host: opts.host },
    // '' sends no SNI at all.
    servername: opts.servername ?? '',
    agent: opts.agent ?? false,
    ...(opts.ca ? { ca: opts.ca, checkServerIdentity: () => undefined } : { rejectUnauthorized: false }),
  };
  return new Promise((resolve, reject) => {
    const req = request(o, (res) => {
      const socket = res.socket as TLSSocket;
      const peer = socket.getPeerCertificate();
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString(), headers: res.headers, cn: String(peer.subject?.CN), fingerprint: peer.fingerprint256, socket }));
    });
    req.on('error', reject);
    req.end();
  });
}

const ca = issueTestCertificate({ commonName: 'tollgate-test-ca', ca: true });
const certs = {
  fallback: issueTestCertificate({ commonName: 'default.test', names: ['default.test'], issuer: ca }),
  a: issueTestCertificate({ commonName: 'a.example.com', names: ['a.example.com'], issuer: ca }),
  wild: issueTestCertificate({ commonName: '*.w.example.com', names: ['*.w.example.com'], issuer: ca }),
  exact: issueTestCertificate({ commonName: 'x.w.example.com', names: ['x.w.example.com'], issuer: ca }),
};

let dir: string;
let up: Upstream;
let gw: TestGateway;
let port: number;

async function writePair(name: string, c: TestCertificate): Promise<void> {
  await writeFile(join(dir, `${name}.crt`), c.cert);
  await writeFile(join(dir, `${name}.key`), c.key);
}

const files = (name: string) => ({ certificates: [{ certFile: `${name}.crt`, keyFile: `${name}.key` }] });
const route = (name: string) => ({ name, backends: [{ host: up.host }], filters: [{ type: 'ResponseHeaderModifier', responseHeaderModifier: { set: [{ name: 'x-route', value: name }] } }] });

function config(p: number) {
  return {
    binds: [
      {
        port: p,
        address: '127.0.0.1',
        listeners: [
          { name: 'any', protocol: 'HTTPS', tls: files('fallback'), routes: [route('any')] },
          { name: 'a', protocol: 'HTTPS', hostname: 'a.example.com', tls: files('a'), routes: [route('a')] },
          { name: 'wild', protocol: 'HTTPS', hostname: '*.w.example.com', tls: files('wild'), routes: [route('wild')] },
          { name: 'exact', protocol: 'HTTPS', hostname: 'x.w.example.com', tls: files('exact'), routes: [route('exact')] },
        ],
      },
    ],
  };
}

beforeAll(async () => {
  up = await startUpstream();
  // The gateway's config sits in its own temp dir; certificate paths are made absolute below.
  dir = await mkdtemp(join(tmpdir(), 'tollgate-tls-'));
  for (const [name, c] of Object.entries(certs)) await writePair(name, c);
  const absolute = (n: string) => ({ certificates: [{ certFile: join(dir, `${n}.crt`), keyFile: join(dir, `${n}.key`) }] });
  gw = await startGateway((p) => {
    const cfg = config(p);
    for (const l of cfg.binds[0]!.listeners) l.tls = absolute(l.name === 'any' ? 'fallback' : l.name);
    return cfg;
  });
  port = gw.port;
});

afterAll(async () => {
  await gw?.close();
  await up?.close();
  await rm(dir, { recursive: true, force: true });
});

describe('SNI picks the certificate', () => {
  it('serves the listener of an exact name, verified against the issuing CA', async () => {
    const r = await get(port, { servername: 'a.example.com', host: 'a.example.com', ca: ca.cert });
    expect(r.status).toBe(200);
    expect(r.cn).toBe('a.example.com');
    expect(r.headers['x-route']).toBe('a');
    // The backend learns the client came over TLS.
    expect((JSON.parse(r.body) as { headers: Record<string, string> }).headers['x-forwarded-proto']).toBe('https');
  });

  it('prefers an exact name over a wildcard that also matches it', async () => {
    expect((await get(port, { servername: 'x.w.example.com', host: 'x.w.example.com' })).cn).toBe('x.w.example.com');
    const wild = await get(port, { servername: 'y.w.example.com', host: 'y.w.example.com' });
    expect([wild.cn, wild.headers['x-route']]).toEqual(['*.w.example.com', 'wild']);
  });

  it('gives a client without SNI, or with an unknown name, the catch-all listener certificate', async () => {
    const none = await get(port, { host: 'a.example.com' });
    expect(none.cn).toBe('default.test');
    // No name was asked for: the Host alone routes.
    expect(none.headers['x-route']).toBe('a');
    const unknown = await get(port, { servername: 'nobody.test', host: 'nobody.test' });
    expect([unknown.cn, unknown.status, unknown.headers['x-route']]).toEqual(['default.test', 200, 'any']);
  });
});

describe('a Host served by another listener than the SNI chose', () => {
  it('answers 421 Misdirected Request', async () => {
    const seen = up.requests.length;
    const r = await get(port, { servername: 'a.example.com', host: 'y.w.example.com' });
    expect(r.status).toBe(421);
    expect(r.body).toBe('misdirected request: the Host is served by another listener than the TLS server name: the TLS server name a.example.com selects listener a; host y.w.example.com is served by listener wild');
    expect(up.requests.length).toBe(seen);
    // The wildcard listener's connection may not serve the exact listener's host either.
    expect((await get(port, { servername: 'y.w.example.com', host: 'x.w.example.com' })).status).toBe(421);
    // ...nor a host only the catch-all listener serves.
    expect((await get(port, { servername: 'a.example.com', host: 'nobody.test' })).status).toBe(421);
  });

  it('routes a Host of the same listener', async () => {
    const r = await get(port, { servername: 'y.w.example.com', host: 'z.w.example.com' });
    expect([r.status, r.headers['x-route']]).toEqual([200, 'wild']);
  });
});

describe('config_dump', () => {
  it('shows each certificate subject, names and validity, and no key material', async () => {
    const text = await (await fetch(`${gw.adminUrl}/config_dump`)).text();
    const dump = JSON.parse(text) as { listeners: { name: string; protocol: string; tls?: { mode: string; certificates: { subject: string; sans: string[]; notAfter: string; origin: { kind: string; certFile: string } }[] } }[] };
    const a = dump.listeners.find((l) => l.name === 'a')!;
    expect(a.protocol).toBe('HTTPS');
    expect(a.tls!.mode).toBe('Terminate');
    expect(a.tls!.certificates[0]).toMatchObject({ subject: 'CN=a.example.com', sans: ['a.example.com'], origin: { kind: 'config', certFile: join(dir, 'a.crt') } });
    expect(Date.parse(a.tls!.certificates[0]!.notAfter)).toBeGreaterThan(Date.now());
    expect(text).not.toContain('PRIVATE KEY');
    for (const c of Object.values(certs)) {
      const keyBody = c.key.split('\n').slice(1, -2).join('');
      expect(text).not.toContain(keyBody.slice(0, 40));
    }
  });
});

describe('certificate renewal', () => {
  it('renewed files are served to new connections to new connections while an open connection keeps going', async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1, rejectUnauthorized: false });
    try {
      const first = await get(port, { servername: 'a.example.com', host: 'a.example.com', agent });
      expect(first.status).toBe(200);
      const renewed = issueTestCertificate({ commonName: 'a.example.com', names: ['a.example.com'], issuer: ca });
      // Same config text: the replaced files are seen and read again.
      const applied = once(gw.gateway.source, 'reloaded');
      await writePair('a', renewed);
      await applied;
      const again = await get(port, { servername: 'a.example.com', host: 'a.example.com', agent });
      expect(again.status).toBe(200);
      // The same TLS connection, still with the old certificate.
      expect(again.socket).toBe(first.socket);
      expect(again.fingerprint).toBe(first.fingerprint);
      const fresh = await get(port, { servername: 'a.example.com', host: 'a.example.com' });
      expect(fresh.fingerprint).not.toBe(first.fingerprint);
      expect(fresh.fingerprint.replace(/:/g, '')).toBe(new X509Certificate(renewed.cert).fingerprint256.replace(/:/g, ''));
      // A reload with nothing new is reported unchanged.
      expect(await gw.gateway.source.reload()).toBe('unchanged');
    } finally {
      agent.destroy();
    }
  });

  it('swaps the default certificate of clients without SNI', async () => {
    const before = await get(port, { host: 'nobody.test' });
    const renewed = issueTestCertificate({ commonName: 'default.test', names: ['default.test'], issuer: ca });
    const applied = once(gw.gateway.source, 'reloaded');
    await writePair('fallback', renewed);
    await applied;
    const after = await get(port, { host: 'nobody.test' });
    expect(after.cn).toBe('default.test');
    expect(after.fingerprint).not.toBe(before.fingerprint);
  });
});

describe('certificate files replaced on disk', () => {
  it('a renewed certificate is served without a reload; a half-written one is refused naming the file and the last good one keeps serving', async () => {
    const before = await get(port, { host: 'nobody.test' });
    // Half a PEM file, as a writer that truncates and writes in pieces leaves it for a moment.
    const renewed = issueTestCertificate({ commonName: 'default.test', names: ['default.test'], issuer: ca });
    const refused = once(gw.gateway.source, 'refused');
    await writeFile(join(dir, 'fallback.crt'), renewed.cert.slice(0, renewed.cert.length >> 1));
    const [err] = (await refused) as [Error];
    expect(err.message).toContain(`binds[0].listeners[0].tls.certificates[0].certFile: ${join(dir, 'fallback.crt')}`);
    expect(gw.gateway.source.state().lastError).toBe(err.message);
    expect(gw.logs.messages().some((m) => m.startsWith('config reload refused after a file it names changed') && m.includes(join(dir, 'fallback.crt')))).toBe(true);
    expect((await get(port, { host: 'nobody.test' })).fingerprint).toBe(before.fingerprint);

    // The whole pair replaced (renamed into place, as certbot and Kubernetes Secret volumes do).
    const reloaded = once(gw.gateway.source, 'reloaded');
    for (const [ext, pem] of [['crt', renewed.cert], ['key', renewed.key]] as const) {
      await writeFile(join(dir, `fallback.${ext}.new`), pem);
      await rename(join(dir, `fallback.${ext}.new`), join(dir, `fallback.${ext}`));
    }
    await reloaded;
    const after = await get(port, { host: 'nobody.test' });
    expect(after.cn).toBe('default.test');
    expect(after.fingerprint).toBe(new X509Certificate(renewed.cert).fingerprint256);
    expect(gw.gateway.source.state().lastError).toBeNull();
  });
});

describe('standalone tls validation', () => {
  // Every config below is refused before anything binds: the port is never listened on.
  const p = 1;
  const base = (listener: Record<string, unknown>) => ({ binds: [{ port: p, address: '127.0.0.1', listeners: [{ name: 'l', protocol: 'HTTPS', routes: [], ...listener }] }] });

  it('names the field of an unreadable file, a key of another certificate, a missing tls and a mixed bind', async () => {
    const check = async (cfg: unknown, expected: string) => {
      expect(await gw.rewrite(cfg)).toBe('refused');
      expect(gw.gateway.source.state().lastError).toContain(expected);
    };
    await check(base({ tls: { certificates: [{ certFile: join(dir, 'missing.crt'), keyFile: join(dir, 'a.key') }] } }), `binds[0].listeners[0].tls.certificates[0].certFile: cannot read ${join(dir, 'missing.crt')}: no such file`);
    await check(base({ tls: { certificates: [{ certFile: join(dir, 'exact.crt'), keyFile: join(dir, 'a.key') }] } }), 'binds[0].listeners[0].tls.certificates[0].keyFile');
    expect(gw.gateway.source.state().lastError).toContain('does not belong to the certificate');
    await check(base({}), 'binds[0].listeners[0].tls: required field is missing');
    await check(
      { binds: [{ port: p, listeners: [{ name: 'l', protocol: 'HTTPS', tls: files('a'), routes: [] }, { name: 'm', protocol: 'HTTP', hostname: 'm.test', routes: [] }] }] },
      'binds[0].listeners[1].protocol: got HTTP; every listener on port',
    );
    await check(base({ tls: { certificates: [{ certFile: join(dir, 'a.key'), keyFile: join(dir, 'a.key') }] } }), 'holds no PEM certificate');
    // The previous config kept serving through all of it.
    expect((await get(port, { servername: 'a.example.com', host: 'a.example.com' })).status).toBe(200);
  });

  it('serves an expired certificate with a warning naming it', async () => {
    const expired = issueTestCertificate({ commonName: 'old.test', notBefore: new Date('2020-01-01T00:00:00Z'), notAfter: new Date('2021-01-01T00:00:00Z') });
    await writePair('old', expired);
    const cfg = config(port);
    for (const l of cfg.binds[0]!.listeners) l.tls = { certificates: [{ certFile: join(dir, `${l.name === 'any' ? 'old' : l.name}.crt`), keyFile: join(dir, `${l.name === 'any' ? 'old' : l.name}.key`) }] };
    expect(await gw.rewrite(cfg)).toBe('reloaded');
    const warning = await gw.logs.waitFor((l) => l.msg.includes('expired'));
    expect(warning.msg).toBe('binds[0].listeners[0].tls.certificates[0].certFile: certificate CN=old.test expired at 2021-01-01T00:00:00.000Z; clients will refuse it until it is renewed');
    expect((await get(port, { host: 'nobody.test' })).cn).toBe('old.test');
  });
});

describe('a port that changes protocol', () => {
  it('reopens as plain HTTP and back as HTTPS', async () => {
    const plain = { binds: [{ port, address: '127.0.0.1', listeners: [{ name: 'plain', protocol: 'HTTP', routes: [route('plain')] }] }] };
    expect(await gw.rewrite(plain)).toBe('reloaded');
    const r = await fetch(`http://127.0.0.1:${port}/`);
    expect(r.headers.get('x-route')).toBe('plain');
    const back = config(port);
    for (const l of back.binds[0]!.listeners) l.tls = { certificates: [{ certFile: join(dir, `${l.name === 'any' ? 'fallback' : l.name}.crt`), keyFile: join(dir, `${l.name === 'any' ? 'fallback' : l.name}.key`) }] };
    expect(await gw.rewrite(back)).toBe('reloaded');
    expect((await get(port, { servername: 'a.example.com', host: 'a.example.com' })).headers['x-route']).toBe('a');
  });
});

describe('a protocol switch that cannot be applied whole', () => {
  it('is refused and the old server keeps its port, HTTPS to HTTP and HTTP to HTTPS', async () => {
    const blocker = await startUpstream();
    try {
      const taken = { port: blocker.port, address: '127.0.0.1', listeners: [{ name: 'taken', protocol: 'HTTP', routes: [route('taken')] }] };
      const plainBind = { port, address: '127.0.0.1', listeners: [{ name: 'plain', protocol: 'HTTP', routes: [route('plain')] }] };
      const tlsConfig = config(port);
      for (const l of tlsConfig.binds[0]!.listeners) l.tls = { certificates: [{ certFile: join(dir, `${l.name === 'any' ? 'fallback' : l.name}.crt`), keyFile: join(dir, `${l.name === 'any' ? 'fallback' : l.name}.key`) }] };

      // HTTPS serving; the new config turns the port to HTTP and adds a port someone holds.
      expect(await gw.rewrite({ binds: [plainBind, taken] })).toBe('refused');
      expect(gw.gateway.source.state().lastError).toContain(`${blocker.port}`);
      expect((await get(port, { servername: 'a.example.com', host: 'a.example.com' })).headers['x-route']).toBe('a');

      // The same the other way round.
      expect(await gw.rewrite({ binds: [plainBind] })).toBe('reloaded');
      expect(await gw.rewrite({ binds: [tlsConfig.binds[0], taken] })).toBe('refused');
      expect((await fetch(`http://127.0.0.1:${port}/`)).headers.get('x-route')).toBe('plain');

      expect(await gw.rewrite(tlsConfig)).toBe('reloaded');
      expect((await get(port, { servername: 'a.example.com', host: 'a.example.com' })).headers['x-route']).toBe('a');
    } finally {
      await blocker.close();
    }
  });
});

describe('a client that never finishes the TLS handshake', () => {
  it('is disconnected after config.requestHeadersTimeout, as one that never sends its headers', async () => {
    const g = await startGateway((p) => ({
      config: { requestHeadersTimeout: '300ms' },
      binds: [{ port: p, address: '127.0.0.1', listeners: [{ name: 'l', protocol: 'HTTPS', tls: { certificates: [{ certFile: join(dir, 'a.crt'), keyFile: join(dir, 'a.key') }] }, routes: [] }] }],
    }));
    try {
      // A TCP connection that sends no ClientHello at all.
      const socket = createConnection({ host: '127.0.0.1', port: g.port });
      await once(socket, 'connect');
      await once(socket, 'close');
      expect(socket.bytesRead).toBe(0);
    } finally {
      await g.close();
    }
  });
});
