// Tenants sharing a Gateway and a rate limit service, from Kubernetes objects to the real
// envoyproxy/ratelimit and Redis: translate() reads the GatewayPolicies of two namespaces that
// chose the same domain and descriptor keys, the snapshot travels over the controller's real
// stream server to a proxy in cluster mode, and each namespace spends its own counters (the
// domain is sent as <namespace>/<domain>), also when one of them writes the other's prefixed
// domain itself. And a tenant's policy whose Service cannot answer leaves the proxy ready.
import { randomUUID } from 'node:crypto';
import { withVersion, type PolicyIR, type ProxySnapshot } from '@tollgate/api';
import { translate, type Resources } from '@tollgate/controller';
import { startMockLlm, type MockLlm } from '@tollgate/mock-llm';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { onFreePort, send } from './helpers.js';
import { counters, rlsAvailability, rlsBinaries, startRls, type RlsService } from './support/rls.js';
import { startStreamedProxy, type StreamedProxy } from './support/streamed-proxy.js';

const availability = rlsAvailability();
const GATEWAY = 'infra/gw';
const perUser = (domain: string) => `domain: ${domain}\ndescriptors:\n  - key: user\n    rate_limit: { unit: day, requests_per_unit: 1 }\n`;
// What an operator writes for the two teams: one domain per namespace (docs/rate-limiting.md).
const CONFIGS = { 'team-a': perUser('team-a/llm'), 'team-b': perUser('team-b/llm') };

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

const meta = (name: string, namespace?: string) => ({ name, ...(namespace ? { namespace } : {}), generation: 1, creationTimestamp: '2026-01-01T00:00:00Z' });

interface Tenant {
  readonly namespace: string;
  /** The route's host name: `<route>.example.com`. */
  readonly route: string;
  /** The domain of the route's GatewayPolicy; null: the route has no policy. */
  readonly domain: string | null;
}

/** A Gateway of `infra` open to every namespace; per tenant an HTTPRoute to mock-llm and a GatewayPolicy on it whose rate limit service is limits/rls. */
function resources(port: number, llm: MockLlm, tenants: readonly Tenant[]): Resources {
  const r: Resources & { [K in keyof Resources]: NonNullable<Resources[K]>[number][] } = {
    gatewayClasses: [{ apiVersion: 'gateway.networking.k8s.io/v1', kind: 'GatewayClass', metadata: meta('tollgate'), spec: { controllerName: 'tollgate.dev/gateway-controller' } }],
    gateways: [
      {
        apiVersion: 'gateway.networking.k8s.io/v1',
        kind: 'Gateway',
        metadata: meta('gw', 'infra'),
        spec: { gatewayClassName: 'tollgate', listeners: [{ name: 'http', protocol: 'HTTP', port, allowedRoutes: { namespaces: { from: 'All' } } }] },
      },
    ],
    httpRoutes: [],
    grpcRoutes: [],
    referenceGrants: [],
    gatewayPolicies: [],
    backends: [],
    backendTLSPolicies: [],
    services: [{ apiVersion: 'v1', kind: 'Service', metadata: { name: 'rls', namespace: 'limits' }, spec: { ports: [{ name: 'grpc', port: 8081 }] } }],
    endpointSlices: [],
    namespaces: [],
    secrets: [],
    configMaps: [],
  };
  for (const t of tenants) {
    r.httpRoutes.push({
      apiVersion: 'gateway.networking.k8s.io/v1',
      kind: 'HTTPRoute',
      metadata: meta(t.route, t.namespace),
      spec: { parentRefs: [{ name: 'gw', namespace: 'infra' }], hostnames: [`${t.route}.example.com`], rules: [{ backendRefs: [{ name: 'llm', port: 80 }] }] },
    });
    if (t.domain !== null)
      r.gatewayPolicies.push({
      apiVersion: 'tollgate.dev/v1alpha1',
      kind: 'GatewayPolicy',
      metadata: meta(t.route, t.namespace),
      spec: {
        targetRefs: [{ group: 'gateway.networking.k8s.io', kind: 'HTTPRoute', name: t.route }],
        traffic: {
          rateLimit: {
            global: {
              service: { backendRef: { name: 'rls', namespace: 'limits', port: 8081 } },
              domain: t.domain,
              failureMode: 'FailClosed',
              timeout: '2s',
              descriptors: [{ unit: 'Requests', entries: [{ name: 'user', expression: 'request.headers["x-user"]' }] }],
            },
          },
        },
      },
    });
    if (r.services.some((s) => s.metadata?.namespace === t.namespace)) continue;
    r.services.push({ apiVersion: 'v1', kind: 'Service', metadata: { name: 'llm', namespace: t.namespace }, spec: { ports: [{ name: 'http', port: 80 }] } });
    r.endpointSlices.push({
      apiVersion: 'discovery.k8s.io/v1',
      kind: 'EndpointSlice',
      metadata: { name: 'llm-1', namespace: t.namespace, labels: { 'kubernetes.io/service-name': 'llm' } },
      addressType: 'IPv4',
      endpoints: [{ addresses: ['127.0.0.1'], conditions: { ready: true } }],
      ports: [{ name: 'http', port: llm.port }],
    });
    r.referenceGrants.push({
      apiVersion: 'gateway.networking.k8s.io/v1beta1',
      kind: 'ReferenceGrant',
      metadata: meta(`rls-for-${t.namespace}`, 'limits'),
      spec: { from: [{ group: 'tollgate.dev', kind: 'GatewayPolicy', namespace: t.namespace }], to: [{ group: '', kind: 'Service', name: 'rls' }] },
    });
  }
  return r;
}

