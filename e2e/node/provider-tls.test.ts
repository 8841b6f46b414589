// An HTTPS provider on the e2e node, set up as a platform team would: the chart installed with
// helm, one Gateway, a Backend naming the provider's in-cluster host name with its key from a
// Secret, and a BackendTLSPolicy on that Backend trusting the provider's CA (a ConfigMap).
// The provider is mock-llm serving HTTPS with a certificate of a CA made here and requiring the
// key, as a provider does.
// - The official openai client gets its completion through the Gateway: the proxies verified
//   the provider's certificate and sent the key from the Secret (not the client's own key).
// - The policy is Accepted with the Gateway as its ancestor; config_dump shows the backend's TLS
//   (trusted CAs, hostname) and never the key.
// - The CA ConfigMap replaced by another CA: requests fail with 502 (the certificate no longer
//   verifies) and nothing goes out unverified; the right CA back: requests succeed again, with
//   no restart.
import OpenAI, { InternalServerError } from 'openai';
import { beforeAll, describe, expect, it } from 'vitest';
import { issueTestCertificate } from '../../packages/testkit/src/index.js';
import { installChart } from '../lib/chart.js';
import { policyCondition, type PolicyStatus } from '../lib/conditions.js';
import { nodeAvailability } from '../lib/tools.js';
import { useNode } from '../lib/use-node.js';
import { kubectlOk, portForward, until } from './helm-install.lib.js';
import { gatewayWithRoute, httpsMockLlm } from './manifests.js';

const availability = nodeAvailability();
const GW_NS = 'provider-tls';
const LLM_NS = 'llm-https';
const GATEWAY = 'llm';
const PROXY = `${GATEWAY}-tollgate`;
const PROXY_PODS = `gateway.networking.k8s.io/gateway-name=${GATEWAY}`;
const HOST = `llm.${LLM_NS}.svc.cluster.local`;
const PROVIDER_KEY = 'sk-provider-tls-e2e-0001';

const b64 = (s: string) => Buffer.from(s).toString('base64');
const ca = issueTestCertificate({ commonName: 'provider CA', ca: true });
const otherCa = issueTestCertificate({ commonName: 'some other CA', ca: true });
const serving = issueTestCertificate({ commonName: HOST, names: [HOST, `llm.${LLM_NS}.svc`], issuer: ca });

const caConfigMap = (pem: string) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'provider-ca', namespace: GW_NS }, data: { 'ca.crt': pem } });

const OBJECTS = [
  { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'provider-key', namespace: GW_NS }, type: 'Opaque', data: { apiKey: b64(PROVIDER_KEY) } },
  caConfigMap(ca.cert),
  {
    apiVersion: 'tollgate.dev/v1alpha1',
    kind: 'Backend',
    metadata: { name: 'llm', namespace: GW_NS },
    spec: { hostname: HOST, port: 443, provider: { type: 'OpenAICompatible', apiKeySecretRef: { name: 'provider-key' } } },
  },
  {
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'BackendTLSPolicy',
    metadata: { name: 'llm-tls', namespace: GW_NS },
    spec: {
      targetRefs: [{ group: 'tollgate.dev', kind: 'Backend', name: 'llm' }],
      validation: { caCertificateRefs: [{ group: '', kind: 'ConfigMap', name: 'provider-ca' }], hostname: HOST },
    },
  },
  ...gatewayWithRoute(GW_NS, GATEWAY, { group: 'tollgate.dev', kind: 'Backend', name: 'llm' }),
];

/** A backend as config_dump lists it. */
interface BackendView {
  type: string;
  host: string;
  tls: { hostname: string; trust: string } | null;
}

