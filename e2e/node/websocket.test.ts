// WebSockets and h2c through a Gateway on the e2e node, installed as a user installs them: the
// chart, one Gateway, and the Gateway API conformance echo server (echo-basic, imported into
// the node with the pause and CoreDNS images) as the backend pod: WebSockets on /ws of its port
// 3000, HTTP/2 with prior knowledge only on its port 3001. Its Service ports say so with
// appProtocol (kubernetes.io/ws, kubernetes.io/h2c); a third port has no appProtocol.
// - A WebSocket through the proxy pod echoes text and binary frames, through the ws port and
//   through the port without appProtocol alike.
// - OpenAI-Realtime-like: a route behind an apiKey GatewayPolicy (a Secret's key) and a requests
//   limit: the right bearer key opens the WebSocket with the client's subprotocol offered; a
//   wrong key is an HTTP 401; the upgrade over the limit is a 429.
// - An HTTP/2 prior-knowledge request reaches the h2c port (which refuses HTTP/1.1) and echo-basic
//   reports it came over HTTP/2.
// - A WebSocket open when its route is deleted is not cut by the new snapshot: it still echoes.
import { connect as connectHttp2 } from 'node:http2';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closed, dial, roundTrip, type WsClient } from '../../packages/proxy/test/support/ws-peers.js';
import { installChart } from '../lib/chart.js';
import { policyCondition, type PolicyStatus } from '../lib/conditions.js';
import { nodeAvailability } from '../lib/tools.js';
import { useNode } from '../lib/use-node.js';
import { kubectlOk, until } from './helm-install.lib.js';
import { echoBasicDeployment } from './manifests.js';

const availability = nodeAvailability();
const NS = 'websocket';
const GATEWAY = 'ws';
const PROXY = `${GATEWAY}-tollgate`;
const PROXY_PODS = `gateway.networking.k8s.io/gateway-name=${GATEWAY}`;
const KEY = 'sk-realtime-e2e-0123456789abcdef';
const b64 = (s: string) => Buffer.from(s).toString('base64');
/** echo-basic's WebSocket handler (golang.org/x/net/websocket) refuses a handshake without an Origin (403). */
const ORIGIN = { origin: 'http://e2e.tollgate.test' };

const OBJECTS: readonly unknown[] = [
  {
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'Gateway',
    metadata: { name: GATEWAY, namespace: NS },
    spec: { gatewayClassName: 'tollgate', listeners: [{ name: 'http', protocol: 'HTTP', port: 80 }] },
  },
  echoBasicDeployment(NS, { ports: [3000, 3001], readyPort: 3000 }),
  {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: 'echo', namespace: NS },
    spec: {
      selector: { app: 'echo' },
      ports: [
        { name: 'plain', port: 8080, targetPort: 3000 },
        { name: 'h2c', port: 8081, targetPort: 3001, appProtocol: 'kubernetes.io/h2c' },
        { name: 'ws', port: 8082, targetPort: 3000, appProtocol: 'kubernetes.io/ws' },
      ],
    },
  },
  route('ws', '/ws', 8082),
  route('plain', '/plain', 8080, [{ type: 'URLRewrite', urlRewrite: { path: { type: 'ReplacePrefixMatch', replacePrefixMatch: '/ws' } } }]),
  route('h2c', '/h2c', 8081),
  route('realtime', '/v1/realtime', 8082, [{ type: 'URLRewrite', urlRewrite: { path: { type: 'ReplacePrefixMatch', replacePrefixMatch: '/ws' } } }]),
  { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'realtime-key', namespace: NS }, type: 'Opaque', data: { key: b64(KEY), consumer: b64('realtime-app') } },
  {
    apiVersion: 'tollgate.dev/v1alpha1',
    kind: 'GatewayPolicy',
    metadata: { name: 'realtime', namespace: NS },
    spec: {
      targetRefs: [{ group: 'gateway.networking.k8s.io', kind: 'HTTPRoute', name: 'realtime' }],
      traffic: { apiKey: { secretRefs: [{ name: 'realtime-key' }] }, rateLimit: { local: [{ requests: 2, unit: 'Hours' }] } },
    },
  },
];

function route(name: string, prefix: string, port: number, filters: unknown[] = []): unknown {
  return {
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'HTTPRoute',
    metadata: { name, namespace: NS },
    spec: { parentRefs: [{ name: GATEWAY }], rules: [{ matches: [{ path: { type: 'PathPrefix', value: prefix } }], filters, backendRefs: [{ name: 'echo', port }] }] },
  };
}

interface RouteStatus {
  status?: { parents?: { conditions?: { type: string; status: string; reason: string; message: string }[] }[] };
}

