// The controller on a real kube-apiserver, as a user runs it: the chart installed with helm
// (CRDs, RBAC, GatewayClass), the controller binary out of cluster with the chart
// ServiceAccount's token (so the chart's RBAC is what is tested: a missing verb fails here),
// objects applied with kubectl, status read with `kubectl get -o yaml`. Waits are on watch
// events (kubectl --watch) and on the controller's log lines, never on sleeps. Last, a tenant's
// expressions past their bounds on a shared Gateway: refused, naming them, while another
// tenant is served.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfigText } from '../packages/api/src/index.js';
import { ControllerProcess, serviceAccountKubeconfig, waitForObject, type LogLine } from './controller-process.js';
import { run } from './lib/exec.js';
import { REPO_ROOT, e2eAvailability } from './lib/tools.js';
import { useCluster } from './lib/use-cluster.js';

const availability = e2eAvailability();
const CHART = join(REPO_ROOT, 'charts/tollgate');
const NS = 'tollgate-system';
const APPS = 'apps';
const OURS = 'tollgate.dev/gateway-controller';
const OTHER = 'example.com/other-controller';
const GROUP = 'gateway.networking.k8s.io';

interface Condition {
  type: string;
  status: string;
  reason: string;
  message: string;
  observedGeneration?: number;
  lastTransitionTime: string;
}
interface Ancestor {
  ancestorRef: { group?: string; kind?: string; namespace?: string; name: string; sectionName?: string };
  controllerName: string;
  conditions: Condition[];
}
interface Policy {
  metadata: { generation: number };
  status?: { ancestors?: Ancestor[] };
}
interface RouteStatus {
  status?: { parents?: { parentRef: { name: string }; controllerName: string; conditions: Condition[] }[] };
}
interface GatewayStatus {
  status?: { conditions?: Condition[]; listeners?: { name: string; attachedRoutes: number; conditions: Condition[] }[] };
}

const cond = (conditions: Condition[] | undefined, type: string) => conditions?.find((c) => c.type === type);
const oursOf = (p: Policy) => (p.status?.ancestors ?? []).filter((a) => a.controllerName === OURS);
const theirsOf = (p: Policy) => (p.status?.ancestors ?? []).filter((a) => a.controllerName === OTHER);

const GATEWAYS = `
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: { name: other }
spec: { controllerName: ${OTHER} }
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: { name: gw, namespace: ${APPS} }
spec:
  gatewayClassName: tollgate
  listeners:
  - { name: http, protocol: HTTP, port: 80 }
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: { name: foreign, namespace: ${APPS} }
spec:
  gatewayClassName: other
  listeners:
  - { name: http, protocol: HTTP, port: 80 }
---
apiVersion: v1
kind: Service
metadata: { name: llm, namespace: ${APPS} }
spec:
  ports: [ { name: http, port: 8000, protocol: TCP } ]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: llm-1
  namespace: ${APPS}
  labels: { kubernetes.io/service-name: llm }
addressType: IPv4
endpoints:
- addresses: [ 198.18.254.1 ]
  conditions: { ready: true }
ports: [ { name: http, port: 8000, protocol: TCP } ]
`;

const policy = (tokens: number) => `
apiVersion: tollgate.dev/v1alpha1
kind: GatewayPolicy
metadata: { name: chat-budget, namespace: ${APPS} }
spec:
  targetRefs:
  - { group: ${GROUP}, kind: HTTPRoute, name: chat }
  traffic:
    rateLimit:
      local:
      - { tokens: ${tokens}, unit: Minutes }
`;

const route = (parent: string | null) => `
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: { name: chat, namespace: ${APPS} }
spec:
  parentRefs: ${parent ? `[ { name: ${parent} } ]` : '[]'}
  rules:
  - matches: [ { path: { type: PathPrefix, value: /v1 } } ]
    backendRefs: [ { name: llm, port: 8000 } ]
`;

