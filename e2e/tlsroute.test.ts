// TLSRoute on a real kube-apiserver with the chart's controller (its RBAC included): a route
// attaches to a TLS Passthrough listener and its status says so; a backendRef to another
// namespace is RefNotPermitted until a ReferenceGrant for TLSRoutes allows it; the listener
// lists TLSRoute among its supported kinds and counts the routes; the Gateway's snapshot
// carries the TLS listener with its routes.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startChartController, waitForObject, type ControllerProcess } from './controller-process.js';
import type { Condition } from './lib/conditions.js';
import { run } from './lib/exec.js';
import { e2eAvailability } from './lib/tools.js';
import { useCluster } from './lib/use-cluster.js';

const availability = e2eAvailability();
const APPS = 'apps';
const OTHER = 'other';
const OURS = 'tollgate.dev/gateway-controller';
const GROUP = 'gateway.networking.k8s.io';

type Cond = Condition & { observedGeneration?: number };
interface Route {
  metadata: { generation: number };
  status?: { parents?: { controllerName: string; conditions: Cond[] }[] };
}
interface GatewayObject {
  status?: { listeners?: { name: string; supportedKinds: { kind: string }[]; attachedRoutes: number }[] };
}
interface SnapshotsView {
  gateways: { gateway: string; snapshot: { tlsBinds?: { port: number; listeners: { name: string; tls: { mode: string }; routes: { name: string; hostnames: string[] }[] }[] }[] } }[];
}

const list = (...items: object[]) => JSON.stringify({ apiVersion: 'v1', kind: 'List', items });
const service = (name: string, namespace: string) => ({ apiVersion: 'v1', kind: 'Service', metadata: { name, namespace }, spec: { ports: [{ name: 'tls', port: 8443, protocol: 'TCP' }] } });
const route = (name: string, hostname: string, backendNamespace: string) => ({
  apiVersion: `${GROUP}/v1`,
  kind: 'TLSRoute',
  metadata: { name, namespace: APPS },
  spec: { parentRefs: [{ name: 'gw', sectionName: 'tls' }], hostnames: [hostname], rules: [{ backendRefs: [{ name: 'secure', namespace: backendNamespace, port: 8443 }] }] },
});
const SETUP = list(
  {
    apiVersion: `${GROUP}/v1`,
    kind: 'Gateway',
    metadata: { name: 'gw', namespace: APPS },
    spec: { gatewayClassName: 'tollgate', listeners: [{ name: 'tls', protocol: 'TLS', port: 443, hostname: '*.example.com', tls: { mode: 'Passthrough' } }] },
  },
  service('secure', APPS),
  service('secure', OTHER),
  route('local', 'a.example.com', APPS),
  route('remote', 'b.example.com', OTHER),
);
const GRANT = list({
  apiVersion: `${GROUP}/v1beta1`,
  kind: 'ReferenceGrant',
  metadata: { name: 'tlsroutes-from-apps', namespace: OTHER },
  spec: { from: [{ group: GROUP, kind: 'TLSRoute', namespace: APPS }], to: [{ group: '', kind: 'Service' }] },
});

describe.skipIf(!availability.run)('TLSRoute status and snapshot on a real API server', () => {
  const cluster = useCluster();
  const kubectl = (args: string[], input?: string) => run(cluster.current.tools.kubectl, args, { env: cluster.current.env, input });
  let controller: ControllerProcess;

  beforeAll(async () => {
    controller = await startChartController(cluster.current);
    await kubectl(['create', 'namespace', APPS]);
    await kubectl(['create', 'namespace', OTHER]);
    await kubectl(['apply', '-f', '-'], SETUP);
  }, 120_000);

  afterAll(async () => {
    await controller?.stop('SIGKILL');
  });

  const ours = (r: Route) => r.status?.parents?.find((p) => p.controllerName === OURS);
  const condition = (r: Route, type: string) => ours(r)?.conditions.find((c) => c.type === type && c.observedGeneration === r.metadata.generation);

  it('attaches a route to the TLS listener: Accepted and ResolvedRefs True, listed in the snapshot', async () => {
    const r = await waitForObject<Route>(cluster.current, 'tlsroute', 'local', APPS, (x) => condition(x, 'Accepted')?.status === 'True' && condition(x, 'ResolvedRefs') !== undefined);
    expect(condition(r, 'ResolvedRefs')).toMatchObject({ status: 'True', reason: 'ResolvedRefs' });
    const gw = await waitForObject<GatewayObject>(cluster.current, 'gateway', 'gw', APPS, (g) => g.status?.listeners?.[0]?.attachedRoutes === 2);
    expect(gw.status!.listeners![0]!.supportedKinds.map((k) => k.kind)).toEqual(['TLSRoute']);
    const view = (await (await fetch(`http://${controller.admin}/snapshots`)).json()) as SnapshotsView;
    const tls = view.gateways.find((g) => g.gateway === `${APPS}/gw`)?.snapshot.tlsBinds;
    expect(tls?.map((b) => ({ port: b.port, listeners: b.listeners.map((l) => ({ name: l.name, mode: l.tls.mode, routes: l.routes.map((x) => [x.name, x.hostnames]) })) }))).toEqual([
      { port: 443, listeners: [{ name: 'tls', mode: 'Passthrough', routes: [[`${APPS}/local`, ['a.example.com']], [`${APPS}/remote`, ['b.example.com']]] }] },
    ]);
  });

  it('a backendRef to another namespace is RefNotPermitted until a ReferenceGrant for TLSRoutes allows it', async () => {
    const denied = await waitForObject<Route>(cluster.current, 'tlsroute', 'remote', APPS, (x) => condition(x, 'ResolvedRefs')?.status === 'False');
    expect(condition(denied, 'ResolvedRefs')).toMatchObject({ reason: 'RefNotPermitted' });
    expect(condition(denied, 'Accepted')).toMatchObject({ status: 'True' });
    await kubectl(['apply', '-f', '-'], GRANT);
    const allowed = await waitForObject<Route>(cluster.current, 'tlsroute', 'remote', APPS, (x) => condition(x, 'ResolvedRefs')?.status === 'True');
    expect(condition(allowed, 'ResolvedRefs')).toMatchObject({ reason: 'ResolvedRefs' });
  });
});
