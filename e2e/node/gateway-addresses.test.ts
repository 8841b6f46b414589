// A Gateway's requested address serves traffic on the e2e node: the chart installed with helm,
// one Gateway asking for an address of the node's Service range (spec.addresses) and carrying
// infrastructure labels and annotations, mock-llm behind a route.
// - Requests from the host reach mock-llm at the requested address (kube-proxy's rules for the
//   Service's ClusterIP), which is the Gateway's status.addresses; the proxy pods carry the
//   labels and annotations.
// - Another address replaces the Service: the Gateway is Programmed again at the new address,
//   which serves.
// - An address outside the Service range: Programmed False (AddressNotUsable), no
//   status.addresses, the proxy pods still running; taking it back serves again.
import { beforeAll, describe, expect, it } from 'vitest';
import { installChart } from '../lib/chart.js';
import type { Condition } from '../lib/conditions.js';
import { NODE } from '../lib/node/addresses.js';
import { nodeAvailability } from '../lib/tools.js';
import { useNode } from '../lib/use-node.js';
import { kubectlOk, until } from './helm-install.lib.js';
import { mockLlm } from './manifests.js';

const availability = nodeAvailability();
const GW_NS = 'gateway-addresses';
const GATEWAY = 'pinned';
const PROXY_PODS = `gateway.networking.k8s.io/gateway-name=${GATEWAY}`;
// Beside the conformance run's usable address, in the same lower band of the Service range.
const [FIRST, SECOND] = ['198.19.0.250', '198.19.0.251'] as const;

interface GatewayObject {
  metadata: { generation: number };
  status?: { addresses?: { type: string; value: string }[]; conditions?: (Condition & { observedGeneration?: number })[] };
}

const gateway = (address: string) => ({
  apiVersion: 'gateway.networking.k8s.io/v1',
  kind: 'Gateway',
  metadata: { name: GATEWAY, namespace: GW_NS },
  spec: {
    gatewayClassName: 'tollgate',
    addresses: [{ type: 'IPAddress', value: address }],
    infrastructure: { labels: { team: 'shop' }, annotations: { 'example.com/owner': 'shop-team' } },
    listeners: [{ name: 'http', protocol: 'HTTP', port: 80 }],
  },
});
const ROUTE = {
  apiVersion: 'gateway.networking.k8s.io/v1',
  kind: 'HTTPRoute',
  metadata: { name: 'chat', namespace: GW_NS },
  spec: { parentRefs: [{ name: GATEWAY }], rules: [{ backendRefs: [{ name: 'mock-llm', port: 8080 }] }] },
};

describe.skipIf(!availability.run)('a Gateway’s requested address on the node', () => {
  const node = useNode();
  const k = (...args: string[]) => kubectlOk(node.current, args);
  const apply = (objects: unknown[]) => kubectlOk(node.current, ['apply', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'List', items: objects }));
  const read = async () => JSON.parse(await k('get', 'gateway', GATEWAY, '-n', GW_NS, '-o', 'json')) as GatewayObject;
  const programmed = (g: GatewayObject) => g.status?.conditions?.find((c) => c.type === 'Programmed' && c.observedGeneration === g.metadata.generation);
  /** The Gateway once its Programmed condition (for its current generation) passes `test`. */
  const gatewayWhere = (what: string, test: (g: GatewayObject) => boolean) => until(what, async () => {
    const g = await read();
    return test(g) ? g : undefined;
  }, 180_000);
  /** Whether mock-llm answers its model list at `address` (the proxies route every path to it). */
  const answers = async (address: string) => {
    const res = await fetch(`http://${address}/v1/models`, { signal: AbortSignal.timeout(10_000) }).catch(() => undefined);
    return res?.status === 200 ? true : undefined;
  };

  beforeAll(async () => {
    await installChart(node.current);
    await k('create', 'namespace', GW_NS);
    await kubectlOk(node.current, ['apply', '-f', '-'], mockLlm(GW_NS, 1));
    await k('rollout', 'status', '-n', GW_NS, 'deployment/mock-llm', '--timeout=120s');
    await apply([gateway(FIRST), ROUTE]);
  }, 20 * 60_000);

  it('serves at the requested address, which is the Gateway’s status.addresses; the pods carry the infrastructure metadata', async () => {
    const g = await gatewayWhere('Programmed True', (x) => programmed(x)?.status === 'True');
    expect(g.status!.addresses).toEqual([{ type: 'IPAddress', value: FIRST }]);
    await until(`${FIRST} answers`, () => answers(FIRST), 60_000);
    const pods = JSON.parse(await k('get', 'pods', '-n', GW_NS, '-l', PROXY_PODS, '-o', 'json')) as { items: { metadata: { labels: Record<string, string>; annotations?: Record<string, string> } }[] };
    expect(pods.items.length).toBeGreaterThan(0);
    for (const p of pods.items) {
      expect(p.metadata.labels).toMatchObject({ team: 'shop' });
      expect(p.metadata.annotations).toMatchObject({ 'example.com/owner': 'shop-team' });
    }
  });

  it('another address replaces the Service and serves', async () => {
    await apply([gateway(SECOND)]);
    const g = await gatewayWhere(`Programmed True at ${SECOND}`, (x) => programmed(x)?.status === 'True' && x.status?.addresses?.[0]?.value === SECOND);
    expect(g.status!.addresses).toEqual([{ type: 'IPAddress', value: SECOND }]);
    await until(`${SECOND} answers`, () => answers(SECOND), 60_000);
  });

  it('an address outside the Service range is AddressNotUsable, in no status; taking it back serves again', async () => {
    await apply([gateway(NODE.gatewayUnusableAddress)]);
    const g = await gatewayWhere('Programmed False (AddressNotUsable)', (x) => programmed(x)?.reason === 'AddressNotUsable');
    expect(programmed(g)!.message).toContain(`spec.addresses ${NODE.gatewayUnusableAddress}: the cluster refused the address`);
    expect(g.status?.addresses).toBeUndefined();
    // The proxies keep running; only their Service is missing.
    expect((await k('get', 'deployment', `${GATEWAY}-tollgate`, '-n', GW_NS, '-o', 'jsonpath={.status.readyReplicas}')).trim()).toBe('1');
    await apply([gateway(FIRST)]);
    await gatewayWhere(`Programmed True at ${FIRST}`, (x) => programmed(x)?.status === 'True' && x.status?.addresses?.[0]?.value === FIRST);
    await until(`${FIRST} answers`, () => answers(FIRST), 60_000);
  });
});