describe.skipIf(!availability.run)('an HTTPS provider behind a BackendTLSPolicy, its key from a Secret', () => {
  const node = useNode();
  const k = (...args: string[]) => kubectlOk(node.current, args);
  const apply = (objects: unknown[]) => kubectlOk(node.current, ['apply', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'List', items: objects }));
  let address = '';
  /** The client's own key: the Gateway replaces it with the provider's. */
  const client = () => new OpenAI({ baseURL: `http://${address}/v1`, apiKey: 'sk-client-not-the-provider-key', maxRetries: 0, timeout: 20_000 });
  const complete = () => client().chat.completions.create({ model: 'mock-gpt', messages: [{ role: 'user', content: 'hello over tls' }] });

  async function configDump(): Promise<string> {
    const pod = (await k('get', 'pods', '-n', GW_NS, '-l', PROXY_PODS, '-o', 'jsonpath={.items[0].metadata.name}')).trim();
    const pf = await portForward(node.current, GW_NS, `pod/${pod}`, 15000);
    try {
      return await (await fetch(`http://127.0.0.1:${pf.port}/config_dump`)).text();
    } finally {
      pf.close();
    }
  }

  beforeAll(async () => {
    await installChart(node.current);
    for (const ns of [GW_NS, LLM_NS]) await k('create', 'namespace', ns);
    await apply([{ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'serving', namespace: LLM_NS }, type: 'Opaque', data: { 'tls.crt': b64(serving.cert), 'tls.key': b64(serving.key), 'api-key': b64(PROVIDER_KEY) } }]);
    await kubectlOk(node.current, ['apply', '-f', '-'], httpsMockLlm(LLM_NS, 'serving'));
    await k('rollout', 'status', '-n', LLM_NS, 'deployment/llm', '--timeout=120s');
    await apply(OBJECTS);
    await k('wait', '--for=condition=Programmed', `gateway/${GATEWAY}`, '-n', GW_NS, '--timeout=180s');
    await k('rollout', 'status', '-n', GW_NS, `deployment/${PROXY}`, '--timeout=180s');
    address = (await k('get', 'gateway', GATEWAY, '-n', GW_NS, '-o', 'jsonpath={.status.addresses[0].value}')).trim();
    await until(`${address} answers through the HTTPS provider`, async () => (await complete().catch(() => undefined)) ?? undefined, 60_000);
  }, 20 * 60_000);

  it('answers the openai client over TLS to the provider, with the key of the Secret', async () => {
    const answer = await complete();
    expect(answer.object).toBe('chat.completion');
    expect(answer.usage?.total_tokens).toBeGreaterThan(0);
  });

  it('the policy is Accepted for the Gateway; config_dump shows the TLS, never the key', async () => {
    const policy = JSON.parse(await k('get', 'backendtlspolicy', 'llm-tls', '-n', GW_NS, '-o', 'json')) as PolicyStatus & { status: { ancestors: { ancestorRef: { name: string } }[] } };
    expect(policy.status.ancestors.map((a) => a.ancestorRef.name)).toEqual([GATEWAY]);
    expect(policyCondition(policy, 'Accepted')).toMatchObject({ status: 'True', reason: 'Accepted' });
    expect(policyCondition(policy, 'ResolvedRefs')).toMatchObject({ status: 'True' });
    const dump = await configDump();
    expect(dump).not.toContain(PROVIDER_KEY);
    expect(dump).not.toContain(b64(PROVIDER_KEY));
    const found: BackendView[] = [];
    const walk = (v: unknown): void => {
      if (Array.isArray(v)) v.forEach(walk);
      else if (v && typeof v === 'object') {
        const o = v as Record<string, unknown>;
        if (o.type === 'Backend' && o.host === HOST) found.push(o as unknown as BackendView);
        Object.values(o).forEach(walk);
      }
    };
    walk(JSON.parse(dump));
    expect(found.length).toBeGreaterThan(0);
    expect(found[0]!.tls).toMatchObject({ hostname: HOST, trust: '1 CA certificates' });
  });

  it('another CA in the ConfigMap: 502, nothing sent unverified; the right CA back: served again, no restart', async () => {
    const pods = (await k('get', 'pods', '-n', GW_NS, '-l', PROXY_PODS, '-o', 'jsonpath={.items[*].metadata.uid}')).trim();
    await apply([caConfigMap(otherCa.cert)]);
    const refused = await until('requests fail verification', async () => {
      try {
        await complete();
        return undefined;
      } catch (err) {
        return err instanceof InternalServerError ? err : undefined;
      }
    }, 60_000);
    expect(refused.status).toBe(502);
    await apply([caConfigMap(ca.cert)]);
    await until('served again', async () => (await complete().catch(() => undefined)) ?? undefined, 60_000);
    expect((await k('get', 'pods', '-n', GW_NS, '-l', PROXY_PODS, '-o', 'jsonpath={.items[*].metadata.uid}')).trim()).toBe(pods);
  });
});