// A shared Gateway in its own namespace, two tenants' routes and policies on it (as objects:
// `kubectl apply` takes JSON as well as YAML).
const INFRA = 'infra';
const TENANTS = ['tenant-a', 'tenant-b'] as const;
const HUGE_REGEX = `/v1/${'(?:.?){1000}'.repeat(80)}`;
const NESTED_CEL =
  'request.headers.all(a, request.headers.all(b, request.headers.all(c, request.headers.exists(d, a + b + c + d == request.path + request.host + llm.model && a.contains(b) && c.startsWith(d)))))';

const list = (...items: object[]) => JSON.stringify({ apiVersion: 'v1', kind: 'List', items });
const service = (ns: string, name: string, port: number) => ({ apiVersion: 'v1', kind: 'Service', metadata: { name, namespace: ns }, spec: { ports: [{ name: 'p', port, protocol: 'TCP' }] } });
const SHARED = list(
  {
    apiVersion: `${GROUP}/v1`,
    kind: 'Gateway',
    metadata: { name: 'shared', namespace: INFRA },
    spec: { gatewayClassName: 'tollgate', listeners: [{ name: 'http', protocol: 'HTTP', port: 80, allowedRoutes: { namespaces: { from: 'All' } } }] },
  },
  ...TENANTS.flatMap((ns) => [service(ns, 'llm', 8000), service(ns, 'rls', 8081)]),
);
const tenantRoute = (ns: string, name: string, path: { type: string; value: string }) =>
  list({
    apiVersion: `${GROUP}/v1`,
    kind: 'HTTPRoute',
    metadata: { name, namespace: ns },
    spec: { parentRefs: [{ name: 'shared', namespace: INFRA }], rules: [{ matches: [{ path }], backendRefs: [{ name: 'llm', port: 8000 }] }] },
  });
const descriptorPolicy = (ns: string, name: string, target: string, expression: string) =>
  list({
    apiVersion: 'tollgate.dev/v1alpha1',
    kind: 'GatewayPolicy',
    metadata: { name, namespace: ns },
    spec: {
      targetRefs: [{ group: GROUP, kind: 'HTTPRoute', name: target }],
      traffic: { rateLimit: { global: { service: { backendRef: { name: 'rls', port: 8081 } }, domain: ns, descriptors: [{ unit: 'Requests', entries: [{ name: 'key', expression }] }] } } },
    },
  });

