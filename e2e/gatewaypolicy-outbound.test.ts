// Outbound targets of a tenant's GatewayPolicy on a real kube-apiserver, as a user meets them:
// the chart installed with helm, the controller binary with the chart ServiceAccount's token,
// objects applied with kubectl and status read back. A tenant names its rate limit service by
// backendRef only: a host is refused (Accepted False naming the field), as are a Service of
// another namespace without a ReferenceGrant, an ExternalName Service and a kind that is not a
// Service (RefNotPermitted for the missing grant, Invalid for the others); a granted one is
// accepted, its domain is sent as <namespace>/<domain>, and
// ServicesAvailable follows the Service's ready endpoints. Waits are on watch events.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startChartController, waitForObject, type ControllerProcess } from './controller-process.js';
import { policyCondition, type PolicyStatus } from './lib/conditions.js';
import { run } from './lib/exec.js';
import { e2eAvailability } from './lib/tools.js';
import { useCluster } from './lib/use-cluster.js';

const availability = e2eAvailability();
const INFRA = 'infra';
const TEAM = 'team';
const LIMITS = 'limits';



function service(name: string, namespace: string, port: number, spec = ''): string {
  return `---\napiVersion: v1\nkind: Service\nmetadata: { name: ${name}, namespace: ${namespace} }\nspec: { ${spec}ports: [ { name: p, port: ${port}, protocol: TCP } ] }\n`;
}

const BASE = `
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: { name: gw, namespace: ${INFRA} }
spec:
  gatewayClassName: tollgate
  listeners:
  - { name: http, protocol: HTTP, port: 80, allowedRoutes: { namespaces: { from: All } } }
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: { name: chat, namespace: ${TEAM} }
spec:
  parentRefs: [ { name: gw, namespace: ${INFRA} } ]
  rules:
  - backendRefs: [ { name: llm, port: 8000 } ]
${service('llm', TEAM, 8000)}${service('rls', LIMITS, 8081)}${service('alias', TEAM, 6379, 'type: ExternalName, externalName: redis.attacker.example, ')}`;

/** The tenant's policy on its route, with `target` as its rate limit service. */
const policy = (target: string) => `
apiVersion: tollgate.dev/v1alpha1
kind: GatewayPolicy
metadata: { name: per-user, namespace: ${TEAM} }
spec:
  targetRefs: [ { group: gateway.networking.k8s.io, kind: HTTPRoute, name: chat } ]
  traffic:
    rateLimit:
      global:
        service: ${target}
        domain: llm
        failureMode: FailClosed
        descriptors:
        - unit: Requests
          entries: [ { name: user, expression: 'request.headers["x-user"]' } ]
`;

const GRANT = `
apiVersion: gateway.networking.k8s.io/v1beta1
kind: ReferenceGrant
metadata: { name: rate-limits, namespace: ${LIMITS} }
spec:
  from: [ { group: tollgate.dev, kind: GatewayPolicy, namespace: ${TEAM} } ]
  to: [ { group: '', kind: Service, name: rls } ]
`;

const ENDPOINTS = `
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: rls-1
  namespace: ${LIMITS}
  labels: { kubernetes.io/service-name: rls }
addressType: IPv4
endpoints:
- addresses: [ 198.18.254.2 ]
  conditions: { ready: true }
ports: [ { name: p, port: 8081, protocol: TCP } ]
`;

