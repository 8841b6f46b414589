// A Backend resource's host name resolved by the proxy pods through the node's CoreDNS: the
// chart installed with helm, one Gateway, a Backend naming a Service by its DNS name
// (`llm.providers.svc.cluster.local`, a name the proxies resolve themselves: not a Service
// backendRef), and mock-llm behind it.
// - Requests reach the Backend; the proxy's config_dump shows the name, the address CoreDNS
//   answered and when it is resolved again.
// - The Service is replaced (a new ClusterIP) and pointed at another mock-llm: once the
//   cached answer's TTL is over the proxies resolve the name again and requests reach the new
//   address, without a restart or a new snapshot.
import { describe, expect, it, beforeAll } from 'vitest';
import { installChart } from '../lib/chart.js';
import { nodeAvailability } from '../lib/tools.js';
import { useNode } from '../lib/use-node.js';
import { kubectlOk, portForward, until } from './helm-install.lib.js';
import { gatewayWithRoute, mockLlm } from './manifests.js';

const availability = nodeAvailability();
const GW_NS = 'backend-dns';
const PROVIDERS = 'providers';
const GATEWAY = 'llm';
const PROXY = `${GATEWAY}-tollgate`;
const PROXY_PODS = `gateway.networking.k8s.io/gateway-name=${GATEWAY}`;

/** The Service the Backend's name resolves to: selector-less (its EndpointSlice is written by the test), so its name is an A record of its ClusterIP. */
const LLM_SERVICE = { apiVersion: 'v1', kind: 'Service', metadata: { name: 'llm', namespace: PROVIDERS }, spec: { ports: [{ name: 'http', port: 8080, targetPort: 8080 }] } };

const OBJECTS = [
  {
    apiVersion: 'tollgate.dev/v1alpha1',
    kind: 'Backend',
    metadata: { name: 'llm', namespace: GW_NS },
    spec: { hostname: `llm.${PROVIDERS}.svc.cluster.local`, port: 8080, provider: { type: 'OpenAICompatible' } },
  },
  ...gatewayWithRoute(GW_NS, GATEWAY, { group: 'tollgate.dev', kind: 'Backend', name: 'llm' }),
];

interface DnsView {
  dns: { names: { hostname: string; addresses: string[]; expiresAt: string; error: string | null }[] };
}

