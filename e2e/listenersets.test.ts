// ListenerSets on a real kube-apiserver: the chart installed, the controller binary out of
// cluster with the chart ServiceAccount's token (so the chart's RBAC for listenersets and their
// status is what is exercised). A Gateway lets ListenerSets of its own namespace attach
// (allowedListeners Same): the one in its namespace is Accepted, with its listeners' status,
// counted in the Gateway's status.attachedListenerSets, and its port is on the Gateway's
// Service; the one of another namespace is NotAllowed until the Gateway allows All. A listener
// with the hostname of one before it is refused (HostnameConflict), the others of its set
// stay; an HTTPRoute attaches through a parentRef of kind ListenerSet and sectionName.
// No node: no pod runs, so Programmed is Pending.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { installChart, startAsChart, type ControllerProcess, waitForObject } from './controller-process.js';
import type { Condition } from './lib/conditions.js';
import { run } from './lib/exec.js';
import { e2eAvailability } from './lib/tools.js';
import { useCluster } from './lib/use-cluster.js';

const availability = e2eAvailability();
const APPS = 'edge';
const TEAM = 'team';
const SERVICE = 'gw-tollgate';

type Conditioned = { conditions?: (Condition & { observedGeneration?: number })[] };
interface ListenerStatus extends Conditioned {
  name: string;
  attachedRoutes: number;
}
interface GatewayObject {
  metadata: { generation: number };
  status?: Conditioned & { attachedListenerSets?: number; listeners?: ListenerStatus[] };
}
interface ListenerSetObject {
  metadata: { generation: number };
  status?: Conditioned & { listeners?: ListenerStatus[] };
}
interface RouteObject {
  status?: { parents?: ({ parentRef: { kind?: string; name: string; sectionName?: string } } & Conditioned)[] };
}
interface ServiceObject {
  spec: { ports?: { port: number }[] };
}

const cond = (o: Conditioned | undefined, type: string) => o?.conditions?.find((c) => c.type === type);
/** Status written for the object's current generation. */
const current = (o: { metadata: { generation: number }; status?: Conditioned }) =>
  (o.status?.conditions ?? []).length > 0 && o.status!.conditions!.every((c) => c.observedGeneration === o.metadata.generation);

const gateway = (from: string) =>
  JSON.stringify({
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'Gateway',
    metadata: { name: 'gw', namespace: APPS },
    spec: { gatewayClassName: 'tollgate', allowedListeners: { namespaces: { from } }, listeners: [{ name: 'http', protocol: 'HTTP', port: 8080, hostname: 'gw.example.com' }] },
  });

const listenerSet = (namespace: string, name: string, listeners: object[]) =>
  JSON.stringify({
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'ListenerSet',
    metadata: { name, namespace },
    spec: { parentRef: { name: 'gw', namespace: APPS }, listeners },
  });

