// An HTTPS listener from Kubernetes objects to a TLS handshake: translate() reads a Gateway and
// its kubernetes.io/tls Secret, the snapshot travels over the controller's real stream server
// to a proxy in cluster mode, and the proxy serves the Secret's certificate; a renewed Secret
// is a new snapshot whose certificate the next connection gets. The key is redacted in the
// proxy's config dump on the way. A Gateway's spec.tls.frontend reaches the proxy the same way:
// a ConfigMap's CA bundle that client certificates must chain to, changed by a new ConfigMap.
import { X509Certificate } from 'node:crypto';
import { connect } from 'node:tls';
import { translate, type Gateway, type GatewayClass, type Resources } from '@tollgate/controller';
import { issueTestCertificate, type TestCertificate } from '@tollgate/testkit';
import { afterEach, describe, expect, it } from 'vitest';
import { onFreePort, send } from './helpers.js';
import { startStreamedProxy } from './support/streamed-proxy.js';

const GATEWAY = 'edge/public';
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

const meta = (name: string, namespace?: string) => ({ name, ...(namespace ? { namespace } : {}), generation: 1, creationTimestamp: '2026-01-01T00:00:00Z' });

function resources(port: number, pair: TestCertificate, clientCa?: string): Resources {
  const gc: GatewayClass = { apiVersion: 'gateway.networking.k8s.io/v1', kind: 'GatewayClass', metadata: meta('tollgate'), spec: { controllerName: 'tollgate.dev/gateway-controller' } };
  const gw = {
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'Gateway',
    metadata: meta('public', 'edge'),
    spec: {
      gatewayClassName: 'tollgate',
      listeners: [{ name: 'https', protocol: 'HTTPS', port, hostname: 'api.example.com', tls: { certificateRefs: [{ name: 'api-tls' }] } }],
      ...(clientCa ? { tls: { frontend: { default: { validation: { caCertificateRefs: [{ group: '', kind: 'ConfigMap', name: 'clients-ca' }] } } } } } : {}),
    },
  } as Gateway;
  const configMaps: Resources['configMaps'] = clientCa ? [{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'clients-ca', namespace: 'edge' }, data: { 'ca.crt': clientCa } }] : [];
  const secret: Resources['secrets'][number] = {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 'api-tls', namespace: 'edge' },
    type: 'kubernetes.io/tls',
    data: { 'tls.crt': Buffer.from(pair.cert).toString('base64'), 'tls.key': Buffer.from(pair.key).toString('base64') },
  };
  return { gatewayClasses: [gc], gateways: [gw], httpRoutes: [], grpcRoutes: [], referenceGrants: [], gatewayPolicies: [], backends: [], backendTLSPolicies: [], services: [], endpointSlices: [], namespaces: [], secrets: [secret], configMaps };
}

/** The fingerprint of the certificate the proxy presents for `servername`, and the status of a request. */
function handshake(port: number, servername: string, client?: TestCertificate): Promise<{ fingerprint: string; status: string }> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port, servername, rejectUnauthorized: false, ...(client ? { cert: client.cert, key: client.key } : {}) }, () => {
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
    const { proxy, server, offer, close } = await startStreamedProxy(GATEWAY);
    cleanups.push(close);
    const acked = () => server.proxies().get(GATEWAY)?.[0]?.ackedVersion ?? null;

    const first = issueTestCertificate({ commonName: 'api.example.com', names: ['api.example.com'] });
    // The first snapshot names a free port; NACKed because another process took it in the
    // meantime, it is offered again on another.
    const { port, v1 } = await onFreePort(async (port) => {
      const v1 = translate(resources(port, first), { controllerName: 'tollgate.dev/gateway-controller' }).snapshots.get(GATEWAY)!;
      await offer(v1);
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
    await offer(v2);
    expect(acked()).toBe(v2.version);
    expect((await handshake(port, 'api.example.com')).fingerprint).toBe(new X509Certificate(renewed.cert).fingerprint256);
  });
});

describe('client certificate validation in cluster mode', () => {
  it('checks client certificates against the CA bundle of the Gateway\'s ConfigMap, and against the new one once it changes', async () => {
    const { server, offer, close } = await startStreamedProxy(GATEWAY);
    cleanups.push(close);
    const pair = issueTestCertificate({ commonName: 'api.example.com', names: ['api.example.com'] });
    const ca = issueTestCertificate({ commonName: 'clients-ca', ca: true });
    const next = issueTestCertificate({ commonName: 'next-clients-ca', ca: true });
    const client = issueTestCertificate({ commonName: 'team-a', issuer: ca });
    const nextClient = issueTestCertificate({ commonName: 'team-a', issuer: next });
    const { port } = await onFreePort(async (port) => {
      await offer(translate(resources(port, pair, ca.cert), { controllerName: 'tollgate.dev/gateway-controller' }).snapshots.get(GATEWAY)!);
      return { port };
    });
    // Verified: through to routing (no route: 404). Without a certificate: closed, no answer.
    expect((await handshake(port, 'api.example.com', client)).status).toBe('HTTP/1.1 404 Not Found');
    expect((await handshake(port, 'api.example.com')).status).toBe('');
    expect((await handshake(port, 'api.example.com', nextClient)).status).toBe('');

    const v2 = translate(resources(port, pair, next.cert), { controllerName: 'tollgate.dev/gateway-controller' }).snapshots.get(GATEWAY)!;
    await offer(v2);
    expect(server.proxies().get(GATEWAY)?.[0]?.ackedVersion).toBe(v2.version);
    expect((await handshake(port, 'api.example.com', nextClient)).status).toBe('HTTP/1.1 404 Not Found');
    expect((await handshake(port, 'api.example.com', client)).status).toBe('');
  });
});
