// Snapshot propagation on the real API server: the controller (out of cluster) streams one
// Gateway's snapshot to two proxy processes in cluster mode, each in its own network namespace,
// over the stream as deployed (TLS from the controller's CA, each proxy authenticated by a token
// of the Gateway's ServiceAccount); the backend is mock-llm behind a Service and an
// EndpointSlice on the harness's bridge address.
// What users judge a gateway by, through both proxies: a new HTTPRoute goes from 404 to 200
// with nothing in between; a route edited 20 times under traffic answers only 200; a new proxy
// (refused until its Gateway exists and it holds its token) gets no traffic before its first
// snapshot; a GatewayPolicy's limits (and a `kubectl patch` of
// them) are enforced by both, with one set of counters for all the Gateway's listeners; with
// the controller killed the proxies keep serving and limiting, and resync without restarting
// once it is back; a snapshot the proxies refuse is NACKed, then a fix is ACKed. Every wait is
// on an event (a log line, the controller's ACK metrics, a watch), never a sleep.
import { startMockLlm, type MockLlm } from '@tollgate/mock-llm';
import { send, type RawResponse } from '@tollgate/testkit';
import { afterAll, beforeAll, describe, expect, it, onTestFinished as after } from 'vitest';
import { waitForObject } from './controller-process.js';
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { run } from './lib/exec.js';
import { e2eAvailability } from './lib/tools.js';
import { useCluster } from './lib/use-cluster.js';
import { canIsolateProxies, PROXY_PORTS, SnapshotFleet, type ProxyProcess } from './snapshot-propagation-harness.js';
import { programmed, type GatewayStatus } from './lib/conditions.js';

const availability = e2eAvailability();
const NS = 'apps';
const GATEWAY = `${NS}/gw`;
const PORTS = [8080, 8081] as const;

const gateway = (name: string, listeners: { name: string; port: number }[]) => `
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: { name: ${name}, namespace: ${NS} }
spec:
  gatewayClassName: tollgate
  listeners:
${listeners.map((l) => `  - { name: ${l.name}, protocol: HTTP, port: ${l.port} }`).join('\n')}
`;

/** A Service and its EndpointSlice: the ready endpoint is mock-llm on the bridge address. */
const service = (name: string, address: string, port: number) => `
apiVersion: v1
kind: Service
metadata: { name: ${name}, namespace: ${NS} }
spec:
  ports: [ { name: http, port: 80, targetPort: ${port} } ]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: ${name}-1
  namespace: ${NS}
  labels: { kubernetes.io/service-name: ${name} }
addressType: IPv4
ports: [ { name: http, port: ${port}, protocol: TCP } ]
endpoints:
- addresses: [ ${address} ]
  conditions: { ready: true }
`;

const route = (name: string, gw: string, rule: string) => `
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: { name: ${name}, namespace: ${NS} }
spec:
  parentRefs: [ { name: ${gw} } ]
  rules:
${rule}
`;

const chatRule = `
  - matches: [ { path: { type: Exact, value: /v1/chat/completions } } ]
    backendRefs: [ { name: llm, port: 80 } ]
`;

/** The edited route: its matches, a header filter and the backend weights change with `i`. */
const editedRule = (i: number) => `
  - matches: [ { path: { type: ${i % 2 ? 'PathPrefix' : 'Exact'}, value: /v1/models } } ]
    filters:
    - type: RequestHeaderModifier
      requestHeaderModifier: { set: [ { name: x-edit, value: "${i}" } ] }
    backendRefs: [ { name: llm, port: 80, weight: ${(i % 3) + 1} }, { name: llm2, port: 80, weight: 1 } ]
`;

const policy = (local: string) => `
apiVersion: tollgate.dev/v1alpha1
kind: GatewayPolicy
metadata: { name: limits, namespace: ${NS} }
spec:
  targetRefs: [ { group: gateway.networking.k8s.io, kind: Gateway, name: gw } ]
  traffic: { rateLimit: { local: ${local} } }
`;

/** `kubectl patch` of the policy's local limit to `requests` an hour. */
const patchLimit = (requests: number, unit = 'Hours') => ['patch', 'gatewaypolicy', 'limits', '-n', NS, '--type=merge', '-p', JSON.stringify({ spec: { traffic: { rateLimit: { local: [{ requests, unit }] } } } })];


