// A tenant's expressions past their bounds, on a real kube-apiserver with the controller as a
// user runs it (chart installed with helm, the controller out of cluster with the chart
// ServiceAccount's token): an HTTPRoute whose regular expression RE2 would write out to a
// huge program is Accepted False (UnsupportedValue) naming the match and the bound; a
// GatewayPolicy whose descriptor is a nested comprehension is Accepted False (Invalid) naming
// the expression and its estimate; the other tenant's route and policy on the same Gateway are
// accepted and in the Gateway's snapshot. Waits are on watch events, never on sleeps.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ControllerProcess, serviceAccountKubeconfig, waitForObject } from './controller-process.js';
import { run } from './lib/exec.js';
import { REPO_ROOT, e2eAvailability } from './lib/tools.js';
import { useCluster } from './lib/use-cluster.js';

const availability = e2eAvailability();
const CHART = join(REPO_ROOT, 'charts/tollgate');
const NS = 'tollgate-system';
const INFRA = 'infra';
const TENANT = 'tenant-a';
const OTHER = 'tenant-b';
const OURS = 'tollgate.dev/gateway-controller';
const GROUP = 'gateway.networking.k8s.io';

interface Condition {
  type: string;
  status: string;
  reason: string;
  message: string;
}
interface RouteStatus {
  status?: { parents?: { controllerName: string; conditions: Condition[] }[] };
}
interface PolicyStatus {
  status?: { ancestors?: { controllerName: string; conditions: Condition[] }[] };
}

const accepted = (conditions: Condition[] | undefined) => conditions?.find((c) => c.type === 'Accepted');
const routeAccepted = (r: RouteStatus) => accepted(r.status?.parents?.find((p) => p.controllerName === OURS)?.conditions);
const policyAccepted = (p: PolicyStatus) => accepted(p.status?.ancestors?.find((a) => a.controllerName === OURS)?.conditions);

const HUGE = `/v1/${'(?:.?){1000}'.repeat(80)}`;
const NESTED =
  'request.headers.all(a, request.headers.all(b, request.headers.all(c, request.headers.exists(d, a + b + c + d == request.path + request.host + llm.model && a.contains(b) && c.startsWith(d)))))';

const backend = (ns: string) => `
apiVersion: v1
kind: Service
metadata: { name: llm, namespace: ${ns} }
spec:
  ports: [ { name: http, port: 8000, protocol: TCP } ]
---
apiVersion: v1
kind: Service
metadata: { name: rls, namespace: ${ns} }
spec:
  ports: [ { name: grpc, port: 8081, protocol: TCP } ]
`;

const route = (ns: string, name: string, match: string) => `
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: { name: ${name}, namespace: ${ns} }
spec:
  parentRefs: [ { name: shared, namespace: ${INFRA} } ]
  rules:
  - matches: [ ${match} ]
    backendRefs: [ { name: llm, port: 8000 } ]
`;

const policy = (ns: string, name: string, target: string, expression: string) => `
apiVersion: tollgate.dev/v1alpha1
kind: GatewayPolicy
metadata: { name: ${name}, namespace: ${ns} }
spec:
  targetRefs: [ { group: ${GROUP}, kind: HTTPRoute, name: ${target} } ]
  traffic:
    rateLimit:
      global:
        service: { backendRef: { name: rls, port: 8081 } }
        domain: ${ns}
        descriptors:
        - unit: Requests
          entries: [ { name: key, expression: ${JSON.stringify(expression)} } ]
`;

