// An HTTPS listener from Kubernetes objects to a TLS handshake: translate() reads a Gateway and
// its kubernetes.io/tls Secret, the snapshot travels over the controller's real stream server
// to a proxy in cluster mode, and the proxy serves the Secret's certificate; a renewed Secret
// is a new snapshot whose certificate the next connection gets. The key is redacted in the
// proxy's config dump on the way.
import { X509Certificate } from 'node:crypto';
import { connect } from 'node:tls';
import { SnapshotStore, SnapshotStreamServer, StreamMetrics, translate, type Gateway, type GatewayClass, type Resources } from '@tollgate/controller';
import { issueTestCertificate, until, type TestCertificate } from '@tollgate/testkit';
import pino from 'pino';
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { startClusterProxy } from '../src/process/cluster.js';
import { LogSink, onFreePort, send } from './helpers.js';
import { streamTls } from './support/stream-tls.js';

const GATEWAY = 'edge/public';
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

const meta = (name: string, namespace?: string) => ({ name, ...(namespace ? { namespace } : {}), generation: 1, creationTimestamp: '2026-01-01T00:00:00Z' });

function resources(port: number, pair: TestCertificate): Resources {
  const gc: GatewayClass = { apiVersion: 'gateway.networking.k8s.io/v1', kind: 'GatewayClass', metadata: meta('tollgate'), spec: { controllerName: 'tollgate.dev/gateway-controller' } };
  const gw = {
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'Gateway',
    metadata: meta('public', 'edge'),
    spec: { gatewayClassName: 'tollgate', listeners: [{ name: 'https', protocol: 'HTTPS', port, hostname: 'api.example.com', tls: { certificateRefs: [{ name: 'api-tls' }] } }] },
  } as Gateway;
  const secret: Resources['secrets'][number] = {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 'api-tls', namespace: 'edge' },
    type: 'kubernetes.io/tls',
    data: { 'tls.crt': Buffer.from(pair.cert).toString('base64'), 'tls.key': Buffer.from(pair.key).toString('base64') },
  };
  return { gatewayClasses: [gc], gateways: [gw], httpRoutes: [], referenceGrants: [], gatewayPolicies: [], services: [], endpointSlices: [], namespaces: [], secrets: [secret], configMaps: [] };
}

/** The fingerprint of the certificate the proxy presents for `servername`, and the status of a request. */
function handshake(port: number, servername: string): Promise<{ fingerprint: string; status: string }> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port, servername, rejectUnauthorized: false }, () => {
      const fingerprint = socket.getPeerCertificate().fingerprint256;
      socket.end(`GET / HTTP/1.1\r\nhost: ${servername}\r\nconnection: close\r\n\r\n`);
      let text = '';
      socket.on('data', (d: Buffer) => (text += d.toString()));
      socket.on('end', () => resolve({ fingerprint, status: text.split('\r\n')[0] ?? '' }));
    });
    socket.on('error', reject);
  });
}

describe('HTTPS listener in cluster mode', () => {
  it('serves the certificate of the Secret, and the renewed one once the Secret changes', async () => {
    const store = new SnapshotStore();
    // The stream as deployed: TLS from the controller's CA, the proxy's token checked.
    const streamSecurity = streamTls(GATEWAY);
    cleanups.push(() => streamSecurity.close());
    const server = new SnapshotStreamServer({ addr: { host: '127.0.0.1', port: 0 }, security: streamSecurity.server, store, metrics: new StreamMetrics(new Registry()), log: pino({ level: 'silent' }) });
    await server.start();
    cleanups.push(() => server.stop());
    const proxy = await startClusterProxy({
      controller: `127.0.0.1:${server.port}`,
      security: streamSecurity.proxy,
      gateway: GATEWAY,
      pod: 'proxy-0',
      podNamespace: 'edge',
      adminAddr: '127.0.0.1:0',
      metricsAddr: '127.0.0.1:0',
      readinessAddr: '127.0.0.1:0',
      initialBackoffMs: 20,
      maxBackoffMs: 200,
      logDestination: new LogSink(),
    });
    cleanups.push(() => proxy.close());
    const acked = () => server.proxies().get(GATEWAY)?.[0]?.ackedVersion ?? null;

    const first = issueTestCertificate({ commonName: 'api.example.com', names: ['api.example.com'] });
    // The first snapshot names a free port; NACKed because another process took it in the
    // meantime, it is offered again on another.
    const { port, v1 } = await onFreePort(async (port) => {
      const v1 = translate(resources(port, first), { controllerName: 'tollgate.dev/gateway-controller' }).snapshots.get(GATEWAY)!;
      store.offer(new Map([[GATEWAY, v1]]));
      const nack = () => server.proxies().get(GATEWAY)?.[0]?.lastNack;
      await until(() => acked() === v1.version || nack()?.version === v1.version, { what: `an ACK or NACK of ${v1.version}` });
      if (acked() !== v1.version) throw new Error(nack()?.error ?? 'NACKed');
      return { port, v1 };
    });
    const a = await handshake(port, 'api.example.com');
    expect(a.fingerprint).toBe(new X509Certificate(first.cert).fingerprint256);
    // No route attached yet: the TLS side works, routing answers 404.
    expect(a.status).toBe('HTTP/1.1 404 Not Found');

    const dump = (await send(`http://${proxy.admin.address}/config_dump`)).body;
    expect(dump).not.toContain('PRIVATE KEY');
    const listener = (JSON.parse(dump) as { listeners: { name: string; tls: { certificates: Record<string, unknown>[] } }[] }).listeners[0]!;
    expect(listener.tls.certificates[0]).toMatchObject({ origin: { kind: 'Secret', namespace: 'edge', name: 'api-tls' }, subject: 'CN=api.example.com', sans: ['api.example.com'] });

    const renewed = issueTestCertificate({ commonName: 'api.example.com', names: ['api.example.com'] });
    const v2 = translate(resources(port, renewed), { controllerName: 'tollgate.dev/gateway-controller' }).snapshots.get(GATEWAY)!;
    expect(v2.version).not.toBe(v1.version);
    store.offer(new Map([[GATEWAY, v2]]));
    await expect.poll(acked).toBe(v2.version);
    expect((await handshake(port, 'api.example.com')).fingerprint).toBe(new X509Certificate(renewed.cert).fingerprint256);
  });
});
