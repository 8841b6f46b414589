// GRPCRoute on a real kube-apiserver: the chart installed with helm (its RBAC lets the controller
// watch GRPCRoutes and write their status), the controller binary with the chart
// ServiceAccount's token, objects applied with kubectl, status read back, and the snapshot a
// proxy receives read through the proxy's own stream client.
// - An HTTP listener lists GRPCRoute among its supportedKinds; a GRPCRoute attached to it is
//   Accepted and ResolvedRefs, and reaches the proxy as routes whose matches are the method's
//   path, with an h2c backend.
// - A listener whose allowedRoutes.kinds names HTTPRoute alone: Accepted False, NotAllowedByListeners.
// - No hostname in common with the listener: Accepted False, NoMatchingListenerHostname.
// - A Service of another namespace: ResolvedRefs False, RefNotPermitted, until a ReferenceGrant
//   there allows GRPCRoutes (one for HTTPRoutes does not).
// - A Service port under a BackendTLSPolicy (CA from a ConfigMap): resolves, and reaches the proxy
//   as an HTTP/2-over-TLS backend (protocol h2 with the policy's TLS).
// Waits are on watches of the objects and the stream, not on timers.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { issueTestCertificate } from '../packages/testkit/src/index.js';
import { connectStreamClient, type StreamedSnapshot } from './lib/stream-client.js';
import { installChart, startAsChart, waitForObject, type ControllerProcess } from './controller-process.js';
import type { Condition } from './lib/conditions.js';
import { run } from './lib/exec.js';
import { e2eAvailability } from './lib/tools.js';
import { useCluster } from './lib/use-cluster.js';

const availability = e2eAvailability();
const INFRA = 'infra';
const TEAM = 'team';
const BACKENDS = 'backends';
const SERVICE = 'gateway_api_conformance.echo_basic.grpcecho.GrpcEcho';
const ca = issueTestCertificate({ commonName: 'grpc-ca', ca: true });

const BASE = `
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: { name: gw, namespace: ${INFRA} }
spec:
  gatewayClassName: tollgate
  listeners:
  - { name: grpc, protocol: HTTP, port: 8080, hostname: '*.example.com', allowedRoutes: { namespaces: { from: All } } }
  - { name: http-only, protocol: HTTP, port: 8081, allowedRoutes: { namespaces: { from: All }, kinds: [ { kind: HTTPRoute } ] } }
---
apiVersion: v1
kind: Service
metadata: { name: echo, namespace: ${TEAM} }
spec:
  ports: [ { port: 9000 } ]
---
apiVersion: v1
kind: Service
metadata: { name: echo, namespace: ${BACKENDS} }
spec:
  ports: [ { port: 9000 } ]
---
apiVersion: gateway.networking.k8s.io/v1
kind: GRPCRoute
metadata: { name: echo, namespace: ${TEAM} }
spec:
  parentRefs: [ { name: gw, namespace: ${INFRA}, sectionName: grpc } ]
  hostnames: [ grpc.example.com ]
  rules:
  - name: echo
    matches:
    - method: { service: ${SERVICE}, method: Echo }
      headers: [ { name: x-version, value: one } ]
    backendRefs: [ { name: echo, port: 9000 } ]
---
apiVersion: gateway.networking.k8s.io/v1
kind: GRPCRoute
metadata: { name: http-only, namespace: ${TEAM} }
spec:
  parentRefs: [ { name: gw, namespace: ${INFRA}, sectionName: http-only } ]
  rules:
  - backendRefs: [ { name: echo, port: 9000 } ]
---
apiVersion: gateway.networking.k8s.io/v1
kind: GRPCRoute
metadata: { name: other-host, namespace: ${TEAM} }
spec:
  parentRefs: [ { name: gw, namespace: ${INFRA}, sectionName: grpc } ]
  hostnames: [ grpc.example.net ]
  rules:
  - backendRefs: [ { name: echo, port: 9000 } ]
---
apiVersion: gateway.networking.k8s.io/v1
kind: GRPCRoute
metadata: { name: cross, namespace: ${TEAM} }
spec:
  parentRefs: [ { name: gw, namespace: ${INFRA}, sectionName: grpc } ]
  hostnames: [ cross.example.com ]
  rules:
  - backendRefs: [ { name: echo, namespace: ${BACKENDS}, port: 9000 } ]
---
apiVersion: gateway.networking.k8s.io/v1
kind: GRPCRoute
metadata: { name: secure, namespace: ${TEAM} }
spec:
  parentRefs: [ { name: gw, namespace: ${INFRA}, sectionName: grpc } ]
  hostnames: [ secure.example.com ]
  rules:
  - backendRefs: [ { name: secure, port: 9443 } ]
---
apiVersion: v1
kind: Service
metadata: { name: secure, namespace: ${TEAM} }
spec:
  ports: [ { name: grpcs, port: 9443 } ]
---
apiVersion: gateway.networking.k8s.io/v1
kind: BackendTLSPolicy
metadata: { name: secure-tls, namespace: ${TEAM} }
spec:
  targetRefs: [ { group: '', kind: Service, name: secure, sectionName: grpcs } ]
  validation:
    caCertificateRefs: [ { group: '', kind: ConfigMap, name: grpc-ca } ]
    hostname: secure.grpc.internal
---
apiVersion: v1
kind: ConfigMap
metadata: { name: grpc-ca, namespace: ${TEAM} }
data:
  ca.crt: |
${ca.cert.trim().split('\n').map((l) => `    ${l}`).join('\n')}
---
apiVersion: gateway.networking.k8s.io/v1beta1
kind: ReferenceGrant
metadata: { name: http-routes, namespace: ${BACKENDS} }
spec:
  from: [ { group: gateway.networking.k8s.io, kind: HTTPRoute, namespace: ${TEAM} } ]
  to: [ { group: '', kind: Service } ]
`;

