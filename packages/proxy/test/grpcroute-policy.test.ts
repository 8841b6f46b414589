// GatewayPolicies targeting a GRPCRoute, from Kubernetes objects to real gRPC calls: translate()
// reads two GRPCRoutes on one Gateway and a policy on one of them (and one on a named rule), the
// snapshot travels over the controller's real stream server to a proxy in cluster mode, and a
// real grpc-js client calls a real grpc-js backend through it. The limit is that route's alone
// (answered RESOURCE_EXHAUSTED), the other GRPCRoute is not limited, an HTTPRoute of the same
// name keeps its own counters, and a policy on a rule takes precedence over the route's there.
import * as grpc from '@grpc/grpc-js';
import { translate, type Resources } from '@tollgate/controller';
import { afterEach, describe, expect, it } from 'vitest';
import { onFreePort } from './helpers.js';
import { startStreamedProxy } from './support/streamed-proxy.js';

const GATEWAY = 'infra/gw';
const encode = (text: string): Buffer => Buffer.from(text);
const decode = (b: Buffer): string => b.toString();

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

/** A grpc-js server answering every unary method of `paths` with the method's path. */
async function startBackend(paths: readonly string[]): Promise<number> {
  const server = new grpc.Server();
  const definition: grpc.ServiceDefinition = Object.fromEntries(
    paths.map((path) => [path, { path, requestStream: false, responseStream: false, requestSerialize: encode, requestDeserialize: decode, responseSerialize: encode, responseDeserialize: decode }]),
  );
  const handlers: grpc.UntypedServiceImplementation = Object.fromEntries(
    paths.map((path) => [path, (_call: grpc.ServerUnaryCall<string, string>, cb: grpc.sendUnaryData<string>) => cb(null, path)]),
  );
  server.addService(definition, handlers);
  const port = await new Promise<number>((resolve, reject) => server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))));
  cleanups.push(() => new Promise<void>((resolve) => server.tryShutdown(() => resolve())));
  return port;
}

/** One unary call through the gateway: its status code and message. */
function call(port: number, path: string, text: string): Promise<{ code: number; answer: string | null }> {
  const client = new grpc.Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
  let answer: string | null = null;
  return new Promise((resolve) => {
    const c = client.makeUnaryRequest(path, encode, decode, text, new grpc.Metadata(), {}, (_err, m) => {
      if (m !== undefined) answer = m;
    });
    c.on('status', (s: grpc.StatusObject) => {
      client.close();
      resolve({ code: s.code, answer });
    });
  });
}

const meta = (name: string, namespace: string) => ({ name, namespace, generation: 1, creationTimestamp: '2026-01-01T00:00:00Z' });
const target = (kind: 'GRPCRoute' | 'HTTPRoute', name: string, sectionName?: string) => ({ group: 'gateway.networking.k8s.io', kind, name, ...(sectionName ? { sectionName } : {}) });
const limit = (requests: number) => ({ rateLimit: { local: [{ requests, unit: 'Hours' as const }] } });