describe.skipIf(!availability.run)('expressions past their bounds, on kube-apiserver', () => {
  const cluster = useCluster({ tollgateCrds: false });
  const kubectl = (args: string[], input?: string) => run(cluster.current.tools.kubectl, args, { env: cluster.current.env, input });
  const apply = (yaml: string) => kubectl(['apply', '-f', '-'], yaml);
  let controller: ControllerProcess;

  beforeAll(async () => {
    await run(cluster.current.tools.helm, ['install', 'tollgate', CHART, '-n', NS, '--create-namespace'], { env: cluster.current.env });
    for (const ns of [INFRA, TENANT, OTHER]) await kubectl(['create', 'namespace', ns]);
    const kubeconfig = await serviceAccountKubeconfig(cluster.current, NS, 'tollgate-controller', join(mkdtempSync(join(tmpdir(), 'tg-ctl-')), 'kubeconfig'));
    controller = await ControllerProcess.start('controller', cluster.current, kubeconfig);
    await controller.synced();
    await apply(`
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: { name: shared, namespace: ${INFRA} }
spec:
  gatewayClassName: tollgate
  listeners:
  - { name: http, protocol: HTTP, port: 80, allowedRoutes: { namespaces: { from: All } } }
`);
  }, 120_000);

  afterAll(async () => {
    await controller?.stop('SIGKILL');
  });

  it('refuses the tenant’s huge regex and over-budget descriptor, naming them; the other tenant is served', async () => {
    await apply(backend(TENANT) + backend(OTHER));
    await apply(route(TENANT, 'huge', `{ path: { type: RegularExpression, value: '${HUGE}' } }`));
    await apply(route(TENANT, 'plain', '{ path: { type: PathPrefix, value: /a } }'));
    await apply(policy(TENANT, 'nested', 'plain', NESTED));
    await apply(route(OTHER, 'models', "{ path: { type: RegularExpression, value: '/v1/models/[^/]+' } }"));
    await apply(policy(OTHER, 'per-user', 'models', 'request.headers["x-user-id"]'));

    const huge = await waitForObject<RouteStatus>(cluster.current, 'httproute', 'huge', TENANT, (r) => routeAccepted(r) !== undefined);
    expect(routeAccepted(huge)).toMatchObject({ status: 'False', reason: 'UnsupportedValue' });
    expect(routeAccepted(huge)!.message).toMatch(
      /^spec\.rules\[0\]\.matches\[0\]\.path\.value: got "\/v1\/\(\?:\.\?\)\{1000\}.*: with its repetitions written out the pattern is up to \d+ instructions, more than the 2000 allowed before compiling \(10 × regex\.maxProgramSize 200\)/,
    );
    const nested = await waitForObject<PolicyStatus>(cluster.current, 'gatewaypolicies.tollgate.dev', 'nested', TENANT, (p) => policyAccepted(p) !== undefined);
    expect(policyAccepted(nested)).toMatchObject({ status: 'False', reason: 'Invalid' });
    expect(policyAccepted(nested)!.message).toMatch(
      /^spec\.traffic\.rateLimit\.global\.descriptors\[0\]\.entries\[0\]\.expression: got "request\.headers\.all\(.*: its estimated cost is \d+, more than the budget of 10000 \(cel\.maxCost\)/,
    );

    const models = await waitForObject<RouteStatus>(cluster.current, 'httproute', 'models', OTHER, (r) => routeAccepted(r)?.status === 'True');
    expect(routeAccepted(models)).toMatchObject({ status: 'True', reason: 'Accepted' });
    const perUser = await waitForObject<PolicyStatus>(cluster.current, 'gatewaypolicies.tollgate.dev', 'per-user', OTHER, (p) => policyAccepted(p)?.status === 'True');
    expect(policyAccepted(perUser)).toMatchObject({ status: 'True' });

    // The Gateway's snapshot serves the other tenant's route and policy, and the tenant's
    // plain route without the refused policy; the refused route is not in it.
    const view = (await (await fetch(`http://${controller.admin}/snapshots`)).json()) as {
      gateways: { gateway: string; snapshot: { binds: { listeners: { routes: { name: string; policy: unknown }[] }[] }[] } }[];
    };
    const routes = view.gateways.find((g) => g.gateway === `${INFRA}/shared`)!.snapshot.binds.flatMap((b) => b.listeners.flatMap((l) => l.routes));
    expect(routes.map((r) => r.name).sort()).toEqual([`${TENANT}/plain/rule/0`, `${OTHER}/models/rule/0`]);
    expect(routes.find((r) => r.name === `${OTHER}/models/rule/0`)!.policy).not.toBeNull();
    expect(routes.find((r) => r.name === `${TENANT}/plain/rule/0`)!.policy).toBeNull();
  }, 120_000);
});