/** The snapshot with every rate limit service at `address`. */
function dialing(snapshot: ProxySnapshot, address: string): ProxySnapshot {
  const policy = (p: PolicyIR | null) => (p?.remoteRateLimit ? { ...p, remoteRateLimit: { ...p.remoteRateLimit, service: address } } : p);
  const { version: _version, ...content } = snapshot;
  return withVersion({
    ...content,
    binds: snapshot.binds.map((b) => ({ ...b, listeners: b.listeners.map((l) => ({ ...l, policy: policy(l.policy), routes: l.routes.map((r) => ({ ...r, policy: policy(r.policy) })) })) })),
  });
}

let llm: MockLlm;
beforeAll(async () => {
  llm = await startMockLlm({ port: 0 });
});
afterAll(async () => {
  await llm?.close();
});

/** A proxy of infra/gw in cluster mode on the controller's real stream. */
async function clusterProxy(): Promise<StreamedProxy> {
  const p = await startStreamedProxy(GATEWAY);
  cleanups.push(() => p.close());
  return p;
}

const chat = (port: number, host: string, user: string) =>
  send(`http://127.0.0.1:${port}/v1/chat/completions`, {
    method: 'POST',
    headers: { host, 'content-type': 'application/json', 'x-user': user },
    body: '{"model":"m","messages":[{"role":"user","content":"hi"}]}',
  });

describe.skipIf(!availability.run)('tenants sharing a rate limit service', () => {
  let rls: RlsService;
  beforeAll(async () => {
    rls = await startRls(rlsBinaries().found!, { configs: CONFIGS });
  });
  afterAll(async () => {
    await rls?.stop();
  });

  it('each namespace spends only its own counters, whatever domain and keys its policy names', async () => {
    const tenants: Tenant[] = [
      { namespace: 'team-a', route: 'a', domain: 'llm' },
      { namespace: 'team-b', route: 'b', domain: 'llm' },
      // team-b writing team-a's domain as the service sees it: still team-b's own.
      { namespace: 'team-b', route: 'b-as-a', domain: 'team-a/llm' },
    ];
    const { offer } = await clusterProxy();
    const port = await onFreePort(async (port) => {
      const result = translate(resources(port, llm, tenants), { controllerName: 'tollgate.dev/gateway-controller' });
      for (const t of tenants) {
        const ancestors = result.status.gatewayPolicies.get(`${t.namespace}/${t.route}`)!.ancestors;
        expect(ancestors[0]!.conditions.map((c) => `${c.type}=${c.status}`)).toEqual(['Accepted=True', 'Attached=True', 'ServicesAvailable=False']);
      }
      // The Service's cluster name resolves only inside a cluster: here the proxy dials the
      // local service instead. What is under test is everything else the controller decided.
      await offer(dialing(result.snapshots.get(GATEWAY)!, rls.address));
      return port;
    });

    const alice = `alice-${randomUUID()}`;
    // team-b's route that names team-a's domain: sent as team-b/team-a/llm, a domain with no
    // limits, so nothing is counted against team-a.
    for (let i = 0; i < 3; i++) expect((await chat(port, 'b-as-a.example.com', alice)).status).toBe(200);
    // One request a day per user in each namespace's domain, counted apart.
    expect((await chat(port, 'a.example.com', alice)).status).toBe(200);
    expect((await chat(port, 'b.example.com', alice)).status).toBe(200);
    expect((await chat(port, 'a.example.com', alice)).status).toBe(429);
    expect((await chat(port, 'b.example.com', alice)).status).toBe(429);

    // What envoyproxy/ratelimit keeps in Redis: <domain>_<key>_<value>_<window>, the domain
    // prefixed with the policy's namespace.
    const keys = Object.entries(await counters(rls, '')).filter(([k]) => k.includes(alice));
    expect(keys.map(([k, n]) => [k.replace(/_\d+$/, ''), n])).toEqual([
      [`team-a/llm_user_${alice}`, 2],
      [`team-b/llm_user_${alice}`, 2],
    ]);
  });
});

describe("a tenant's route-level limit whose Service cannot answer, in cluster mode", () => {
  it('leaves the proxy ready and fails that route alone (FailClosed)', async () => {
    const { proxy, offer } = await clusterProxy();
    const port = await onFreePort(async (port) => {
      // As translated: the proxy dials rls.limits.svc.cluster.local, which has no address here,
      // as a Service without pods has none that answers.
      const tenants: Tenant[] = [
        { namespace: 'team-a', route: 'a', domain: 'llm' },
        { namespace: 'team-b', route: 'b', domain: null },
      ];
      await offer(translate(resources(port, llm, tenants), { controllerName: 'tollgate.dev/gateway-controller' }).snapshots.get(GATEWAY)!);
      return port;
    });
    const ready = await send(`http://${proxy.ops.readiness.address}/healthz/ready`);
    expect({ status: ready.status, body: ready.body }).toEqual({ status: 200, body: 'ready\n' });
    const refused = await chat(port, 'a.example.com', 'alice');
    expect(refused.status).toBe(500);
    expect(refused.headers['x-tollgate-error']).toBe('TG_RATELIMIT_SERVICE_UNAVAILABLE');
    // Another tenant's route on the same Gateway is served.
    expect((await chat(port, 'b.example.com', 'alice')).status).toBe(200);
    expect((await send(`http://${proxy.ops.readiness.address}/healthz/ready`)).status).toBe(200);
  });
});