/** A chat completion whose usage is 10 prompt + 100 completion tokens. */
const chat = (p: ProxyProcess, port: number = PORTS[0]): Promise<RawResponse> =>
  send(p.url(port, '/v1/chat/completions'), {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-mock-prompt-tokens': '10', 'x-mock-completion-tokens': '100' },
    body: JSON.stringify({ model: 'mock-gpt', messages: [{ role: 'user', content: 'hi' }] }),
  });

async function streamTask(p: ProxyProcess): Promise<Record<string, unknown>> {
  // The admin server answers loopback Host names only (as a pod's admin port would be reached).
  const body = JSON.parse((await send(`${p.adminUrl}/debug/tasks`, { headers: { host: `127.0.0.1:${PROXY_PORTS.admin}` } })).body) as { background: ({ name: string } & Record<string, unknown>)[] };
  return body.background.find((t) => t.name === 'controller stream')!;
}

/** The proxies run in network namespaces of their own: root, unshare, nsenter and ip. In CI that is required. */
function isolation(): boolean {
  if (canIsolateProxies()) return true;
  const message = 'the snapshot propagation suite needs root, unshare, nsenter and iproute2 (network namespaces for its proxies)';
  if (process.env.CI === 'true' || process.env.CI === '1') throw new Error(message);
  console.warn(`skipping: ${message}`);
  return false;
}

