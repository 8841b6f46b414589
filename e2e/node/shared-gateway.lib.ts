// One Gateway with two proxy pods shared by teams, each team's route named `chat` in its own
// namespace, as the tenancy tests on the e2e node set it up; and the wait those tests make
// before asserting what a change does: every Ready proxy pod has ACKed the Gateway's snapshot
// in which the team's route holds what the change says (read from the controller's
// /snapshots, never after a timer).
import { SYSTEM_NAMESPACE } from '../lib/chart.js';
import type { ClusterHandle } from '../lib/use-cluster-command.js';
import { kubectlOk, portForward, until } from './helm-install.lib.js';

export const GW_NS = 'shared-gateway';
export const GATEWAY = 'llm';
export const PROXY = `${GATEWAY}-tollgate`;
export const PROXY_PODS = `gateway.networking.k8s.io/gateway-name=${GATEWAY}`;
const CONTROLLER_PODS = 'app.kubernetes.io/name=tollgate,app.kubernetes.io/component=controller';
const REPLICAS = 2;

/**
 * The Gateway, its two proxy replicas set through its parameters ConfigMap (with `parameters`,
 * more keys of it: docs/kubernetes.md, "Proxy parameters"); routes from every namespace.
 */
export function gatewayObjects(parameters: Readonly<Record<string, string>> = {}): readonly unknown[] {
  return [
    { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'llm-proxy', namespace: GW_NS, labels: { 'tollgate.dev/parameters': 'true' } }, data: { replicas: String(REPLICAS), ...parameters } },
    {
      apiVersion: 'gateway.networking.k8s.io/v1',
      kind: 'Gateway',
      metadata: { name: GATEWAY, namespace: GW_NS },
      spec: {
        gatewayClassName: 'tollgate',
        infrastructure: { parametersRef: { group: '', kind: 'ConfigMap', name: 'llm-proxy' } },
        listeners: [{ name: 'http', protocol: 'HTTP', port: 80, allowedRoutes: { namespaces: { from: 'All' } } }],
      },
    },
  ];
}

export const GATEWAY_OBJECTS: readonly unknown[] = gatewayObjects();

/** A team's route `chat` on the Gateway, chosen by the `x-route: <team>` header, to the team's mock-llm Service. */
export function teamRoute(team: string): unknown {
  return {
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'HTTPRoute',
    metadata: { name: 'chat', namespace: team },
    spec: {
      parentRefs: [{ name: GATEWAY, namespace: GW_NS }],
      rules: [{ matches: [{ path: { type: 'PathPrefix', value: '/v1' }, headers: [{ name: 'x-route', value: team }] }], backendRefs: [{ name: 'mock-llm', port: 8080 }] }],
    },
  };
}

interface SnapshotsView<P> {
  gateways: {
    gateway: string;
    version: string;
    proxies: { pod: string; ackedVersion: string | null }[];
    snapshot: { binds: { listeners: { routes: { origin?: { kind: string; namespace: string; name: string }; policy: P | null }[] }[] }[] };
  }[];
}

/** The controller's /snapshots through a port-forward to its pod's admin port (loopback in the pod). */
async function snapshots<P>(node: ClusterHandle): Promise<SnapshotsView<P>> {
  const pod = (await kubectlOk(node, ['get', 'pods', '-n', SYSTEM_NAMESPACE, '-l', CONTROLLER_PODS, '-o', 'jsonpath={.items[0].metadata.name}'])).trim();
  const pf = await portForward(node, SYSTEM_NAMESPACE, `pod/${pod}`, 9095);
  try {
    return (await (await fetch(`http://127.0.0.1:${pf.port}/snapshots`)).json()) as SnapshotsView<P>;
  } finally {
    pf.close();
  }
}

/**
 * The version of the Gateway's snapshot in which the `chat` route of `team` has a policy that
 * `holds`, once every Ready proxy pod (both replicas) has ACKed it and no other version.
 */
export function everyProxyAcked<P>(node: ClusterHandle, team: string, what: string, holds: (policy: P | null | undefined) => boolean): Promise<string> {
  return until(`every proxy of ${GW_NS}/${GATEWAY} ACKed a snapshot where ${team}'s route ${what}`, async () => {
    const g = (await snapshots<P>(node)).gateways.find((x) => x.gateway === `${GW_NS}/${GATEWAY}`);
    if (!g) return undefined;
    const route = g.snapshot.binds.flatMap((b) => b.listeners.flatMap((l) => l.routes)).find((r) => r.origin?.kind === 'HTTPRoute' && r.origin.namespace === team && r.origin.name === 'chat');
    if (!holds(route?.policy)) return undefined;
    const pods = JSON.parse(await kubectlOk(node, ['get', 'pods', '-n', GW_NS, '-l', PROXY_PODS, '-o', 'json'])) as { items: { metadata: { name: string }; status: { conditions?: { type: string; status: string }[] } }[] };
    const ready = pods.items.filter((p) => p.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')).map((p) => p.metadata.name).sort();
    const acked = g.proxies.filter((p) => p.ackedVersion === g.version).map((p) => p.pod).sort();
    return ready.length === REPLICAS && JSON.stringify(ready) === JSON.stringify(acked) ? g.version : undefined;
  }, 120_000, 250);
}
