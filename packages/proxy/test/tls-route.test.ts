// TLS binds over real sockets: a Passthrough listener routes each connection by the server
// name of its ClientHello and pipes the client's own TLS to a TLS backend (the client verifies
// the backend's certificate through the proxy, which holds no key for it); a Terminate listener
// completes the handshake with its own certificate and pipes the plaintext. Connections with
// no server name, an unknown one, no ClientHello at all, or bytes that are not one are closed
// and counted.
import { once } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createConnection, createServer as createTcpServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect as tlsConnect, createServer as createTlsServer, type TLSSocket } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { issueTestCertificate } from '@tollgate/testkit';
import { deadline } from '../src/tls-stream/tls-server.js';
import { startGateway, type TestGateway } from './helpers.js';

const ca = issueTestCertificate({ commonName: 'tollgate-test-ca', ca: true });
const certs = {
  a: issueTestCertificate({ commonName: 'a.example.com', names: ['a.example.com'], issuer: ca }),
  wild: issueTestCertificate({ commonName: '*.w.example.com', names: ['*.w.example.com'], issuer: ca }),
  gateway: issueTestCertificate({ commonName: 't.example.com', names: ['t.example.com'], issuer: ca }),
};

let dir: string;
let gw: TestGateway;
const servers: Server[] = [];
/** The passthrough listener of the gateways here. */
let passthrough: Record<string, unknown>;

/** A server on a free loopback port that answers each chunk with `<tag>:<chunk>`. */
async function echo(tag: string, tls?: { cert: string; key: string }): Promise<number> {
  const answer = (s: Socket): void => {
    s.on('data', (d: Buffer) => s.write(`${tag}:${d.toString()}`));
    s.on('error', () => {});
  };
  const server = tls ? createTlsServer({ cert: tls.cert, key: tls.key }, answer) : createTcpServer(answer);
  servers.push(server);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return (server.address() as { port: number }).port;
}

/** A TLS client through the gateway; resolves with the certificate it verified and the answer to `hello`. */
async function exchange(servername: string, anyName = false): Promise<{ cn: string; fingerprint: string; answer: string }> {
  // anyName: the chain is verified, not the name (a wildcard certificate covers one label; a wildcard route any number).
  const socket = tlsConnect({ host: '127.0.0.1', port: gw.port, servername, ca: ca.cert, ...(anyName ? { checkServerIdentity: () => undefined } : {}) });
  await once(socket, 'secureConnect');
  const peer = socket.getPeerCertificate();
  socket.write('hello');
  const [data] = (await once(socket, 'data')) as [Buffer];
  socket.end();
  return { cn: String(peer.subject.CN), fingerprint: peer.fingerprint256, answer: data.toString() };
}

/** Resolves when the gateway closes the connection, with whether a TLS session was ever set up. */
async function closedBeforeHandshake(socket: TLSSocket | Socket): Promise<boolean> {
  let secure = false;
  socket.on('secureConnect', () => (secure = true));
  socket.on('error', () => {});
  // Not events.once: it rejects on the 'error' a reset brings.
  await new Promise((resolve) => socket.on('close', resolve));
  return !secure;
}

async function tlsCount(outcome: string, of = gw): Promise<number> {
  const text = await (await fetch(`http://${of.gateway.ops.metrics.address}/metrics`)).text();
  let n = 0;
  for (const m of text.matchAll(/^tollgate_tls_connections_total\{([^}]*)\} (\d+)$/gm)) if (m[1]!.includes(`outcome="${outcome}"`)) n += Number(m[2]);
  return n;
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tollgate-tlsroute-'));
  await writeFile(join(dir, 'gw.crt'), certs.gateway.cert);
  await writeFile(join(dir, 'gw.key'), certs.gateway.key);
  const a = await echo('A', certs.a);
  const wild = await echo('W', certs.wild);
  const plain = await echo('P');
  passthrough = {
    name: 'pass',
    hostname: '*.example.com',
    tls: { mode: 'Passthrough' },
    routes: [
      { name: 'a', hostnames: ['a.example.com'], backends: [{ host: `127.0.0.1:${a}` }] },
      { name: 'w', hostnames: ['*.w.example.com'], backends: [{ host: `127.0.0.1:${wild}` }, { host: `127.0.0.1:${a}`, weight: 0 }] },
    ],
  };
  // The default tlsClientHelloTimeout: the test clients run in this process, and a loaded
  // machine can hold them past a short one between connect and the end of their handshake.
  gw = await startGateway((port) => ({
    binds: [],
    tlsBinds: [
      {
        port,
        address: '127.0.0.1',
        listeners: [
          passthrough,
          {
            name: 'term',
            hostname: 't.example.com',
            tls: { mode: 'Terminate', certificates: [{ certFile: join(dir, 'gw.crt'), keyFile: join(dir, 'gw.key') }] },
            routes: [{ name: 't', backends: [{ host: `127.0.0.1:${plain}` }] }],
          },
        ],
      },
    ],
  }));
});