describe.skipIf(!availability.run)('controller on kube-apiserver', () => {
  const cluster = useCluster({ tollgateCrds: false });
  const kubectl = (args: string[], input?: string) => run(cluster.current.tools.kubectl, args, { env: cluster.current.env, input });
  const apply = (yaml: string) => kubectl(['apply', '-f', '-'], yaml);
  /** What a user reads: `kubectl get gwpol -o yaml`. */
  const readPolicy = async () => parseConfigText(await kubectl(['get', 'gwpol', 'chat-budget', '-n', APPS, '-o', 'yaml']), 'kubectl get gwpol -o yaml') as Policy;
  const watchPolicyNamed = (name: string, ns: string, predicate: (p: Policy) => boolean) => waitForObject<Policy>(cluster.current, 'gatewaypolicies.tollgate.dev', name, ns, predicate);
  const watchPolicy = (predicate: (p: Policy) => boolean) => watchPolicyNamed('chat-budget', APPS, predicate);
  let kubeconfig: string;
  let controller: ControllerProcess;

  beforeAll(async () => {
    await run(cluster.current.tools.helm, ['install', 'tollgate', CHART, '-n', NS, '--create-namespace'], { env: cluster.current.env });
    await kubectl(['create', 'namespace', APPS]);
    kubeconfig = await serviceAccountKubeconfig(cluster.current, NS, 'tollgate-controller', join(mkdtempSync(join(tmpdir(), 'tg-ctl-')), 'kubeconfig'));
    controller = await ControllerProcess.start('controller', cluster.current, kubeconfig);
  }, 120_000);

  afterAll(async () => {
    await controller?.stop('SIGKILL');
  });

  it('syncs every watched kind with the chart RBAC, then reports ready', async () => {
    expect((await fetch(`http://${controller.health}/healthz`)).status).toBe(200);
    await controller.synced();
    expect((await fetch(`http://${controller.health}/readyz`)).status).toBe(200);
    // GatewayClass, Gateway, HTTPRoute, GRPCRoute, TLSRoute, ListenerSet, ReferenceGrant,
    // BackendTLSPolicy, GatewayPolicy, Backend, Service, EndpointSlice, Namespace, Secret and the
    // labelled parameters ConfigMaps.
    expect(await controller.metric('tollgate_controller_watch_synced')).toBe(15);
  });

  it('gwctl controller log reads and sets the levels of the running controller (out of cluster, --admin-addr)', async () => {
    const gwctl = (args: string[]) => run(process.execPath, [join(REPO_ROOT, 'packages/gwctl/bin/gwctl.js'), 'controller', 'log', '--local', '--admin-addr', controller.admin, ...args], { env: { PATH: process.env.PATH, HOME: cluster.current.dir } });
    const shown = await gwctl([]);
    console.log(`$ gwctl controller log --local --admin-addr ${controller.admin}\n${shown}`);
    expect(shown).toBe(
      'current log level is info,tollgate/syncer=info,tollgate/translator=debug,gateway-controller=debug,deployer=info\n---\n' +
        'tollgate/syncer: info\ntollgate/translator: debug\ngateway-controller: debug\ndeployer: info\ndefault: info\n',
    );
    const set = await gwctl(['--set', 'tollgate/syncer=debug']);
    console.log(`$ gwctl controller log --local --admin-addr ${controller.admin} --set tollgate/syncer=debug\n${set}`);
    expect(set).toContain('tollgate/syncer: debug\n');
    expect(await gwctl(['--set', 'tollgate/syncer=info'])).toContain('tollgate/syncer: info\n');
    // Three gwctl processes one after the other (each reads what the one before set): on the
    // loaded two-core CI machine a node process can wait seconds for CPU before it answers.
  }, 90_000);

  it('accepts its GatewayClass and leaves another controller’s class alone', async () => {
    await apply(GATEWAYS);
    const gc = await waitForObject<GatewayStatus>(cluster.current, 'gatewayclass', 'tollgate', undefined, (o) => cond(o.status?.conditions, 'Accepted')?.status === 'True');
    expect(cond(gc.status?.conditions, 'Accepted')).toMatchObject({ reason: 'Accepted', observedGeneration: 1 });
    // The installed CRDs' bundle version, read with the chart's RBAC.
    expect(cond(gc.status?.conditions, 'SupportedVersion')).toMatchObject({ status: 'True', reason: 'SupportedVersion' });
    const other = JSON.parse(await kubectl(['get', 'gatewayclass', 'other', '-o', 'json'])) as GatewayStatus;
    expect(cond(other.status?.conditions, 'Accepted')).toMatchObject({ status: 'Unknown', reason: 'Pending' });
  });

  describe('GatewayPolicy status through every transition', () => {
    let acceptedAt = '';

    it('policy before its target: one entry on the target itself, Accepted False TargetNotFound', async () => {
      await apply(policy(5000));
      await watchPolicy((p) => oursOf(p).length === 1);
      const p = await readPolicy();
      const [a] = oursOf(p);
      expect(a!.ancestorRef).toMatchObject({ group: GROUP, kind: 'HTTPRoute', namespace: APPS, name: 'chat' });
      expect(cond(a!.conditions, 'Accepted')).toMatchObject({ status: 'False', reason: 'TargetNotFound', observedGeneration: 1 });
    });

    it('another controller’s entry is kept by every later write', async () => {
      const p = await readPolicy();
      const theirs: Ancestor = {
        ancestorRef: { group: GROUP, kind: 'Gateway', namespace: APPS, name: 'foreign' },
        controllerName: OTHER,
        conditions: [{ type: 'Accepted', status: 'True', reason: 'Accepted', message: 'theirs', observedGeneration: 1, lastTransitionTime: '2026-01-01T00:00:00Z' }],
      };
      await kubectl(['patch', 'gwpol', 'chat-budget', '-n', APPS, '--subresource=status', '--type=merge', '-p', JSON.stringify({ status: { ancestors: [...(p.status?.ancestors ?? []), theirs] } })]);
      expect(theirsOf(await readPolicy())).toHaveLength(1);
    });

    it('target created: the Gateway is the ancestor, Accepted and Attached', async () => {
      await apply(route('gw'));
      await watchPolicy((p) => oursOf(p).some((a) => a.ancestorRef.kind === 'Gateway' && cond(a.conditions, 'Attached')?.status === 'True'));
      const p = await readPolicy();
      const ours = oursOf(p);
      expect(ours).toHaveLength(1);
      expect(ours[0]!.ancestorRef).toMatchObject({ group: GROUP, kind: 'Gateway', namespace: APPS, name: 'gw' });
      expect(cond(ours[0]!.conditions, 'Accepted')).toMatchObject({ status: 'True', reason: 'Accepted' });
      expect(cond(ours[0]!.conditions, 'Attached')).toMatchObject({ status: 'True', reason: 'Attached' });
      expect(theirsOf(p)).toHaveLength(1);
      acceptedAt = cond(ours[0]!.conditions, 'Accepted')!.lastTransitionTime;

      const r = JSON.parse(await kubectl(['get', 'httproute', 'chat', '-n', APPS, '-o', 'json'])) as RouteStatus;
      const parent = r.status?.parents?.find((x) => x.controllerName === OURS);
      expect(cond(parent?.conditions, 'Accepted')).toMatchObject({ status: 'True', reason: 'Accepted' });
      expect(cond(parent?.conditions, 'ResolvedRefs')).toMatchObject({ status: 'True', reason: 'ResolvedRefs' });
      const gw = await waitForObject<GatewayStatus>(cluster.current, 'gateway', 'gw', APPS, (o) => o.status?.listeners?.[0]?.attachedRoutes === 1);
      expect(cond(gw.status?.conditions, 'Accepted')).toMatchObject({ status: 'True' });
      expect(cond(gw.status?.conditions, 'Programmed')?.status).toBe('False');
    });

    it('policy edited: observedGeneration follows, lastTransitionTime of an unchanged condition is kept', async () => {
      await apply(policy(6000));
      await watchPolicy((p) => oursOf(p).some((a) => cond(a.conditions, 'Accepted')?.observedGeneration === 2));
      const p = await readPolicy();
      expect(p.metadata.generation).toBe(2);
      const accepted = cond(oursOf(p)[0]!.conditions, 'Accepted')!;
      expect(accepted).toMatchObject({ status: 'True', observedGeneration: 2 });
      expect(accepted.lastTransitionTime).toBe(acceptedAt);
      expect(theirsOf(p)).toHaveLength(1);
    });

    it('route detached from its Gateway: one entry on the route, Attached False Pending', async () => {
      await apply(route(null));
      await watchPolicy((p) => oursOf(p).length === 1 && oursOf(p)[0]!.ancestorRef.kind === 'HTTPRoute');
      const p = await readPolicy();
      const [a] = oursOf(p);
      expect(a!.ancestorRef).toMatchObject({ kind: 'HTTPRoute', namespace: APPS, name: 'chat' });
      expect(cond(a!.conditions, 'Accepted')).toMatchObject({ status: 'True' });
      expect(cond(a!.conditions, 'Attached')).toMatchObject({ status: 'False', reason: 'Pending', message: `HTTPRoute ${APPS}/chat is not attached to any Gateway` });
      expect(theirsOf(p)).toHaveLength(1);
    });

    it('route on a Gateway of another class: still Pending; that Gateway and the route’s parent entry are left alone', async () => {
      await apply(route('foreign'));
      // The route's own status settles first: no parent entry of ours for a Gateway not ours.
      await waitForObject<RouteStatus & { metadata: { generation: number } }>(cluster.current, 'httproute', 'chat', APPS, (r) => r.metadata.generation === 3 && !(r.status?.parents ?? []).some((x) => x.controllerName === OURS));
      const p = await readPolicy();
      const [a] = oursOf(p);
      expect(a!.ancestorRef).toMatchObject({ kind: 'HTTPRoute', name: 'chat' });
      expect(cond(a!.conditions, 'Attached')).toMatchObject({ status: 'False', reason: 'Pending' });
      const foreign = JSON.parse(await kubectl(['get', 'gateway', 'foreign', '-n', APPS, '-o', 'json'])) as GatewayStatus;
      expect(cond(foreign.status?.conditions, 'Accepted')).toMatchObject({ status: 'Unknown', reason: 'Pending' });
    });

    it('target deleted: back to one entry on the target, Accepted False TargetNotFound', async () => {
      await apply(route('gw'));
      await watchPolicy((p) => oursOf(p).some((a) => a.ancestorRef.kind === 'Gateway'));
      await kubectl(['delete', 'httproute', 'chat', '-n', APPS]);
      await watchPolicy((p) => oursOf(p).some((a) => cond(a.conditions, 'Accepted')?.reason === 'TargetNotFound'));
      const p = await readPolicy();
      expect(oursOf(p)).toHaveLength(1);
      expect(oursOf(p)[0]!.ancestorRef).toMatchObject({ kind: 'HTTPRoute', name: 'chat' });
      expect(cond(oursOf(p)[0]!.conditions, 'Accepted')).toMatchObject({ status: 'False', reason: 'TargetNotFound' });
      expect(theirsOf(p)).toHaveLength(1);
    });

    it('policy deleted: nothing left to write, no write errors', async () => {
      const from = controller.lines.length;
      await kubectl(['delete', 'gwpol', 'chat-budget', '-n', APPS]);
      await controller.waitForLog((l) => l.msg === 'reconciled' && (l.objects as Record<string, number>).gatewayPolicies === 0, 30_000, from);
      expect(await controller.metric('tollgate_controller_status_writes_total', { result: 'error' })).toBe(0);
    });
  });

  it('skips writes that would change nothing', async () => {
    await apply(policy(5000));
    await apply(route('gw'));
    await watchPolicy((p) => oursOf(p).some((a) => cond(a.conditions, 'Attached')?.status === 'True'));
    // Let the writer finish what the last reconcile asked of it: the route's status too.
    await waitForObject<RouteStatus>(cluster.current, 'httproute', 'chat', APPS, (r) => (r.status?.parents ?? []).some((x) => x.controllerName === OURS));
    const before = await controller.metric('tollgate_controller_status_writes_total', { result: 'written' });
    const from = controller.lines.length;
    // A change that leaves every status as it is: a Service in another namespace.
    await kubectl(['create', 'service', 'clusterip', 'unrelated', '-n', 'default', '--tcp=80:80']);
    const reconciled = await controller.waitForLog((l: LogLine) => l.msg === 'reconciled', 30_000, from);
    const pass = await controller.waitForLog((l: LogLine) => l.msg === 'status pass finished', 30_000, controller.lines.indexOf(reconciled));
    expect(pass.written).toBe(0);
    expect(pass.checked).toBeGreaterThan(0);
    const after = await controller.metric('tollgate_controller_status_writes_total', { result: 'written' });
    expect(after).toBe(before);
  });
  it('puts back our entry in a route status another writer took it from, with no other change', async () => {
    const ours = (r: RouteStatus) => (r.status?.parents ?? []).filter((x) => x.controllerName === OURS);
    expect(ours(await waitForObject<RouteStatus>(cluster.current, 'httproute', 'chat', APPS, (r) => ours(r).length > 0))).toHaveLength(1);
    const from = controller.lines.length;
    // Another writer empties the route's status: a status-only change, which starts no reconcile;
    // the status writer reads the route again and writes our entry back.
    await kubectl(['patch', 'httproute', 'chat', '-n', APPS, '--subresource=status', '--type=merge', '-p', JSON.stringify({ status: { parents: [] } })]);
    const back = await waitForObject<RouteStatus>(cluster.current, 'httproute', 'chat', APPS, (r) => ours(r).length > 0);
    expect(cond(ours(back)[0]!.conditions, 'Accepted')?.status).toBe('True');
    // The pass that put it back wrote that route alone.
    const pass = await controller.waitForLog((l: LogLine) => l.msg === 'status pass finished' && Number(l.written) > 0, 30_000, from);
    expect(pass.written).toBe(1);
  });

  it('refuses a tenant’s huge regex and over-budget descriptor, naming them, and serves the other tenant', async () => {
    for (const ns of [INFRA, ...TENANTS]) await kubectl(['create', 'namespace', ns]);
    await apply(SHARED);
    const [a, b] = TENANTS;
    await apply(tenantRoute(a, 'huge', { type: 'RegularExpression', value: HUGE_REGEX }));
    await apply(tenantRoute(a, 'plain', { type: 'PathPrefix', value: '/a' }));
    await apply(descriptorPolicy(a, 'nested', 'plain', NESTED_CEL));
    await apply(tenantRoute(b, 'models', { type: 'RegularExpression', value: '/v1/models/[^/]+' }));
    await apply(descriptorPolicy(b, 'per-user', 'models', 'request.headers["x-user-id"]'));

    const routeAccepted = (r: RouteStatus) => cond(r.status?.parents?.find((p) => p.controllerName === OURS)?.conditions, 'Accepted');
    const policyAccepted = (p: Policy) => cond(oursOf(p)[0]?.conditions, 'Accepted');
    const huge = await waitForObject<RouteStatus>(cluster.current, 'httproute', 'huge', a, (r) => routeAccepted(r) !== undefined);
    expect(routeAccepted(huge)).toMatchObject({ status: 'False', reason: 'UnsupportedValue' });
    expect(routeAccepted(huge)!.message).toMatch(
      /^spec\.rules\[0\]\.matches\[0\]\.path\.value: got "\/v1\/\(\?:\.\?\)\{1000\}.*: with its repetitions written out the pattern is up to \d+ instructions, more than the 2000 allowed before compiling \(10 × regex\.maxProgramSize 200\)/,
    );
    const nested = await waitForObject<Policy>(cluster.current, 'gatewaypolicies.tollgate.dev', 'nested', a, (p) => policyAccepted(p) !== undefined);
    expect(policyAccepted(nested)).toMatchObject({ status: 'False', reason: 'Invalid' });
    expect(policyAccepted(nested)!.message).toMatch(
      /^spec\.traffic\.rateLimit\.global\.descriptors\[0\]\.entries\[0\]\.expression: got "request\.headers\.all\(.*: its estimated cost is \d+, more than the budget of 10000 \(cel\.maxCost\)/,
    );
    const models = await waitForObject<RouteStatus>(cluster.current, 'httproute', 'models', b, (r) => routeAccepted(r)?.status === 'True');
    expect(routeAccepted(models)).toMatchObject({ status: 'True', reason: 'Accepted' });
    await watchPolicyNamed('per-user', b, (p) => policyAccepted(p)?.status === 'True');

    // The Gateway's snapshot serves the other tenant's route with its policy, and the tenant's
    // plain route without the refused policy; the refused route is not in it.
    const view = (await (await fetch(`http://${controller.admin}/snapshots`)).json()) as {
      gateways: { gateway: string; snapshot: { binds: { listeners: { routes: { name: string; policy: unknown }[] }[] }[] } }[];
    };
    const routes = view.gateways.find((g) => g.gateway === `${INFRA}/shared`)!.snapshot.binds.flatMap((x) => x.listeners.flatMap((l) => l.routes));
    expect(routes.map((r) => r.name).sort()).toEqual([`${a}/plain/rule/0`, `${b}/models/rule/0`]);
    expect(routes.find((r) => r.name === `${b}/models/rule/0`)!.policy).not.toBeNull();
    expect(routes.find((r) => r.name === `${a}/plain/rule/0`)!.policy).toBeNull();
  }, 120_000);
});
