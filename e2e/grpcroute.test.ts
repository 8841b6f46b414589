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
// - A GatewayPolicy targeting a GRPCRoute through every transition: target missing
//   (TargetNotFound on the route), created (the Gateway the ancestor, Accepted and Attached, the
//   policy in the proxy's route), edited (observedGeneration), given a field gRPC calls cannot
//   be given (Invalid, naming it), target deleted (TargetNotFound again).
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

// As JSON (kubectl reads it as it reads YAML): the GRPCRoute a policy targets, and the policy.
const LIMITED_ROUTE = JSON.stringify({
  apiVersion: 'gateway.networking.k8s.io/v1',
  kind: 'GRPCRoute',
  metadata: { name: 'limited', namespace: TEAM },
  spec: { parentRefs: [{ name: 'gw', namespace: INFRA, sectionName: 'grpc' }], hostnames: ['limited.example.com'], rules: [{ backendRefs: [{ name: 'echo', port: 9000 }] }] },
});

/** A policy of TEAM on the GRPCRoute "limited": `requests` an hour, and a directResponse when `direct`. */
const limitPolicy = (requests: number, direct = false) =>
  JSON.stringify({
    apiVersion: 'tollgate.dev/v1alpha1',
    kind: 'GatewayPolicy',
    metadata: { name: 'limited', namespace: TEAM },
    spec: {
      targetRefs: [{ group: 'gateway.networking.k8s.io', kind: 'GRPCRoute', name: 'limited' }],
      traffic: { rateLimit: { local: [{ requests, unit: 'Hours' }] }, ...(direct ? { directResponse: { status: 200 } } : {}) },
    },
  });

interface PolicyObject {
  metadata: { generation: number };
  status?: { ancestors?: { ancestorRef: { group?: string; kind: string; namespace?: string; name: string }; controllerName: string; conditions: (Condition & { observedGeneration?: number })[] }[] };
}

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

  describe('a GatewayPolicy targeting a GRPCRoute, through every transition', () => {
    const policyWhen = (holds: (p: PolicyObject) => boolean) => waitForObject<PolicyObject>(cluster.current, 'gatewaypolicies', 'limited', TEAM, holds);
    const only = (p: PolicyObject) => (p.status?.ancestors?.length === 1 ? p.status.ancestors[0]! : undefined);
    const condOf = (p: PolicyObject, type: string) => only(p)?.conditions.find((c) => c.type === type);
    const accepted = (p: PolicyObject) => condOf(p, 'Accepted');

    it('target missing: one entry on the GRPCRoute itself, Accepted False TargetNotFound', { timeout: 60_000 }, async () => {
      await kubectl(['apply', '-f', '-'], limitPolicy(2));
      const p = await policyWhen((x) => accepted(x)?.reason === 'TargetNotFound');
      expect(only(p)!.ancestorRef).toMatchObject({ group: 'gateway.networking.k8s.io', kind: 'GRPCRoute', namespace: TEAM, name: 'limited' });
      expect(accepted(p)).toMatchObject({ status: 'False', message: `GRPCRoute ${TEAM}/limited does not exist`, observedGeneration: 1 });
    });

    it("target created: the Gateway is the ancestor, Accepted and Attached, and the proxy's route carries the policy", { timeout: 60_000 }, async () => {
      await kubectl(['apply', '-f', '-'], LIMITED_ROUTE);
      const p = await policyWhen((x) => only(x)?.ancestorRef.kind === 'Gateway' && condOf(x, 'Attached')?.status === 'True');
      expect(only(p)!.ancestorRef).toMatchObject({ kind: 'Gateway', namespace: INFRA, name: 'gw' });
      expect(accepted(p)).toMatchObject({ status: 'True', reason: 'Accepted', observedGeneration: 1 });
      // The route's own status is a GRPCRoute's, whatever policy targets it.
      const r = await routeWhen('limited', (x) => cond(x, 'Accepted')?.status === 'True');
      expect(cond(r, 'ResolvedRefs')?.status).toBe('True');
      const client = await connectStreamClient(cluster.current, controller, INFRA, 'gw', dir);
      try {
        const routeOf = (s: StreamedSnapshot) => s.binds.flatMap((b) => b.listeners.flatMap((l) => l.routes)).find((x) => x.origin.kind === 'GRPCRoute' && x.origin.name === 'limited');
        const s = await client.receive((x) => routeOf(x)?.policy !== null && routeOf(x)?.policy !== undefined);
        expect(routeOf(s)!.policy!.origin).toMatchObject({ kind: 'GatewayPolicy', namespace: TEAM, name: 'limited', target: { kind: 'GRPCRoute', name: 'limited' } });
      } finally {
        client.source.stop();
      }
    });

    it('policy edited: observedGeneration follows', { timeout: 60_000 }, async () => {
      await kubectl(['apply', '-f', '-'], limitPolicy(3));
      const p = await policyWhen((x) => accepted(x)?.observedGeneration === 2);
      expect(p.metadata.generation).toBe(2);
      expect(accepted(p)).toMatchObject({ status: 'True', reason: 'Accepted' });
    });

    it('a directResponse, which a gRPC client does not read: Accepted False Invalid, naming the field', { timeout: 60_000 }, async () => {
      await kubectl(['apply', '-f', '-'], limitPolicy(3, true));
      const p = await policyWhen((x) => accepted(x)?.reason === 'Invalid');
      expect(only(p)!.ancestorRef).toMatchObject({ kind: 'Gateway', name: 'gw' });
      expect(accepted(p)).toMatchObject({ status: 'False', observedGeneration: 3 });
      expect(accepted(p)!.message).toMatch(/^spec\.traffic\.directResponse: .*spec\.targetRefs\[0\] is a GRPCRoute/);
      await kubectl(['apply', '-f', '-'], limitPolicy(3));
      await policyWhen((x) => accepted(x)?.status === 'True');
    });

    it('target deleted: back to one entry on the GRPCRoute, Accepted False TargetNotFound', { timeout: 60_000 }, async () => {
      await kubectl(['delete', 'grpcroute', 'limited', '-n', TEAM]);
      const p = await policyWhen((x) => accepted(x)?.reason === 'TargetNotFound');
      expect(only(p)!.ancestorRef).toMatchObject({ kind: 'GRPCRoute', namespace: TEAM, name: 'limited' });
      expect(accepted(p)).toMatchObject({ status: 'False', observedGeneration: 4 });
    });
  });
});
