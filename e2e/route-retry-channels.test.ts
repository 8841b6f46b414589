// An HTTPRoute rule's `retry` is in the experimental channel of Gateway API v1.6.1. On a real
// kube-apiserver with the chart's controller: with the standard CRDs kubectl refuses the field
// (its validation against the API server's schema) or, without validation, the API server drops
// it, and the route is served without retries; once the experimental CRDs are installed over them (as a user
// upgrades), the same route keeps its `retry` and the controller sends it to the proxies. The
// controller needs no flag for either.
import { existsSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startChartController, waitForObject, type ControllerProcess } from './controller-process.js';
import { applyCrds } from './lib/cluster.js';
import type { Condition } from './lib/conditions.js';
import { exec, run } from './lib/exec.js';
import { e2eAvailability, gatewayApiCrdDir } from './lib/tools.js';
import { useCluster } from './lib/use-cluster.js';

const experimental = gatewayApiCrdDir('experimental');
const tools = e2eAvailability();
const availability = { run: tools.run && existsSync(experimental) };
if (tools.run && !availability.run) {
  if (process.env.CI === 'true') throw new Error(`the Gateway API CRDs of the experimental channel are not installed: ${experimental} (run \`bash scripts/install-test-tools.sh\`)`);
  console.warn(`skipping: ${experimental} is missing (run \`bash scripts/install-test-tools.sh\`)`);
}

const APPS = 'apps';
const OURS = 'tollgate.dev/gateway-controller';
const GROUP = 'gateway.networking.k8s.io';
const RETRY = { codes: [503], attempts: 2, backoff: '100ms' };

type RouteCondition = Condition & { observedGeneration?: number };
interface Route {
  metadata: { generation: number };
  spec: { rules: { retry?: unknown }[] };
  status?: { parents?: { controllerName: string; conditions: RouteCondition[] }[] };
}
interface SnapshotsView {
  gateways: { gateway: string; snapshot: { binds: { listeners: { routes: { name: string; retry?: unknown }[] }[] }[] } }[];
}

const list = (...items: object[]) => JSON.stringify({ apiVersion: 'v1', kind: 'List', items });
const SETUP = list(
  { apiVersion: `${GROUP}/v1`, kind: 'Gateway', metadata: { name: 'gw', namespace: APPS }, spec: { gatewayClassName: 'tollgate', listeners: [{ name: 'http', protocol: 'HTTP', port: 80 }] } },
  { apiVersion: 'v1', kind: 'Service', metadata: { name: 'llm', namespace: APPS }, spec: { ports: [{ name: 'http', port: 8000, protocol: 'TCP' }] } },
);
const ROUTE = list({
  apiVersion: `${GROUP}/v1`,
  kind: 'HTTPRoute',
  metadata: { name: 'chat', namespace: APPS },
  spec: { parentRefs: [{ name: 'gw' }], rules: [{ matches: [{ path: { type: 'PathPrefix', value: '/v1' } }], retry: RETRY, backendRefs: [{ name: 'llm', port: 8000 }] }] },
});

describe.skipIf(!availability.run)('HTTPRoute retry with the standard and the experimental Gateway API CRDs', () => {
  const cluster = useCluster({ tollgateCrds: false });
  const kubectl = (args: string[], input?: string) => run(cluster.current.tools.kubectl, args, { env: cluster.current.env, input });
  let controller: ControllerProcess;

  beforeAll(async () => {
    controller = await startChartController(cluster.current);
    await kubectl(['create', 'namespace', APPS]);
    await kubectl(['apply', '-f', '-'], SETUP);
  }, 120_000);

  afterAll(async () => {
    await controller?.stop('SIGKILL');
  });

  /** The route once the controller has written its status for the route's current generation. */
  const settled = () =>
    waitForObject<Route>(cluster.current, 'httproute', 'chat', APPS, (r) => r.status?.parents?.find((p) => p.controllerName === OURS)?.conditions.some((c) => c.type === 'Accepted' && c.observedGeneration === r.metadata.generation) ?? false);

  async function snapshotRoute(): Promise<{ name: string; retry?: unknown } | undefined> {
    const view = (await (await fetch(`http://${controller.admin}/snapshots`)).json()) as SnapshotsView;
    return view.gateways.find((g) => g.gateway === `${APPS}/gw`)?.snapshot.binds.flatMap((b) => b.listeners.flatMap((l) => l.routes)).find((r) => r.name === `${APPS}/chat/rule/0`);
  }

  it('standard channel: kubectl refuses the field, the API server drops it without validation; the route is served without retries', async () => {
    const strict = await exec(cluster.current.tools.kubectl, ['apply', '-f', '-'], { env: cluster.current.env, input: ROUTE });
    expect(strict.code).not.toBe(0);
    expect(strict.stderr).toMatch(/unknown field "retry" in io\.k8s\.networking\.gateway\.v1\.HTTPRoute\.spec\.rules/);
    await kubectl(['apply', '--validate=false', '-f', '-'], ROUTE);
    const r = await settled();
    expect(r.spec.rules[0]!.retry).toBeUndefined();
    expect(r.status!.parents!.find((p) => p.controllerName === OURS)!.conditions.find((c) => c.type === 'Accepted')).toMatchObject({ status: 'True' });
    const route = await snapshotRoute();
    expect(route).toBeDefined();
    expect(route!.retry).toBeUndefined();
  });

  it('experimental channel installed over it: the route keeps its retry and the controller sends it to the proxies', async () => {
    await applyCrds(cluster.current, experimental);
    await kubectl(['apply', '-f', '-'], ROUTE);
    const r = await settled();
    expect(r.spec.rules[0]!.retry).toEqual(RETRY);
    const route = await snapshotRoute();
    expect(route!.retry).toEqual({ codes: [503], attempts: 2, backoffMs: 100 });
  });
});