/** Gateway infra/gw open to every namespace; in `team` GRPCRoutes "limited" (service test.Limited, rule "slow" for its Slow method) and "free" (test.Free), an HTTPRoute also named "limited", and the policies. */
function resources(port: number, backend: number): Resources {
  const backendRefs = [{ name: 'echo', port: 9000 }];
  const parentRefs = [{ name: 'gw', namespace: 'infra' }];
  return {
    gatewayClasses: [{ apiVersion: 'gateway.networking.k8s.io/v1', kind: 'GatewayClass', metadata: { name: 'tollgate' }, spec: { controllerName: 'tollgate.dev/gateway-controller' } }],
    gateways: [
      {
        apiVersion: 'gateway.networking.k8s.io/v1',
        kind: 'Gateway',
        metadata: meta('gw', 'infra'),
        spec: { gatewayClassName: 'tollgate', listeners: [{ name: 'http', protocol: 'HTTP', port, allowedRoutes: { namespaces: { from: 'All' } } }] },
      },
    ],
    grpcRoutes: [
      {
        apiVersion: 'gateway.networking.k8s.io/v1',
        kind: 'GRPCRoute',
        metadata: meta('limited', 'team'),
        spec: {
          parentRefs,
          rules: [
            { name: 'slow', matches: [{ method: { service: 'test.Limited', method: 'Slow' } }], backendRefs },
            { matches: [{ method: { service: 'test.Limited' } }], backendRefs },
          ],
        },
      },
      { apiVersion: 'gateway.networking.k8s.io/v1', kind: 'GRPCRoute', metadata: meta('free', 'team'), spec: { parentRefs, rules: [{ matches: [{ method: { service: 'test.Free' } }], backendRefs }] } },
    ],
    httpRoutes: [
      // Same namespace and name as the limited GRPCRoute, with a policy of the same shape: its
      // calls (gRPC ones too, by path) must not spend the GRPCRoute's counters.
      { apiVersion: 'gateway.networking.k8s.io/v1', kind: 'HTTPRoute', metadata: meta('limited', 'team'), spec: { parentRefs, rules: [{ matches: [{ path: { type: 'PathPrefix', value: '/test.Http/' } }], backendRefs }] } },
    ],
    gatewayPolicies: [
      { apiVersion: 'tollgate.dev/v1alpha1', kind: 'GatewayPolicy', metadata: meta('limited', 'team'), spec: { targetRefs: [target('GRPCRoute', 'limited')], traffic: limit(2) } },
      { apiVersion: 'tollgate.dev/v1alpha1', kind: 'GatewayPolicy', metadata: meta('slow', 'team'), spec: { targetRefs: [target('GRPCRoute', 'limited', 'slow')], traffic: limit(1) } },
      { apiVersion: 'tollgate.dev/v1alpha1', kind: 'GatewayPolicy', metadata: meta('http', 'team'), spec: { targetRefs: [target('HTTPRoute', 'limited')], traffic: limit(2) } },
    ],
    referenceGrants: [],
    backends: [],
    backendTLSPolicies: [],
    services: [{ apiVersion: 'v1', kind: 'Service', metadata: { name: 'echo', namespace: 'team' }, spec: { ports: [{ port: 9000, appProtocol: 'kubernetes.io/h2c' }] } }],
    endpointSlices: [
      {
        apiVersion: 'discovery.k8s.io/v1',
        kind: 'EndpointSlice',
        metadata: { name: 'echo-1', namespace: 'team', labels: { 'kubernetes.io/service-name': 'echo' } },
        addressType: 'IPv4',
        endpoints: [{ addresses: ['127.0.0.1'], conditions: { ready: true } }],
        ports: [{ port: backend }],
      },
    ],
    namespaces: [],
    secrets: [],
    configMaps: [],
  };
}

describe('a GatewayPolicy targeting a GRPCRoute', () => {
  it("limits that route's calls alone (RESOURCE_EXHAUSTED), its named rule by the rule's policy", { timeout: 90_000 }, async () => {
    const backend = await startBackend(['/test.Limited/Echo', '/test.Limited/Slow', '/test.Free/Echo', '/test.Http/Echo']);
    const streamed = await startStreamedProxy(GATEWAY);
    cleanups.push(() => streamed.close());
    const port = await onFreePort(async (port) => {
      const result = translate(resources(port, backend), { controllerName: 'tollgate.dev/gateway-controller' });
      for (const name of ['team/limited', 'team/slow', 'team/http']) {
        const ancestors = result.status.gatewayPolicies.get(name)!.ancestors;
        expect(ancestors.map((a) => [a.ancestorRef.kind, ...a.conditions.map((c) => `${c.type}=${c.status}`)])).toEqual([['Gateway', 'Accepted=True', 'Attached=True']]);
      }
      await streamed.offer(result.snapshots.get(GATEWAY)!);
      return port;
    });

    // Two calls an hour on the GRPCRoute, its Slow method excepted (its rule has a policy of its own).
    expect(await call(port, '/test.Limited/Echo', 'a')).toEqual({ code: grpc.status.OK, answer: '/test.Limited/Echo' });
    expect(await call(port, '/test.Limited/Echo', 'b')).toEqual({ code: grpc.status.OK, answer: '/test.Limited/Echo' });
    expect(await call(port, '/test.Limited/Echo', 'c')).toEqual({ code: grpc.status.RESOURCE_EXHAUSTED, answer: null });
    // The rule's policy: one call an hour, counted apart from the route's.
    expect(await call(port, '/test.Limited/Slow', 'd')).toEqual({ code: grpc.status.OK, answer: '/test.Limited/Slow' });
    expect(await call(port, '/test.Limited/Slow', 'e')).toEqual({ code: grpc.status.RESOURCE_EXHAUSTED, answer: null });
    // The other GRPCRoute on the same Gateway: no limit.
    for (let i = 0; i < 4; i++) expect(await call(port, '/test.Free/Echo', `f${i}`)).toEqual({ code: grpc.status.OK, answer: '/test.Free/Echo' });
    // The HTTPRoute of the same name: its own two calls, not the GRPCRoute's spent ones.
    expect(await call(port, '/test.Http/Echo', 'g')).toEqual({ code: grpc.status.OK, answer: '/test.Http/Echo' });
    expect(await call(port, '/test.Http/Echo', 'h')).toEqual({ code: grpc.status.OK, answer: '/test.Http/Echo' });
    expect(await call(port, '/test.Http/Echo', 'i')).toEqual({ code: grpc.status.RESOURCE_EXHAUSTED, answer: null });
  });
});