const GRPC_GRANT = `
apiVersion: gateway.networking.k8s.io/v1beta1
kind: ReferenceGrant
metadata: { name: grpc-routes, namespace: ${BACKENDS} }
spec:
  from: [ { group: gateway.networking.k8s.io, kind: GRPCRoute, namespace: ${TEAM} } ]
  to: [ { group: '', kind: Service } ]
`;

interface RouteObject {
  status?: { parents?: { conditions: Condition[] }[] };
}
interface GatewayObject {
  status?: { listeners?: { name: string; supportedKinds: { group?: string; kind: string }[] }[] };
}
const cond = (r: RouteObject, type: string) => r.status?.parents?.[0]?.conditions.find((c) => c.type === type);

describe.skipIf(!availability.run)('GRPCRoute', () => {
  const cluster = useCluster({ tollgateCrds: false });
  const kubectl = (args: string[], input?: string) => run(cluster.current.tools.kubectl, args, { env: cluster.current.env, input });
  const dir = mkdtempSync(join(tmpdir(), 'tg-grpcroute-'));
  const routeWhen = (name: string, holds: (r: RouteObject) => boolean) => waitForObject<RouteObject>(cluster.current, 'grpcroutes', name, TEAM, holds);
  let controller: ControllerProcess;

  beforeAll(async () => {
    await installChart(cluster.current, [INFRA, TEAM, BACKENDS]);
    controller = await startAsChart(cluster.current, 'controller', ['--snapshot-tls-names=127.0.0.1']);
    await kubectl(['apply', '-f', '-'], BASE);
  }, 120_000);

  afterAll(async () => {
    await controller?.stop('SIGKILL');
  });

  it('an HTTP listener supports GRPCRoute; an attached GRPCRoute is Accepted and resolves', { timeout: 60_000 }, async () => {
    const gw = await waitForObject<GatewayObject>(cluster.current, 'gateways', 'gw', INFRA, (g) => (g.status?.listeners?.length ?? 0) === 2);
    const kinds = (name: string) => gw.status!.listeners!.find((l) => l.name === name)!.supportedKinds.map((k) => k.kind);
    expect(kinds('grpc')).toEqual(['HTTPRoute', 'GRPCRoute']);
    expect(kinds('http-only')).toEqual(['HTTPRoute']);
    const r = await routeWhen('echo', (x) => cond(x, 'Accepted')?.status === 'True' && cond(x, 'ResolvedRefs')?.status === 'True');
    expect(cond(r, 'Accepted')).toMatchObject({ reason: 'Accepted', message: 'attached to listener grpc' });
  });

  it('refuses a listener that allows HTTPRoutes only, and a listener without a hostname in common', { timeout: 60_000 }, async () => {
    const onHttpOnly = await routeWhen('http-only', (x) => cond(x, 'Accepted')?.status === 'False');
    expect(cond(onHttpOnly, 'Accepted')).toMatchObject({ reason: 'NotAllowedByListeners', message: `listener http-only of Gateway ${INFRA}/gw does not allow kind GRPCRoute (allowedRoutes.kinds)` });
    const otherHost = await routeWhen('other-host', (x) => cond(x, 'Accepted')?.status === 'False');
    expect(cond(otherHost, 'Accepted')?.reason).toBe('NoMatchingListenerHostname');
  });

  it('a Service of another namespace resolves only once a ReferenceGrant there allows GRPCRoutes', { timeout: 60_000 }, async () => {
    const r = await routeWhen('cross', (x) => cond(x, 'ResolvedRefs')?.reason === 'RefNotPermitted');
    expect(cond(r, 'ResolvedRefs')?.message).toBe(`spec.rules[0].backendRefs[0]: Service ${BACKENDS}/echo is in another namespace; a ReferenceGrant in ${BACKENDS} must allow GRPCRoutes of ${TEAM}`);
    await kubectl(['apply', '-f', '-'], GRPC_GRANT);
    await routeWhen('cross', (x) => cond(x, 'ResolvedRefs')?.status === 'True');
  });

  it("reaches a connected proxy as routes matching the method's path, with an h2c backend", { timeout: 60_000 }, async () => {
    const client = await connectStreamClient(cluster.current, controller, INFRA, 'gw', dir);
    try {
      const routeOf = (s: StreamedSnapshot) => s.binds.flatMap((b) => b.listeners.flatMap((l) => l.routes)).find((r) => r.origin.kind === 'GRPCRoute' && r.origin.name === 'echo');
      const s = await client.receive((x) => routeOf(x) !== undefined);
      const route = routeOf(s)!;
      expect(route.hostnames).toEqual(['grpc.example.com']);
      expect(route.matches[0]).toMatchObject({ path: { type: 'Exact', value: `/${SERVICE}/Echo` }, headers: [{ type: 'Exact', name: 'x-version', value: 'one' }] });
      expect(route.backends[0]).toMatchObject({ kind: 'service', service: 'echo', namespace: TEAM, port: 9000, protocol: 'h2c' });
    } finally {
      client.source.stop();
    }
  });

  it('a Service port under a BackendTLSPolicy resolves and reaches the proxy as HTTP/2 over TLS', { timeout: 60_000 }, async () => {
    await routeWhen('secure', (x) => cond(x, 'Accepted')?.status === 'True' && cond(x, 'ResolvedRefs')?.status === 'True');
    const client = await connectStreamClient(cluster.current, controller, INFRA, 'gw', dir);
    try {
      const routeOf = (s: StreamedSnapshot) => s.binds.flatMap((b) => b.listeners.flatMap((l) => l.routes)).find((r) => r.origin.kind === 'GRPCRoute' && r.origin.name === 'secure');
      const backendOf = (s: StreamedSnapshot) => routeOf(s)?.backends[0];
      // The policy may be seen a little after the route: wait for the backend with its TLS.
      const s = await client.receive((x) => { const b = backendOf(x); return b?.kind === 'service' && b.tls !== undefined; });
      const backend = backendOf(s);
      expect(backend).toMatchObject({ kind: 'service', service: 'secure', port: 9443, protocol: 'h2', tls: { hostname: 'secure.grpc.internal' } });
      expect(backend?.kind === 'service' && backend.tls?.caCertificates).toContain(ca.cert.split('\n')[1]);
    } finally {
      client.source.stop();
    }
  });
});