describe.skipIf(!availability.run)("a tenant's GatewayPolicy and the outbound targets it names", () => {
  const cluster = useCluster({ tollgateCrds: false });
  const kubectl = (args: string[], input?: string) => run(cluster.current.tools.kubectl, args, { env: cluster.current.env, input });
  const apply = (yaml: string) => kubectl(['apply', '-f', '-'], yaml);
  /** The policy once `holds` is true of its status (watched, not polled). */
  const policyWhen = (holds: (p: PolicyStatus) => boolean) => waitForObject<PolicyStatus>(cluster.current, 'gatewaypolicies.tollgate.dev', 'per-user', TEAM, holds);
  let controller: ControllerProcess;

  beforeAll(async () => {
    controller = await startChartController(cluster.current);
    for (const ns of [INFRA, TEAM, LIMITS]) await kubectl(['create', 'namespace', ns]);
    await apply(BASE);
  }, 120_000);

  afterAll(async () => {
    await controller?.stop('SIGKILL');
  });

  it('a host is refused in a cluster: Accepted False, naming the field and backendRef', async () => {
    await apply(policy('{ host: "redis.internal.example.com:6379" }'));
    const p = await policyWhen((x) => policyCondition(x, 'Accepted')?.status === 'False');
    expect(policyCondition(p, 'Accepted')).toMatchObject({ reason: 'Invalid' });
    expect(policyCondition(p, 'Accepted')?.message).toMatch(/^spec\.traffic\.rateLimit\.global\.service\.host: a GatewayPolicy cannot name a host: .*backendRef/);
    expect(policyCondition(p, 'Attached')).toMatchObject({ status: 'False', reason: 'Pending' });
    expect(policyCondition(p, 'ServicesAvailable')).toBeUndefined();
  });

  it.each([
    ['an ExternalName Service', '{ backendRef: { name: alias, port: 6379 } }', /^spec\.traffic\.rateLimit\.global\.service\.backendRef: Service team\/alias is of type ExternalName/, 'Invalid'],
    ['a kind that is not a Service', '{ backendRef: { group: tollgate.dev, kind: Backend, name: rls, port: 8081 } }', /^spec\.traffic\.rateLimit\.global\.service\.backendRef\.kind: tollgate\.dev\/Backend is not a supported kind/, 'Invalid'],
    [
      'a Service of another namespace without a ReferenceGrant',
      `{ backendRef: { name: rls, namespace: ${LIMITS}, port: 8081 } }`,
      /^spec\.traffic\.rateLimit\.global\.service\.backendRef: Service limits\/rls is in another namespace; a ReferenceGrant in limits must allow GatewayPolicies of team/,
      'RefNotPermitted',
    ],
  ])('%s is refused, naming the field', async (_what, service, message, reason) => {
    await apply(policy(service));
    const p = await policyWhen((x) => message.test(policyCondition(x, 'Accepted')?.message ?? ''));
    expect(policyCondition(p, 'Accepted')).toMatchObject({ status: 'False', reason });
  });

  it('granted: Accepted and Attached, the domain prefixed with the namespace; ServicesAvailable follows the ready endpoints', async () => {
    await apply(GRANT);
    let p = await policyWhen((x) => policyCondition(x, 'Accepted')?.status === 'True' && policyCondition(x, 'ServicesAvailable') !== undefined);
    expect(policyCondition(p, 'Attached')).toMatchObject({ status: 'True', reason: 'Attached' });
    expect(policyCondition(p, 'ServicesAvailable')).toMatchObject({
      status: 'False',
      reason: 'NoReadyEndpoints',
      message:
        "Service limits/rls (the rate limit service) has no ready endpoints: requests of HTTPRoute team/chat are refused (500, failureMode FailClosed) until it has; other routes and the readiness of the Gateway's proxies are not affected",
    });

    // What the Gateway's proxies get: the Service's cluster name and the namespaced domain.
    const view = (await (await fetch(`http://${controller.admin}/snapshots`)).json()) as { gateways: { gateway: string; snapshot: { binds: { listeners: { routes: { policy: { remoteRateLimit: unknown } | null }[] }[] }[] } }[] };
    const route = view.gateways.find((g) => g.gateway === `${INFRA}/gw`)!.snapshot.binds[0]!.listeners[0]!.routes[0]!;
    expect(route.policy?.remoteRateLimit).toMatchObject({ service: `rls.${LIMITS}.svc.cluster.local:8081`, domain: `${TEAM}/llm`, failureMode: 'FailClosed' });

    await apply(ENDPOINTS);
    p = await policyWhen((x) => policyCondition(x, 'ServicesAvailable')?.status === 'True');
    expect(policyCondition(p, 'ServicesAvailable')).toMatchObject({ reason: 'Available', message: 'Service limits/rls (the rate limit service) has 1 ready endpoint' });

    // Withdrawing the grant withdraws the acceptance.
    await kubectl(['delete', 'referencegrant', 'rate-limits', '-n', LIMITS]);
    p = await policyWhen((x) => policyCondition(x, 'Accepted')?.status === 'False');
    expect(policyCondition(p, 'Accepted')?.message).toMatch(/a ReferenceGrant in limits must allow GatewayPolicies of team/);
    expect(policyCondition(p, 'ServicesAvailable')).toBeUndefined();
  });
});