describe.skipIf(!availability.run)('Backend host names through the node\'s CoreDNS', () => {
  const node = useNode();
  const k = (...args: string[]) => kubectlOk(node.current, args);
  const apply = (objects: unknown[]) => kubectlOk(node.current, ['apply', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'List', items: objects }));
  let address = '';

  /**
   * The address of a ready mock-llm pod of `namespace` that is not going away: right after a
   * rollout the pod a Deployment replaced may still be listed (terminating), and an
   * EndpointSlice pointing at it would send every request to an address nobody answers.
   */
  async function podIp(namespace: string): Promise<string> {
    const pods = JSON.parse(await k('get', 'pods', '-n', namespace, '-l', 'app=mock-llm', '-o', 'json')) as {
      items: { metadata: { deletionTimestamp?: string }; status: { podIP?: string; conditions?: { type: string; status: string }[] } }[];
    };
    const live = pods.items.find((p) => !p.metadata.deletionTimestamp && p.status.podIP && p.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'));
    if (!live) throw new Error(`no ready mock-llm pod in ${namespace}`);
    return live.status.podIP!;
  }

  /** Points Service providers/llm at a pod of the mock-llm Deployment of `namespace`, through an EndpointSlice of its own. */
  async function pointAt(namespace: string): Promise<void> {
    const ip = await podIp(namespace);
    await apply([
      LLM_SERVICE,
      {
        apiVersion: 'discovery.k8s.io/v1',
        kind: 'EndpointSlice',
        metadata: { name: 'llm-manual', namespace: PROVIDERS, labels: { 'kubernetes.io/service-name': 'llm' } },
        addressType: 'IPv4',
        endpoints: [{ addresses: [ip], conditions: { ready: true } }],
        ports: [{ name: 'http', port: 8080 }],
      },
    ]);
  }

  async function proxyDns(): Promise<DnsView['dns']['names']> {
    const pod = (await k('get', 'pods', '-n', GW_NS, '-l', PROXY_PODS, '-o', 'jsonpath={.items[0].metadata.name}')).trim();
    const pf = await portForward(node.current, GW_NS, `pod/${pod}`, 15000);
    try {
      return ((await (await fetch(`http://127.0.0.1:${pf.port}/config_dump`)).json()) as DnsView).dns.names;
    } finally {
      pf.close();
    }
  }

  /** The model list of whichever mock-llm answers through the Gateway (each Deployment serves its own). */
  const models = async () => {
    const res = await fetch(`http://${address}/v1/models`, { signal: AbortSignal.timeout(10_000) });
    return res.status === 200 ? ((await res.json()) as { data: { id: string }[] }).data.map((m) => m.id) : undefined;
  };

  beforeAll(async () => {
    await installChart(node.current);
    for (const ns of [GW_NS, PROVIDERS, 'llm-one', 'llm-two']) await k('create', 'namespace', ns);
    await kubectlOk(node.current, ['apply', '-f', '-'], mockLlm('llm-one', 1));
    await kubectlOk(node.current, ['apply', '-f', '-'], mockLlm('llm-two', 1));
    // Two mock-llms that answer differently: the second lists one model of its own.
    const command = ['node', '/app/bin/mock-llm.js', '--host', '0.0.0.0', '--port', '8080', '--model', 'two'];
    await k('patch', 'deployment', 'mock-llm', '-n', 'llm-two', '--type=json', '-p', JSON.stringify([{ op: 'add', path: '/spec/template/spec/containers/0/command', value: command }]));
    for (const ns of ['llm-one', 'llm-two']) await k('rollout', 'status', '-n', ns, 'deployment/mock-llm', '--timeout=120s');
    await pointAt('llm-one');
    await apply(OBJECTS);
    await k('wait', '--for=condition=Programmed', `gateway/${GATEWAY}`, '-n', GW_NS, '--timeout=180s');
    await k('rollout', 'status', '-n', GW_NS, `deployment/${PROXY}`, '--timeout=180s');
    address = (await k('get', 'gateway', GATEWAY, '-n', GW_NS, '-o', 'jsonpath={.status.addresses[0].value}')).trim();
    await until(`${address} answers`, models, 60_000);
  }, 20 * 60_000);

  it('reaches the Backend by the address CoreDNS answers, shown in config_dump with its expiry', async () => {
    expect(await models()).not.toEqual(['two']);
    const clusterIp = (await k('get', 'service', 'llm', '-n', PROVIDERS, '-o', 'jsonpath={.spec.clusterIP}')).trim();
    const entry = (await proxyDns()).find((n) => n.hostname === `llm.${PROVIDERS}.svc.cluster.local`);
    expect(entry).toMatchObject({ addresses: [clusterIp], error: null });
    expect(Date.parse(entry!.expiresAt)).toBeGreaterThan(0);
  });

  it('resolves the name again once its TTL is over: a replaced Service (new ClusterIP) is reached without a restart', async () => {
    const before = (await k('get', 'service', 'llm', '-n', PROVIDERS, '-o', 'jsonpath={.spec.clusterIP}')).trim();
    await k('delete', 'service', 'llm', '-n', PROVIDERS);
    await k('delete', 'endpointslice', 'llm-manual', '-n', PROVIDERS);
    await pointAt('llm-two');
    const after = (await k('get', 'service', 'llm', '-n', PROVIDERS, '-o', 'jsonpath={.spec.clusterIP}')).trim();
    expect(after).not.toBe(before);
    // The old ClusterIP no longer answers; CoreDNS's TTL (5 s) bounds how long the proxies keep
    // it. The deadline is generous (a full CI run loads the node); a miss says what was seen.
    try {
      await until(
        'requests reach the new address',
        async () => {
          const seen = await models().catch((err: Error) => `error: ${err.message}`);
          if (JSON.stringify(seen) === '["two"]') return true;
          throw new Error(`the Gateway answered ${JSON.stringify(seen)}`);
        },
        180_000,
      );
    } catch (err) {
      const view = await proxyDns().catch((e: Error) => `config_dump: ${e.message}`);
      const slice = await k('get', 'endpointslice', 'llm-manual', '-n', PROVIDERS, '-o', 'jsonpath={.endpoints[*].addresses}').catch((e: Error) => e.message);
      const pods = await k('get', 'pods', '-n', 'llm-two', '-o', 'wide').catch((e: Error) => e.message);
      throw new Error(`${(err as Error).message}; new ClusterIP ${after}, the proxy's DNS cache: ${JSON.stringify(view)}; the EndpointSlice's addresses: ${slice}; the pods of llm-two:\n${pods}`);
    }
    const entry = (await proxyDns()).find((n) => n.hostname === `llm.${PROVIDERS}.svc.cluster.local`);
    expect(entry?.addresses).toEqual([after]);
  }, 300_000);
});
