// examples/grpcroute-kubernetes.yaml, read strictly and translated with its Services: the route
// is accepted and resolves, its rules reach the snapshot with their methods as paths, and
// every backend is h2c. With examples/gatewaypolicy-grpcroute.yaml beside it: the policy is
// accepted and attached, and every rule of the route carries it.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { translate } from '../src/translate/index.js';
import { caseOptions, CONTROLLER_NAME, parseResources } from './support.js';

const AROUND = `
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: { name: tollgate, generation: 1 }
spec: { controllerName: ${CONTROLLER_NAME} }
---
apiVersion: v1
kind: Service
metadata: { name: echo-v1, namespace: grpc }
spec: { ports: [ { port: 8080 } ] }
---
apiVersion: v1
kind: Service
metadata: { name: echo-v2, namespace: grpc }
spec: { ports: [ { port: 8080 } ] }
`;

describe('examples/grpcroute-kubernetes.yaml', () => {
  it('translates to accepted h2c routes matching the methods', () => {
    const example = readFileSync(fileURLToPath(new URL('../../../examples/grpcroute-kubernetes.yaml', import.meta.url)), 'utf8');
    const out = translate(parseResources(`${AROUND}---\n${example}`, 'grpcroute-kubernetes.yaml'), caseOptions(''));
    const status = out.status.grpcRoutes!.get('grpc/echo')!;
    expect(status.parents[0]!.conditions.map((c) => [c.type, c.status])).toEqual([
      ['Accepted', 'True'],
      ['ResolvedRefs', 'True'],
    ]);
    const routes = out.snapshots.get('grpc/grpc-gateway')!.binds[0]!.listeners[0]!.routes;
    expect(routes.map((r) => [r.origin.kind, r.matches[0]!.path])).toEqual([
      ['GRPCRoute', { type: 'PathPrefix', value: '/gateway_api_conformance.echo_basic.grpcecho.GrpcEcho' }],
      ['GRPCRoute', { type: 'Exact', value: '/gateway_api_conformance.echo_basic.grpcecho.GrpcEcho/Echo' }],
      ['GRPCRoute', { type: 'PathPrefix', value: '/gateway_api_conformance.echo_basic.grpcecho.GrpcEcho' }],
    ]);
    expect(routes.flatMap((r) => r.backends.map((b) => (b.kind === 'service' ? b.protocol : b.kind)))).toEqual(['h2c', 'h2c', 'h2c', 'h2c']);
  });

  it('with examples/gatewaypolicy-grpcroute.yaml: the policy is accepted and attached, and every rule carries its limits', () => {
    const read = (file: string) => readFileSync(fileURLToPath(new URL(`../../../examples/${file}`, import.meta.url)), 'utf8');
    const out = translate(parseResources(`${AROUND}---\n${read('grpcroute-kubernetes.yaml')}---\n${read('gatewaypolicy-grpcroute.yaml')}`, 'gatewaypolicy-grpcroute.yaml'), caseOptions(''));
    const status = out.status.gatewayPolicies.get('grpc/echo-calls')!;
    expect(status.ancestors.map((a) => [a.ancestorRef.name, ...a.conditions.map((c) => `${c.type}=${c.status}`)])).toEqual([['grpc-gateway', 'Accepted=True', 'Attached=True']]);
    const routes = out.snapshots.get('grpc/grpc-gateway')!.binds[0]!.listeners[0]!.routes;
    expect(routes.map((r) => r.policy?.localRateLimit?.map((l) => (l.kind === 'requests' ? l.requests : null)))).toEqual([
      [600, 60],
      [600, 60],
      [600, 60],
    ]);
  });
});
