// A routine edit of a live route must not take it down: on a real kube-apiserver, with the chart
// installed and the controller under the chart's RBAC, a served route gains a
// ResponseHeaderModifier (and a URLRewrite) on its backendRef, then a filter a backendRef cannot
// carry. The route stays Accepted through both edits and the Gateway's snapshot keeps it: the
// supported filters travel with the backend; the unsupported one makes that backendRef alone
// unusable (ResolvedRefs False UnsupportedValue, its share answered 500), while the rule's other
// backend and the route's other rule keep serving.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startChartController, waitForObject, type ControllerProcess } from './controller-process.js';
import type { Condition } from './lib/conditions.js';
import { run } from './lib/exec.js';
import { e2eAvailability } from './lib/tools.js';
import { useCluster } from './lib/use-cluster.js';

const availability = e2eAvailability();
const APPS = 'apps';
const OURS = 'tollgate.dev/gateway-controller';
const GROUP = 'gateway.networking.k8s.io';

type RouteCondition = Condition & { observedGeneration?: number };
interface RouteStatus {
  status?: { parents?: { controllerName: string; conditions: RouteCondition[] }[] };
}
interface BackendView {
  kind: string;
  name: string;
  reason?: string;
  filters?: { type: string }[];
}
interface SnapshotsView {
  gateways: { gateway: string; snapshot: { binds: { listeners: { routes: { name: string; backends: BackendView[] }[] }[] }[] } }[];
}

const generationOf = (c: RouteCondition | undefined) => c?.observedGeneration;
const cond = (r: RouteStatus, type: string) => r.status?.parents?.find((p) => p.controllerName === OURS)?.conditions.find((c) => c.type === type);

const service = (name: string, address: string) => [
  { apiVersion: 'v1', kind: 'Service', metadata: { name, namespace: APPS }, spec: { ports: [{ name: 'http', port: 8000, protocol: 'TCP' }] } },
  {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: { name: `${name}-1`, namespace: APPS, labels: { 'kubernetes.io/service-name': name } },
    addressType: 'IPv4',
    endpoints: [{ addresses: [address], conditions: { ready: true } }],
    ports: [{ name: 'http', port: 8000, protocol: 'TCP' }],
  },
];
const list = (...items: object[]) => JSON.stringify({ apiVersion: 'v1', kind: 'List', items });
const SETUP = list(
  { apiVersion: `${GROUP}/v1`, kind: 'Gateway', metadata: { name: 'gw', namespace: APPS }, spec: { gatewayClassName: 'tollgate', listeners: [{ name: 'http', protocol: 'HTTP', port: 80 }] } },
  ...service('llm', '198.18.254.1'),
  ...service('spare', '198.18.254.2'),
);
const route = (llmFilters: object[]) =>
  list({
    apiVersion: `${GROUP}/v1`,
    kind: 'HTTPRoute',
    metadata: { name: 'chat', namespace: APPS },
    spec: {
      parentRefs: [{ name: 'gw' }],
      rules: [
        {
          matches: [{ path: { type: 'PathPrefix', value: '/v1' } }],
          backendRefs: [
            { name: 'llm', port: 8000, ...(llmFilters.length ? { filters: llmFilters } : {}) },
            { name: 'spare', port: 8000 },
          ],
        },
        { matches: [{ path: { type: 'PathPrefix', value: '/health' } }], backendRefs: [{ name: 'spare', port: 8000 }] },
      ],
    },
  });
const RESPONSE_MODIFIER = { type: 'ResponseHeaderModifier', responseHeaderModifier: { set: [{ name: 'X-Served-By', value: 'llm' }], remove: ['Server'] } };
const REWRITE = { type: 'URLRewrite', urlRewrite: { path: { type: 'ReplacePrefixMatch', replacePrefixMatch: '/v2' } } };
const MIRROR = { type: 'RequestMirror', requestMirror: { backendRef: { name: 'spare', port: 8000 } } };

