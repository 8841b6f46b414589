// The cluster path end to end with the port-forward working: an API server stand-in lists the
// pod and serves the portforward subresource over WebSocket (the v4.channel.k8s.io framing a
// kubelet streams through the real API server), tunnelling to a real standalone proxy. Every
// command goes through it, and trace inject mode opens a second tunnel to the listener port.
// A pod port nothing listens on is reported with the kubelet's error-channel message.
import { once } from 'node:events';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { compile, TraceEvent } from '@tollgate/api';
import { WebSocketServer } from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHAT_BODY, freePort, gwctl, startProxy, type Proxy } from './helpers.js';

let proxy: Proxy;
let api: Server;
let kubeconfig: string;
const forwards: string[] = [];
/** Pod port -> local port of the real proxy; other ports refuse like a closed container port. */
let ports: Map<number, number>;

function frame(channel: number, data: Buffer): Buffer {
  return Buffer.concat([Buffer.from([channel]), data]);
}

function portBytes(port: number): Buffer {
  const b = Buffer.alloc(2);
  b.writeUInt16LE(port);
  return b;
}

beforeAll(async () => {
  proxy = await startProxy();
  const closedPort = await freePort();
  ports = new Map([
    [15000, Number(proxy.adminAddr.split(':')[1])],
    [8080, proxy.port],
    [9999, closedPort],
  ]);
  const wss = new WebSocketServer({ noServer: true, handleProtocols: (offered) => (offered.has('v4.channel.k8s.io') ? 'v4.channel.k8s.io' : false) });
  api = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    res.writeHead(200, { 'content-type': 'application/json' });
    const items =
      url.pathname === '/api/v1/namespaces/edge/pods' && url.searchParams.get('labelSelector') === 'gateway.networking.k8s.io/gateway-name=public'
        ? [{ metadata: { name: 'public-0', namespace: 'edge' }, status: { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] } }]
        : [];
    res.end(JSON.stringify({ kind: 'PodList', apiVersion: 'v1', metadata: {}, items }));
  });
  api.on('upgrade', (req, socket, head) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const port = Number(url.searchParams.get('ports'));
    forwards.push(`${url.pathname}?ports=${port}`);
    wss.handleUpgrade(req, socket, head, (ws) => {
      // Each stream starts with the port number, as the kubelet sends it.
      ws.send(frame(0, portBytes(port)));
      ws.send(frame(1, portBytes(port)));
      const tcp = connect(ports.get(port) ?? 1, '127.0.0.1');
      tcp.on('data', (d: Buffer) => ws.send(frame(0, d)));
      tcp.on('error', (err) => {
        ws.send(frame(1, Buffer.from(`error forwarding port ${port} to pod public-0, uid : failed to execute portforward in network namespace: ${err.message}`)));
        ws.close();
      });
      tcp.on('end', () => ws.close());
      ws.on('message', (m: Buffer) => {
        if (m[0] === 0) tcp.write(m.subarray(1));
      });
      ws.on('close', () => tcp.destroy());
    });
  });
  api.listen(0, '127.0.0.1');
  await once(api, 'listening');
  const dir = await mkdtemp(join(tmpdir(), 'gwctl-pf-'));
  kubeconfig = join(dir, 'kubeconfig');
  await writeFile(
    kubeconfig,
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'c', cluster: { server: `http://127.0.0.1:${(api.address() as AddressInfo).port}`, 'insecure-skip-tls-verify': true } }],
      users: [{ name: 'u', user: { token: 't' } }],
      contexts: [{ name: 'ctx', context: { cluster: 'c', user: 'u', namespace: 'edge' } }],
      'current-context': 'ctx',
    }),
  );
});

afterAll(async () => {
  api.closeAllConnections();
  api.close();
  await proxy.close();
});

describe('through a port-forward', () => {
  it('config all, config backends and log reach the admin server of the pod on port 15000', async () => {
    forwards.length = 0;
    const all = await gwctl(['config', 'all', 'gateway/public', '--kubeconfig', kubeconfig]);
    expect(all.stderr).toBe('');
    expect(all.code).toBe(0);
    expect(all.stdout).toContain('main/chat');
    expect(forwards).toEqual(['/api/v1/namespaces/edge/pods/public-0/portforward?ports=15000']);
    const backends = await gwctl(['proxy', 'config', 'backends', 'gateway/public', '--kubeconfig', kubeconfig]);
    expect(backends.stdout).toMatch(/^TYPE\s+NAME\s+NAMESPACE\s+ENDPOINT\s+HEALTH\s+REQUESTS\s+LATENCY\nBackend\s/);
    const log = await gwctl(['log', 'gateway/public', '--kubeconfig', kubeconfig, '--set', 'trace=debug']);
    expect(log.stdout).toBe('current log level is info,trace=debug\n');
    await gwctl(['log', 'gateway/public', '--kubeconfig', kubeconfig, '--reset']);
  });

  it('trace inject mode: the admin stream and the request through two tunnels', async () => {
    forwards.length = 0;
    const r = await gwctl(['trace', 'gateway/public', '-n', 'edge', '--kubeconfig', kubeconfig, '--raw', '--port', '8080', '--', 'http://api.example.com/v1/chat/completions', '--json', CHAT_BODY]);
    expect(r.code, r.stderr).toBe(0);
    expect(forwards).toEqual(['/api/v1/namespaces/edge/pods/public-0/portforward?ports=15000', '/api/v1/namespaces/edge/pods/public-0/portforward?ports=8080']);
    const validate = compile(TraceEvent);
    const events = r.stdout.trimEnd().split('\n').map((l) => JSON.parse(l) as unknown);
    for (const e of events) expect(validate(e).ok).toBe(true);
    expect(events.length).toBe(12);
    expect(r.stderr).toContain('"chat.completion"');
  });

  it('a listener port nothing listens on in the pod: exit 6 with the error-channel message', async () => {
    const r = await gwctl(['trace', 'gateway/public', '--kubeconfig', kubeconfig, '--raw', '--port', '9999', '--', 'http://api.example.com/v1/models']);
    expect(r.code).toBe(6);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/^gwctl: port-forward to pod edge\/public-0 port 9999 failed: error forwarding port 9999 to pod public-0, uid : failed to execute portforward in network namespace: connect ECONNREFUSED 127\.0\.0\.1:\d+\n$/);
  });
});