describe.skipIf(!availability.run)('ListenerSets (kube-apiserver)', () => {
  const cluster = useCluster({ tollgateCrds: false });
  const kubectl = (args: string[], input?: string) => run(cluster.current.tools.kubectl, args, { env: cluster.current.env, ...(input === undefined ? {} : { input }) });
  const apply = (doc: string) => kubectl(['apply', '-f', '-'], doc);
  const gw = (predicate: (g: GatewayObject) => boolean) => waitForObject<GatewayObject>(cluster.current, 'gateway', 'gw', APPS, (g) => current(g) && predicate(g));
  const ls = (namespace: string, name: string, predicate: (l: ListenerSetObject) => boolean) =>
    waitForObject<ListenerSetObject>(cluster.current, 'listenerset', name, namespace, (l) => current(l) && predicate(l));
  let controller: ControllerProcess;

  beforeAll(async () => {
    await installChart(cluster.current, [APPS, TEAM]);
    controller = await startAsChart(cluster.current, 'controller-listenersets', ['--proxy-image=registry.example.com/tollgate:e2e']);
  }, 120_000);

  afterAll(async () => {
    await controller?.stop('SIGKILL');
  });

  it('a ListenerSet of the Gateway’s namespace is accepted with Same; one of another namespace is NotAllowed', async () => {
    await apply(gateway('Same'));
    await apply(listenerSet(APPS, 'local', [{ name: 'api', protocol: 'HTTP', port: 9090, hostname: 'api.example.com' }]));
    await apply(listenerSet(TEAM, 'remote', [{ name: 'team', protocol: 'HTTP', port: 8080, hostname: 'team.example.com' }]));
    const local = await ls(APPS, 'local', (l) => cond(l.status, 'Accepted')?.status === 'True');
    expect(cond(local.status, 'Accepted')).toMatchObject({ reason: 'Accepted' });
    expect(cond(local.status, 'Programmed')).toMatchObject({ status: 'False', reason: 'Pending' });
    expect(local.status!.listeners!.map((l) => [l.name, cond(l, 'Accepted')?.status, cond(l, 'ResolvedRefs')?.status])).toEqual([['api', 'True', 'True']]);
    const remote = await ls(TEAM, 'remote', (l) => cond(l.status, 'Accepted')?.reason === 'NotAllowed');
    expect(cond(remote.status, 'Accepted')).toMatchObject({ status: 'False', message: expect.stringContaining('allows ListenerSets of its own namespace only') as unknown });
    expect(cond(remote.status, 'Programmed')).toMatchObject({ status: 'False', reason: 'NotAllowed' });
    const g = await gw((x) => x.status?.attachedListenerSets === 1);
    // The Gateway's own listeners only.
    expect(g.status!.listeners!.map((l) => l.name)).toEqual(['http']);
  });

  it('the Gateway’s Service carries the ports of its ListenerSets’ listeners', async () => {
    const svc = await waitForObject<ServiceObject>(cluster.current, 'service', SERVICE, APPS, (s) => (s.spec.ports ?? []).some((p) => p.port === 9090));
    expect(svc.spec.ports!.map((p) => p.port).sort()).toEqual([8080, 9090]);
  });

  it('allowing All accepts the other namespace’s ListenerSet; a listener with a hostname already in use is refused alone', async () => {
    await apply(listenerSet(TEAM, 'remote', [
      { name: 'team', protocol: 'HTTP', port: 8080, hostname: 'team.example.com' },
      { name: 'clash', protocol: 'HTTP', port: 8080, hostname: 'gw.example.com' },
    ]));
    await apply(gateway('All'));
    await gw((x) => x.status?.attachedListenerSets === 2);
    const remote = await ls(TEAM, 'remote', (l) => cond(l.status, 'Accepted')?.status === 'True' && l.status?.listeners?.length === 2);
    const [team, clash] = remote.status!.listeners!;
    expect(cond(team, 'Accepted')).toMatchObject({ status: 'True' });
    expect(cond(clash, 'Accepted')).toMatchObject({ status: 'False', reason: 'HostnameConflict' });
    expect(cond(clash, 'Conflicted')).toMatchObject({ status: 'True', reason: 'HostnameConflict' });
    expect(cond(clash, 'Programmed')).toMatchObject({ status: 'False', reason: 'HostnameConflict' });
  });

  it('an HTTPRoute attaches through a parentRef of kind ListenerSet and its sectionName', async () => {
    await apply(
      JSON.stringify({
        apiVersion: 'gateway.networking.k8s.io/v1',
        kind: 'HTTPRoute',
        metadata: { name: 'team-route', namespace: TEAM },
        spec: {
          parentRefs: [
            { group: 'gateway.networking.k8s.io', kind: 'ListenerSet', name: 'remote', sectionName: 'team' },
            // The Gateway has no listener of that name: the ListenerSet's are not the Gateway's.
            { name: 'gw', namespace: APPS, sectionName: 'team' },
          ],
          rules: [{ backendRefs: [{ name: 'llm', port: 80 }] }],
        },
      }),
    );
    const route = await waitForObject<RouteObject>(cluster.current, 'httproute', 'team-route', TEAM, (r) => (r.status?.parents ?? []).length === 2);
    const [viaSet, viaGateway] = route.status!.parents!;
    expect(viaSet!.parentRef).toMatchObject({ kind: 'ListenerSet', name: 'remote', sectionName: 'team' });
    expect(cond(viaSet, 'Accepted')).toMatchObject({ status: 'True' });
    expect(cond(viaGateway, 'Accepted')).toMatchObject({ status: 'False', reason: 'NoMatchingParent' });
    const remote = await ls(TEAM, 'remote', (l) => l.status?.listeners?.[0]?.attachedRoutes === 1);
    expect(remote.status!.listeners!.map((l) => l.attachedRoutes)).toEqual([1, 0]);
  });
});