describe.skipIf(!availability.run || !isolation())('snapshot propagation to two proxies on kube-apiserver', () => {
  const cluster = useCluster({ tollgateCrds: false });
  const kubectl = (args: string[], input?: string) => run(cluster.current.tools.kubectl, args, { env: cluster.current.env, input });
  let fleet: SnapshotFleet;
  let llm: MockLlm;
  let proxies: ProxyProcess[];

  /** Applies `yaml` and resolves with the Gateway's version it produced, once every proxy ACKed it. */
  async function applyAndAck(yaml: string, args: string[] = ['apply', '-f', '-']): Promise<string> {
    const from = fleet.controller.lines.length;
    await kubectl(args, yaml);
    await fleet.nextVersion(from);
    return fleet.waitSettled(proxies.length);
  }

  beforeAll(async () => {
    fleet = await SnapshotFleet.start(cluster.current, { gateway: GATEWAY });
    llm = await startMockLlm({ host: fleet.net.hostAddress, port: 0 });
    await kubectl(['create', 'namespace', NS]);
    await kubectl(['apply', '-f', '-'], service('llm', fleet.net.hostAddress, llm.port) + '---' + service('llm2', fleet.net.hostAddress, llm.port));
    const from = fleet.controller.lines.length;
    await kubectl(['apply', '-f', '-'], gateway('gw', [{ name: 'http', port: PORTS[0] }, { name: 'alt', port: PORTS[1] }]) + '---' + route('chat', 'gw', chatRule));
    await fleet.nextVersion(from);
    proxies = [await fleet.startProxy('proxy-a'), await fleet.startProxy('proxy-b')];
    await fleet.waitSettled(2);
  }, 240_000);

  afterAll(async () => {
    await fleet?.stop();
    await llm?.close();
  });

  it('a new HTTPRoute goes from 404 to 200 on both proxies with no other status in between', { timeout: 120_000 }, async () => {
    // Both over TLS, each let in by the review of its token.
    expect(await fleet.controller.metric('tollgate_controller_stream_auth_total', { result: 'ok' })).toBeGreaterThanOrEqual(2);
    for (const p of proxies) expect((await chat(p)).status).toBe(200);
    for (const p of proxies) expect((await send(p.url(PORTS[0], '/v1/models'))).status).toBe(404);
    await kubectl(['apply', '-f', '-'], route('models', 'gw', editedRule(0)));
    // Each proxy polled until it answers 200 (bounded); every answer before is a 404.
    const seen = await Promise.all(
      proxies.map(async (p) => {
        const statuses: number[] = [];
        for (let i = 0; i < 20_000 && statuses.at(-1) !== 200; i++) statuses.push((await send(p.url(PORTS[0], '/v1/models'))).status);
        return statuses;
      }),
    );
    for (const statuses of seen) {
      expect(statuses.at(-1)).toBe(200);
      expect([...new Set(statuses)].sort()).toEqual(statuses.length > 1 ? [200, 404] : [200]);
      expect(statuses.indexOf(200)).toBe(statuses.length - 1);
    }
    // And 200 from then on.
    for (const p of proxies) for (let i = 0; i < 5; i++) expect((await send(p.url(PORTS[0], '/v1/models'))).status).toBe(200);
  });

  // Edits applied back to back each wait out the controller's cool-down after a translation
  // (as long as the translation took, 100 ms to 2 s): seconds in all, bounded generously.
  it('a route edited 20 times (matches, filters, backend weights) under continuous requests answers only 200', { timeout: 600_000 }, async () => {
    // Edit 0 is serving on both proxies (the test above).
    const statuses = new Map<number, number>();
    let editing = true;
    const traffic = proxies.map(async (p) => {
      while (editing) {
        const status = (await send(p.url(PORTS[0], '/v1/models'))).status;
        statuses.set(status, (statuses.get(status) ?? 0) + 1);
      }
    });
    for (let i = 1; i <= 20; i++) await applyAndAck(route('models', 'gw', editedRule(i)));
    editing = false;
    await Promise.all(traffic);
    expect([...statuses.keys()]).toEqual([200]);
    expect(statuses.get(200)).toBeGreaterThan(20);
  });

  it('a new proxy is not ready and its data port refuses connections until its first snapshot is applied', { timeout: 120_000 }, async () => {
    // A proxy for a Gateway that does not exist yet has no ServiceAccount of its own: holding
    // the token of another Gateway's, it is refused (retrying), with nothing to serve.
    const refusedFrom = fleet.controller.lines.length;
    const late = await fleet.startProxy('proxy-late', `${NS}/later`, GATEWAY);
    const refused = await fleet.controller.waitForLog((l) => l.code === 'TG_CONTROLLER_STREAM_REFUSED' && l.pod === 'proxy-late', 60_000, refusedFrom);
    expect(refused.msg).toBe(
      `snapshot stream of ${NS}/later refused to proxy-late: PERMISSION_DENIED: the stream of Gateway ${NS}/later cannot be opened: the controller knows no Gateway ${NS}/later`,
    );
    await late.waitForLog((l) => typeof l.msg === 'string' && l.msg.startsWith('snapshot stream to ') && l.msg.includes('(PERMISSION_DENIED: '));
    const notReady = await send(late.readinessUrl);
    expect([notReady.status, notReady.body]).toEqual([503, 'no config loaded\n']);
    await expect(send(late.url(9090, '/v1/models'))).rejects.toMatchObject({ code: 'ECONNREFUSED' });

    const from = fleet.controller.lines.length;
    // The route first, so that the Gateway's first snapshot has it.
    await kubectl(['apply', '-f', '-'], route('later-models', 'later', editedRule(1)));
    await kubectl(['apply', '-f', '-'], gateway('later', [{ name: 'http', port: 9090 }]));
    const version = await fleet.nextVersion(from, 60_000, `${NS}/later`);
    // Its own token once the controller has made its ServiceAccount, replaced in place as
    // kubelet does: the proxy reads it on its next attempt, without restarting.
    await fleet.writeCredentials(fleet.proxyDir('proxy-late'), NS, `${NS}/later`);
    await late.waitForLog((l) => l.msg === `serving snapshot ${version} from the controller`);
    expect((await send(late.readinessUrl)).status).toBe(200);
    expect((await send(late.url(9090, '/v1/models'))).status).toBe(200);
    await fleet.removeProxy(late);
  });

  it('a GatewayPolicy token limit is enforced by both proxies, and a kubectl patch of it too, counted once across both listeners', { timeout: 120_000 }, async () => {
    // 110 tokens a request against a budget of 100: the first crosses it, the next is refused.
    await applyAndAck(policy('[ { tokens: 100, unit: Hours } ]'));
    for (const p of proxies) expect([(await chat(p)).status, (await chat(p, PORTS[1])).status]).toEqual([200, 429]);

    // Patched to 3 requests an hour: a new limit, enforced by both once both ACKed it; one set
    // of counters per proxy for both listeners (two requests on one port, one on the other).
    await applyAndAck('', patchLimit(3));
    for (const p of proxies) {
      const statuses = [(await chat(p, PORTS[0])).status, (await chat(p, PORTS[1])).status, (await chat(p, PORTS[0])).status, (await chat(p, PORTS[1])).status];
      expect(statuses).toEqual([200, 200, 200, 429]);
    }
  });

  it('with the controller killed both proxies keep serving and limiting; back, they resync without restarting', { timeout: 180_000 }, async () => {
    // Counted per day: another window than the previous test's limit, so counters of its own.
    const before = await applyAndAck('', patchLimit(2, 'Days'));
    const pids = proxies.map((p) => p.pid);
    await fleet.killController();
    for (const p of proxies) {
      await p.waitForLog((l) => typeof l.msg === 'string' && l.msg.startsWith('snapshot stream to ') && l.msg.includes(' lost '));
      expect((await streamTask(p)).stream).not.toBe('connected');
      expect((await send(p.readinessUrl)).status).toBe(200);
      // Serving (the route answers) and limiting (the third request of the hour is refused).
      expect([(await chat(p, PORTS[0])).status, (await chat(p, PORTS[1])).status, (await chat(p, PORTS[0])).status]).toEqual([200, 200, 429]);
    }

    // Changed while the controller is away: the controller that comes back translates it, and
    // the proxies reconnect (backoff) and apply it in place.
    await kubectl(patchLimit(5, 'Days'));
    await fleet.startController();
    await fleet.nextVersion(0);
    const version = await fleet.waitSettled(proxies.length);
    expect(version).not.toBe(before);
    for (const [i, p] of proxies.entries()) {
      expect(p.pid).toBe(pids[i]);
      expect(p.child.exitCode).toBeNull();
      expect(await streamTask(p)).toMatchObject({ stream: 'connected', security: 'tls', version, connects: 2 });
      // The new limit over the counters kept through the change: two of five were used, so
      // three more pass and the next is refused.
      const statuses: number[] = [];
      for (let n = 0; n < 5; n++) statuses.push((await chat(p, PORTS[n % 2])).status);
      expect(statuses).toEqual([200, 200, 200, 429, 429]);
    }
  });

  it('a snapshot both proxies refuse is NACKed (Warning Event, Programmed False) and the last good keeps serving; a fix is ACKed by both', { timeout: 120_000 }, async () => {
    const good = await applyAndAck('', ['delete', 'gatewaypolicy', 'limits', '-n', NS]);
    // A listener on a port another process holds in each proxy's network namespace: valid to
    // the API server and the translator, but no proxy can bind it.
    const blockers = await Promise.all(proxies.map((p) => holdPort(p.pid, BLOCKED_PORT)));
    after(() => blockers.forEach((b) => b.kill('SIGKILL')));
    const from = fleet.controller.lines.length;
    await kubectl(['apply', '-f', '-'], gateway('gw', [{ name: 'http', port: PORTS[0] }, { name: 'alt', port: PORTS[1] }, { name: 'clash', port: BLOCKED_PORT }]));
    const bad = await fleet.nextVersion(from);
    const rejected = await waitForObject<GatewayStatus>(cluster.current, 'gateways.gateway.networking.k8s.io', 'gw', NS, (g) => programmed(g)?.reason === 'Invalid');
    expect(programmed(rejected)?.status).toBe('False');
    expect(programmed(rejected)?.message).toMatch(new RegExp(`^proxy proxy-[ab] refused snapshot ${bad}: .*${BLOCKED_PORT}.*already in use`));
    const events = JSON.parse(await kubectl(['get', 'events', '-n', NS, '--field-selector', 'reason=SnapshotRejected,involvedObject.name=gw', '-o', 'json'])) as { items: { type: string }[] };
    expect(events.items.length).toBeGreaterThanOrEqual(1);
    expect(events.items.every((e) => e.type === 'Warning')).toBe(true);
    expect(await fleet.ackedBy(good)).toBe(proxies.length);
    for (const p of proxies) {
      expect((await chat(p)).status).toBe(200);
      expect(await streamTask(p)).toMatchObject({ version: good, lastNack: { version: bad } });
    }

    const fixed = await applyAndAck(gateway('gw', [{ name: 'http', port: PORTS[0] }, { name: 'alt', port: PORTS[1] }, { name: 'clash', port: 8082 }]));
    await waitForObject<GatewayStatus>(cluster.current, 'gateways.gateway.networking.k8s.io', 'gw', NS, (g) => programmed(g)?.reason !== 'Invalid');
    for (const p of proxies) {
      expect((await chat(p, 8082)).status).toBe(200);
      expect(await streamTask(p)).toMatchObject({ version: fixed });
    }
  });
});

const BLOCKED_PORT = 8083;

/** A process in the network namespace of `pid` listening on `port` (every address), once it listens. */
async function holdPort(pid: number, port: number): Promise<ChildProcess> {
  const child = spawn('nsenter', ['--target', String(pid), '--net', '--', process.execPath, '-e', `require('node:net').createServer().listen(${port}, '0.0.0.0', () => console.log('listening'))`], { stdio: ['ignore', 'pipe', 'inherit'] });
  for await (const line of createInterface({ input: child.stdout })) if (line === 'listening') return child;
  throw new Error(`could not hold port ${port} in the network namespace of process ${pid}`);
}