describe.skipIf(!availability.run)('backendRef filters on a live route', () => {
  const cluster = useCluster({ tollgateCrds: false });
  const kubectl = (args: string[], input?: string) => run(cluster.current.tools.kubectl, args, { env: cluster.current.env, input });
  const apply = (json: string) => kubectl(['apply', '-f', '-'], json);
  let controller: ControllerProcess;

  beforeAll(async () => {
    controller = await startChartController(cluster.current);
    await kubectl(['create', 'namespace', APPS]);
  }, 120_000);

  afterAll(async () => {
    await controller?.stop('SIGKILL');
  });

  /** The route's status once the controller has written it for `generation`. */
  const settled = (generation: number) => waitForObject<RouteStatus>(cluster.current, 'httproute', 'chat', APPS, (r) => generationOf(cond(r, 'Accepted')) === generation && generationOf(cond(r, 'ResolvedRefs')) === generation);

  /** The chat route's rules in the Gateway's snapshot, as the controller serves it to proxies. */
  async function snapshotRoutes(): Promise<Map<string, BackendView[]>> {
    const view = (await (await fetch(`http://${controller.admin}/snapshots`)).json()) as SnapshotsView;
    const routes = view.gateways.find((g) => g.gateway === `${APPS}/gw`)?.snapshot.binds.flatMap((b) => b.listeners.flatMap((l) => l.routes)) ?? [];
    return new Map(routes.map((r) => [r.name, r.backends]));
  }

  it('serves the route as first written', async () => {
    await apply(SETUP);
    await apply(route([]));
    const r = await settled(1);
    expect(cond(r, 'Accepted')).toMatchObject({ status: 'True', reason: 'Accepted' });
    expect(cond(r, 'ResolvedRefs')).toMatchObject({ status: 'True' });
    expect([...(await snapshotRoutes()).keys()].sort()).toEqual([`${APPS}/chat/rule/0`, `${APPS}/chat/rule/1`]);
  });

  it('an edit that puts a ResponseHeaderModifier and a URLRewrite on the backendRef keeps the route Accepted and in the snapshot, filters with the backend', async () => {
    await apply(route([RESPONSE_MODIFIER, REWRITE]));
    const r = await settled(2);
    expect(cond(r, 'Accepted')).toMatchObject({ status: 'True', reason: 'Accepted' });
    expect(cond(r, 'ResolvedRefs')).toMatchObject({ status: 'True', reason: 'ResolvedRefs' });
    const routes = await snapshotRoutes();
    const [llm, spare] = routes.get(`${APPS}/chat/rule/0`)!;
    expect(llm).toMatchObject({ kind: 'service', name: `llm.${APPS}.svc.cluster.local:8000` });
    expect(llm!.filters!.map((f) => f.type)).toEqual(['ResponseHeaderModifier', 'URLRewrite']);
    expect(spare).toMatchObject({ kind: 'service', name: `spare.${APPS}.svc.cluster.local:8000` });
    expect(spare!.filters).toBeUndefined();
    expect(routes.has(`${APPS}/chat/rule/1`)).toBe(true);
  });

  it('an edit that puts a filter a backendRef cannot carry makes that backendRef alone unusable: the route stays Accepted and served', async () => {
    await apply(route([RESPONSE_MODIFIER, MIRROR]));
    const r = await settled(3);
    expect(cond(r, 'Accepted')).toMatchObject({ status: 'True', reason: 'Accepted' });
    expect(cond(r, 'ResolvedRefs')).toMatchObject({ status: 'False', reason: 'UnsupportedValue' });
    expect(cond(r, 'ResolvedRefs')!.message).toContain('spec.rules[0].backendRefs[0].filters[1].type: RequestMirror is not supported on a backendRef');
    const routes = await snapshotRoutes();
    const [llm, spare] = routes.get(`${APPS}/chat/rule/0`)!;
    expect(llm).toMatchObject({ kind: 'invalid', name: `${APPS}/llm`, reason: 'UnsupportedValue' });
    expect(spare).toMatchObject({ kind: 'service', name: `spare.${APPS}.svc.cluster.local:8000` });
    expect(routes.get(`${APPS}/chat/rule/1`)).toEqual([expect.objectContaining({ kind: 'service' })]);
  });

  it('edited back: the backendRef serves again', async () => {
    await apply(route([RESPONSE_MODIFIER]));
    const r = await settled(4);
    expect(cond(r, 'ResolvedRefs')).toMatchObject({ status: 'True' });
    const [llm] = (await snapshotRoutes()).get(`${APPS}/chat/rule/0`)!;
    expect(llm).toMatchObject({ kind: 'service', filters: [{ type: 'ResponseHeaderModifier' }] });
  });
});