describe.skipIf(!availability.run)('WebSockets and h2c through a Gateway on the e2e node (echo-basic as the backend pod)', () => {
  const node = useNode();
  const k = (...args: string[]) => kubectlOk(node.current, args);
  const apply = (objects: readonly unknown[]) => kubectlOk(node.current, ['apply', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'List', items: objects }));
  let pod = '';
  const open: WsClient[] = [];

  beforeAll(async () => {
    await installChart(node.current);
    await k('create', 'namespace', NS);
    await apply(OBJECTS);
    await k('wait', '--for=condition=Programmed', `gateway/${GATEWAY}`, '-n', NS, '--timeout=180s');
    await k('rollout', 'status', '-n', NS, `deployment/${PROXY}`, '--timeout=180s');
    await k('rollout', 'status', '-n', NS, 'deployment/echo', '--timeout=120s');
    for (const name of ['ws', 'plain', 'h2c', 'realtime']) {
      await until(`HTTPRoute ${NS}/${name} ResolvedRefs`, async () => {
        const r = JSON.parse(await k('get', 'httproute', name, '-n', NS, '-o', 'json')) as RouteStatus;
        const c = r.status?.parents?.[0]?.conditions?.find((x) => x.type === 'ResolvedRefs');
        if (c?.status === 'False') throw new Error(`${name}: ${c.reason}: ${c.message}`);
        return c?.status === 'True' ? true : undefined;
      }, 60_000);
    }
    await until(`GatewayPolicy ${NS}/realtime Accepted`, async () => {
      const accepted = policyCondition(JSON.parse(await k('get', 'gatewaypolicy', 'realtime', '-n', NS, '-o', 'json')) as PolicyStatus, 'Accepted');
      if (accepted?.status === 'False') throw new Error(`realtime: ${accepted.reason}: ${accepted.message}`);
      return accepted?.status === 'True' ? true : undefined;
    }, 60_000);
    pod = (await k('get', 'pods', '-n', NS, '-l', PROXY_PODS, '-o', 'jsonpath={.items[0].status.podIP}')).trim();
    if (!pod) throw new Error('the proxy pod has no address');
    // The proxy pod serves the routes once it ACKed a snapshot with them (Programmed says a
    // snapshot was applied, not which): the first WebSocket that opens says so.
    await until('a WebSocket through the proxy pod opens', async () => {
      const d = await dial(`ws://${pod}/ws`, { headers: ORIGIN }).catch(() => null);
      if (d?.kind !== 'open') return undefined;
      d.ws.terminate();
      return true;
    }, 120_000, 500);
  }, 20 * 60_000);

  afterAll(() => {
    for (const ws of open) ws.terminate();
  });

  async function opened(path: string, options: Parameters<typeof dial>[1] = {}): Promise<WsClient> {
    const d = await dial(`ws://${pod}${path}`, { ...options, headers: { ...ORIGIN, ...options.headers } });
    if (d.kind !== 'open') throw new Error(`${path}: refused ${d.status}: ${d.body}`);
    open.push(d.ws);
    return d.ws;
  }

  it('a WebSocket echoes text and binary frames, through the kubernetes.io/ws port and the port without appProtocol', async () => {
    for (const path of ['/ws', '/plain']) {
      const ws = await opened(path);
      expect((await roundTrip(ws, 'Websocket Support!')).data.toString()).toBe('Websocket Support!');
      expect((await roundTrip(ws, Buffer.from([1, 2, 3, 4, 5, 6, 7]))).data).toEqual(Buffer.from([1, 2, 3, 4, 5, 6, 7]));
      ws.close();
      await closed(ws);
    }
  });

  it('OpenAI-Realtime-like: the bearer key opens it, a wrong key is a 401, the upgrade over the requests limit a 429', async () => {
    const ws = await opened('/v1/realtime?model=gpt-realtime', { headers: { authorization: `Bearer ${KEY}`, 'openai-beta': 'realtime=v1' } });
    const event = JSON.stringify({ type: 'session.update', session: { modalities: ['text'] } });
    expect((await roundTrip(ws, event)).data.toString()).toBe(event);
    expect(await dial(`ws://${pod}/v1/realtime`, { headers: { ...ORIGIN, authorization: 'Bearer sk-wrong-0000000000000000' } })).toMatchObject({ kind: 'refused', status: 401 });
    // The limit is 2 upgrades an hour: the setup's probe went to /ws, so this is the second, and the next is refused.
    await opened('/v1/realtime', { headers: { authorization: `Bearer ${KEY}` } });
    expect(await dial(`ws://${pod}/v1/realtime`, { headers: { ...ORIGIN, authorization: `Bearer ${KEY}` } })).toMatchObject({ kind: 'refused', status: 429 });
  });

  it('an HTTP/2 prior-knowledge request reaches the h2c port, which takes nothing but HTTP/2', async () => {
    const session = connectHttp2(`http://${pod}`);
    try {
      const answer = await new Promise<{ status: number; body: string }>((resolve, reject) => {
        const stream = session.request({ ':path': '/h2c/', ':authority': 'echo.example.com' });
        let status = 0;
        let body = '';
        stream.on('response', (h) => (status = Number(h[':status'])));
        stream.on('data', (c: Buffer) => (body += c.toString()));
        stream.on('end', () => resolve({ status, body }));
        stream.on('error', reject);
      });
      expect(answer.status).toBe(200);
      // echo-basic's h2c server answers 400 "Expected h2c request" to anything else.
      expect(JSON.parse(answer.body)).toMatchObject({ path: '/h2c/', host: 'echo.example.com', proto: 'HTTP/2.0', namespace: NS });
    } finally {
      session.close();
    }
  });

  it('a WebSocket open while its route is deleted is not cut by the new snapshot', async () => {
    const ws = await opened('/ws');
    await k('delete', 'httproute', 'ws', '-n', NS);
    // The route is gone from the proxy once a new upgrade to it gets 404.
    await until('the ws route is gone from the proxy pod', async () => {
      const d = await dial(`ws://${pod}/ws`, { headers: ORIGIN });
      if (d.kind === 'refused') return true;
      d.ws.terminate();
      return undefined;
    }, 60_000, 250);
    expect((await roundTrip(ws, 'still open')).data.toString()).toBe('still open');
  });
});