afterAll(async () => {
  await gw?.close();
  for (const s of servers) s.close();
  await rm(dir, { recursive: true, force: true });
});

describe('Passthrough', () => {
  it('pipes the client\'s TLS to the backend: the client verifies the backend\'s own certificate', async () => {
    const r = await exchange('a.example.com');
    expect(r.fingerprint).toBe(new (await import('node:crypto')).X509Certificate(certs.a.cert).fingerprint256);
    expect(r.answer).toBe('A:hello');
  });

  it('routes by wildcard hostname, and a backend of weight 0 gets nothing', async () => {
    for (const name of ['x.w.example.com', 'y.z.w.example.com']) {
      const r = await exchange(name, true);
      expect([r.cn, r.answer]).toEqual(['*.w.example.com', 'W:hello']);
    }
  });
});

describe('Terminate', () => {
  it('completes the handshake with the listener certificate and pipes the plaintext', async () => {
    const r = await exchange('t.example.com');
    expect([r.cn, r.answer]).toEqual(['t.example.com', 'P:hello']);
  });
});

describe('connections that route nowhere are closed and counted', () => {
  it('a ClientHello without a server name', async () => {
    const before = await tlsCount('no_sni');
    expect(await closedBeforeHandshake(tlsConnect({ host: '127.0.0.1', port: gw.port, servername: '', rejectUnauthorized: false }))).toBe(true);
    expect(await tlsCount('no_sni')).toBe(before + 1);
  });

  it('a server name no listener or route serves', async () => {
    const before = await tlsCount('no_route');
    for (const servername of ['nobody.test', 'example.com'])
      expect(await closedBeforeHandshake(tlsConnect({ host: '127.0.0.1', port: gw.port, servername, rejectUnauthorized: false }))).toBe(true);
    expect(await tlsCount('no_route')).toBe(before + 2);
  });

  it('a client that never sends a ClientHello, after config.tlsClientHelloTimeout', async () => {
    // A gateway of its own with a short timeout, so the test does not wait long; the close is
    // awaited, not timed. Only this client, which sends nothing, meets the timeout.
    const silent = await startGateway((port) => ({ config: { tlsClientHelloTimeout: '200ms' }, binds: [], tlsBinds: [{ port, address: '127.0.0.1', listeners: [passthrough] }] }));
    try {
      const socket = createConnection({ host: '127.0.0.1', port: silent.port });
      await once(socket, 'connect');
      expect(await closedBeforeHandshake(socket)).toBe(true);
      expect(await tlsCount('hello_timeout', silent)).toBe(1);
    } finally {
      await silent.close();
    }
  });

  it('bytes that are not a ClientHello: plain HTTP, a record over 16 KiB, a megabyte of garbage', async () => {
    const before = await tlsCount('not_tls');
    // A record announcing 64 KiB: refused once 16 KiB are read, not waited on until the timeout.
    const oversized = Buffer.concat([Buffer.from([22, 3, 1, 0xff, 0xff]), Buffer.alloc(17_000, 1)]);
    const announced = Buffer.concat([Buffer.from([22, 3, 1, 0x40, 0x00, 1, 0xff, 0xff, 0xff]), Buffer.alloc(16_380, 0)]);
    for (const bytes of [Buffer.from('GET / HTTP/1.1\r\nhost: a.example.com\r\n\r\n'), oversized, announced, Buffer.alloc(1 << 20, 0x16)]) {
      const socket = createConnection({ host: '127.0.0.1', port: gw.port });
      socket.on('error', () => {});
      socket.write(bytes);
      expect(await closedBeforeHandshake(socket)).toBe(true);
    }
    expect(await tlsCount('not_tls')).toBe(before + 4);
  });
});

describe('the ClientHello deadline', () => {
  it('counts bytes that arrived in time, however late a busy loop reads them', async () => {
    const server = createTcpServer();
    servers.push(server);
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const client = createConnection({ host: '127.0.0.1', port: (server.address() as { port: number }).port });
    const [accepted] = (await once(server, 'connection')) as [Socket];
    const outcome = await new Promise<string>((resolve) => {
      let clear = (): void => {};
      accepted.on('data', () => {
        clear();
        resolve('read');
      });
      client.write('hello', () => {
        // The bytes are in the socket, unread; the loop is held past the deadline before it
        // reads them, so the deadline's timer is due before the loop's next read.
        clear = deadline(1, () => resolve('expired'));
        const until = performance.now() + 20;
        while (performance.now() < until);
      });
    });
    client.destroy();
    accepted.destroy();
    expect(outcome).toBe('read');
  });
});
