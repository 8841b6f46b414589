// Time from `kubectl apply` of a GatewayPolicy to its Accepted status, with the controller
// out of cluster on the chart's ServiceAccount (as e2e/controller.test.ts runs it), in a quiet
// cluster (one policy at a time) beside a Gateway with 100 HTTPRoutes. Printed, not asserted:
//   npx vitest run --config bench/vitest.config.ts controller-status
// Two figures per policy: from the start of `kubectl apply` (the user's view, which includes
// starting kubectl, about 100 ms here) and from its exit (the API server has stored the policy).
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { ControllerProcess, serviceAccountKubeconfig, waitForObject } from '../e2e/controller-process.js';
import { run } from '../e2e/lib/exec.js';
import { REPO_ROOT, e2eAvailability } from '../e2e/lib/tools.js';
import { useCluster } from '../e2e/lib/use-cluster.js';

const POLICIES = Number(process.env.BENCH_POLICIES ?? 30);
const ROUTES = Number(process.env.BENCH_ROUTES ?? 100);
const NS = 'bench';

interface Policy {
  status?: { ancestors?: { conditions: { type: string; status: string }[] }[] };
}

const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]!;

describe.runIf(e2eAvailability().run)('GatewayPolicy apply to Accepted', () => {
  const cluster = useCluster({ tollgateCrds: false });
  const kubectl = (args: string[], input?: string) => run(cluster.current.tools.kubectl, args, { env: cluster.current.env, input, timeoutMs: 300_000 });
  let controller: ControllerProcess;

  beforeAll(async () => {
    await run(cluster.current.tools.helm, ['install', 'tollgate', join(REPO_ROOT, 'charts/tollgate'), '-n', 'tollgate-system', '--create-namespace'], { env: cluster.current.env });
    await kubectl(['create', 'namespace', NS]);
    const kubeconfig = await serviceAccountKubeconfig(cluster.current, 'tollgate-system', 'tollgate-controller', join(mkdtempSync(join(tmpdir(), 'tg-bench-')), 'kubeconfig'));
    controller = await ControllerProcess.start('controller', cluster.current, kubeconfig, ['--log-level=info']);
    await controller.synced();
    const routes = Array.from({ length: ROUTES }, (_, i) => `apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: { name: r${i}, namespace: ${NS} }
spec:
  parentRefs: [ { name: gw } ]
  rules: [ { matches: [ { path: { type: PathPrefix, value: /r${i} } } ] } ]`);
    await kubectl(['apply', '--server-side', '-f', '-'], [`apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: { name: gw, namespace: ${NS} }
spec:
  gatewayClassName: tollgate
  listeners: [ { name: http, protocol: HTTP, port: 80 } ]`, ...routes].join('\n---\n'));
    await waitForObject<{ status?: { parents?: unknown[] } }>(cluster.current, 'httproute', `r${ROUTES - 1}`, NS, (r) => (r.status?.parents ?? []).length > 0, 120_000);
  });

  afterAll(async () => {
    await controller?.stop('SIGKILL');
  });

  it('prints p50 and p99', async () => {
    const fromStart: number[] = [];
    const fromStored: number[] = [];
    for (let i = 0; i < POLICIES; i++) {
      const name = `p${i}`;
      const accepted = waitForObject<Policy>(cluster.current, 'gatewaypolicies.tollgate.dev', name, NS, (p) =>
        (p.status?.ancestors ?? []).some((a) => a.conditions.some((c) => c.type === 'Accepted' && c.status === 'True')),
      );
      const t0 = performance.now();
      await kubectl(['apply', '-f', '-'], `apiVersion: tollgate.dev/v1alpha1
kind: GatewayPolicy
metadata: { name: ${name}, namespace: ${NS} }
spec:
  targetRefs: [ { group: gateway.networking.k8s.io, kind: HTTPRoute, name: r${i % ROUTES} } ]
  traffic: { rateLimit: { local: [ { requests: 100, unit: Minutes } ] } }`);
      const t1 = performance.now();
      await accepted;
      const t2 = performance.now();
      fromStart.push(t2 - t0);
      fromStored.push(t2 - t1);
    }
    const f = (xs: number[]) => `p50 ${pct(xs, 50).toFixed(0)} ms, p99 ${pct(xs, 99).toFixed(0)} ms, max ${Math.max(...xs).toFixed(0)} ms`;
    console.log(`GatewayPolicy apply -> Accepted (${POLICIES} policies, ${ROUTES} routes on the Gateway)`);
    console.log(`  from the start of kubectl apply: ${f(fromStart)}`);
    console.log(`  from kubectl apply's exit:       ${f(fromStored)}`);
    console.log(`  translations: ${await controller.metric('tollgate_controller_reconciles_total')}`);
  });
});
