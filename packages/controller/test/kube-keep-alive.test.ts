// The controller's Kubernetes client reuses its TLS connections: requests to a real HTTPS
// server (standing in for the API server) are counted per TLS connection.
import { once } from 'node:events';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { issueTestCertificate } from '@tollgate/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KeepAliveKubeConfig } from '../src/kube/keep-alive.js';

const ca = issueTestCertificate({ commonName: 'test CA', ca: true });
const serving = issueTestCertificate({ commonName: 'api', names: ['127.0.0.1'], issuer: ca });
const client = issueTestCertificate({ commonName: 'admin', issuer: ca });

let server: Server;
let connections = 0;
let requests = 0;

beforeAll(async () => {
  server = createServer({ cert: serving.cert, key: serving.key, ca: ca.cert, requestCert: true }, (req, res) => {
    requests++;
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ apiVersion: 'v1', kind: 'NamespaceList', metadata: {}, items: [] }));
  });
  server.on('secureConnection', () => connections++);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
});
afterAll(() => {
  server.closeAllConnections();
  server.close();
});

function load(kc: KubeConfig): KubeConfig {
  const b64 = (s: string) => Buffer.from(s).toString('base64');
  kc.loadFromOptions({
    clusters: [{ name: 'c', server: `https://127.0.0.1:${(server.address() as AddressInfo).port}`, caData: b64(ca.cert) }],
    users: [{ name: 'u', certData: b64(client.cert), keyData: b64(client.key) }],
    contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
    currentContext: 'x',
  });
  return kc;
}

async function connectionsFor(kc: KubeConfig, calls: number): Promise<number> {
  const api = kc.makeApiClient(CoreV1Api);
  const before = connections;
  const served = requests;
  for (let i = 0; i < calls; i++) await api.listNamespace();
  expect(requests - served).toBe(calls);
  return connections - before;
}

describe('KeepAliveKubeConfig', () => {
  it('sends sequential requests over one TLS connection', async () => {
    const kc = load(new KeepAliveKubeConfig()) as KeepAliveKubeConfig;
    expect(await connectionsFor(kc, 5)).toBe(1);
    expect(kc.agentCount).toBe(1);
  });

  it('(the library alone opens one per request, which is what it replaces)', async () => {
    expect(await connectionsFor(load(new KubeConfig()), 3)).toBe(3);
  });
});
