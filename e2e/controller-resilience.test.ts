// The controller under load and faults on a real kube-apiserver: a burst of 1,000 applies is
// coalesced into few translations; the API server restarting is survived (the
// watches come back, the next change gets its status); an object it cannot read is skipped
// and reported once while everything else goes on.
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
const APPS = 'apps';
const OURS = 'tollgate.dev/gateway-controller';
const BURST = 1000;

interface Condition {
  type: string;
  status: string;
  reason: string;
  observedGeneration?: number;
}
interface Policy {
  status?: { ancestors?: { controllerName: string; conditions: Condition[] }[] };
}

const accepted = (p: Policy, generation?: number) =>
  (p.status?.ancestors ?? []).some((a) => a.controllerName === OURS && a.conditions.some((c) => c.type === 'Accepted' && (generation === undefined || c.observedGeneration === generation)));

const policy = (name: string, tokens: number) => `
apiVersion: tollgate.dev/v1alpha1
kind: GatewayPolicy
metadata: { name: ${name}, namespace: ${APPS} }
spec:
  targetRefs: [ { group: gateway.networking.k8s.io, kind: HTTPRoute, name: chat } ]
  traffic: { rateLimit: { local: [ { tokens: ${tokens}, unit: Minutes } ] } }
`;

const BASE = `
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: { name: gw, namespace: ${APPS} }
spec:
  gatewayClassName: tollgate
  listeners: [ { name: http, protocol: HTTP, port: 80 } ]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: { name: chat, namespace: ${APPS} }
spec:
  parentRefs: [ { name: gw } ]
  rules: [ { matches: [ { path: { type: PathPrefix, value: /v1 } } ] } ]
`;

describe.skipIf(!availability.run)('controller resilience on kube-apiserver', () => {
  const cluster = useCluster({ tollgateCrds: false });
  const kubectl = (args: string[], input?: string) => run(cluster.current.tools.kubectl, args, { env: cluster.current.env, input, timeoutMs: 300_000 });
  let controller: ControllerProcess;

  beforeAll(async () => {
    await run(cluster.current.tools.helm, ['install', 'tollgate', CHART, '-n', NS, '--create-namespace'], { env: cluster.current.env });
    await kubectl(['create', 'namespace', APPS]);
    const kubeconfig = await serviceAccountKubeconfig(cluster.current, NS, 'tollgate-controller', join(mkdtempSync(join(tmpdir(), 'tg-ctl-')), 'kubeconfig'));
    controller = await ControllerProcess.start('controller', cluster.current, kubeconfig);
    await controller.synced();
    await kubectl(['apply', '-f', '-'], `${BASE}---${policy('budget', 100)}`);
    await waitForObject<Policy>(cluster.current, 'gatewaypolicies.tollgate.dev', 'budget', APPS, (p) => accepted(p));
  }, 180_000);

  afterAll(async () => {
    await controller?.stop('SIGKILL');
  });

  // The cool-down after each run (as long as the run took, within bounds) is the queue's, tested
  // on a controlled clock in packages/controller/test/debounced-queue.test.ts; here, the effect
  // on a real API server: fewer translations than applies, and every route's status written.
  it(`coalesces a burst of ${BURST} applies into fewer translations, and every route gets its status`, async () => {
    const routes = Array.from({ length: BURST }, (_, i) => `apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: { name: burst-${i}, namespace: ${APPS}, labels: { burst: "true" } }
spec:
  parentRefs: [ { name: gw } ]
  rules: [ { matches: [ { path: { type: PathPrefix, value: /b${i} } } ] } ]`).join('\n---\n');
    const before = await controller.metric('tollgate_controller_reconciles_total');
    const from = controller.lines.length;
    const t0 = performance.now();
    // Server-side apply, as GitOps tools do: one request per object.
    await kubectl(['apply', '--server-side', '-f', '-'], routes);
    const applied = performance.now() - t0;
    // The translation that saw every route; the runs are synchronous, so nothing is pending after it.
    await controller.waitForLog((l) => l.msg === 'reconciled' && (l.objects as Record<string, number>).httpRoutes === BURST + 1, 120_000, from);
    const runs = (await controller.metric('tollgate_controller_reconciles_total')) - before;
    console.log(`${BURST} HTTPRoutes applied in ${Math.round(applied)} ms: ${runs} translations`);
    expect(runs).toBeGreaterThanOrEqual(1);
    // Coalesced: fewer translations than applies.
    expect(runs).toBeLessThan(BURST);
    // Every route gets its status (the status writer works through all of them).
    await waitForObject<{ status?: { parents?: { controllerName: string }[] } }>(cluster.current, 'httproute', `burst-${BURST - 1}`, APPS, (r) => (r.status?.parents ?? []).some((p) => p.controllerName === OURS), 120_000);
    await kubectl(['delete', 'httproute', '-n', APPS, '-l', 'burst=true', '--wait=false']);
  }, 300_000);

  it('survives an API server restart: watches come back and the next change gets its status', async () => {
    const restartsBefore = await controller.metric('tollgate_controller_watch_restarts_total');
    const from = controller.lines.length;
    await cluster.current.restartApiServer();
    // Every kind's watch noticed and came back (one line each, not one per retry).
    const kinds = ['GatewayClass', 'Gateway', 'HTTPRoute', 'ReferenceGrant', 'GatewayPolicy', 'Service', 'EndpointSlice', 'Namespace'];
    await Promise.all(kinds.map((k) => controller.waitForLog((l) => l.msg === 'watch re-established' && l.kind === k, 120_000, from)));
    expect(await controller.metric('tollgate_controller_watch_restarts_total')).toBeGreaterThan(restartsBefore);
    expect(controller.child.exitCode).toBeNull();
    expect((await fetch(`http://${controller.health}/readyz`)).status).toBe(200);
    await kubectl(['apply', '-f', '-'], policy('budget', 200));
    await waitForObject<Policy>(cluster.current, 'gatewaypolicies.tollgate.dev', 'budget', APPS, (p) => accepted(p, 2));
  }, 240_000);

  it('skips an object it cannot read, reports it once, and keeps translating the rest', async () => {
    // A GatewayPolicy stored while its CRD had no schema (a downgrade, a hand-edited CRD):
    // the API server accepts anything, the controller cannot use it.
    const crd = JSON.parse(await kubectl(['get', 'crd', 'gatewaypolicies.tollgate.dev', '-o', 'json'])) as {
      spec: { versions: { schema: { openAPIV3Schema: Record<string, unknown> } }[] };
      metadata: Record<string, unknown>;
      status?: unknown;
    };
    const loose = structuredClone(crd);
    delete loose.status;
    loose.metadata = { name: 'gatewaypolicies.tollgate.dev' };
    loose.spec.versions[0]!.schema.openAPIV3Schema = { type: 'object', 'x-kubernetes-preserve-unknown-fields': true };
    await kubectl(['replace', '-f', '-'], JSON.stringify(loose));
    const from = controller.lines.length;
    const bad = { apiVersion: 'tollgate.dev/v1alpha1', kind: 'GatewayPolicy', metadata: { name: 'unreadable', namespace: APPS }, spec: { targetRefs: 'chat' } };
    // The CRD change takes a moment to be served; retry the create until it is accepted.
    await waitForCreate(() => kubectl(['create', '-f', '-'], JSON.stringify(bad)));
    const line = await controller.waitForLog((l) => l.msg?.startsWith('skipping GatewayPolicy') === true && l.name === 'unreadable', 60_000, from);
    expect(line.reason).toBe('spec.targetRefs is not a list');
    // The other policy still gets its status on the next change.
    await kubectl(['apply', '-f', '-'], policy('budget', 300));
    await waitForObject<Policy>(cluster.current, 'gatewaypolicies.tollgate.dev', 'budget', APPS, (p) => accepted(p, 3));
    expect(controller.lines.slice(from).filter((l) => l.msg?.startsWith('skipping GatewayPolicy') === true && l.name === 'unreadable')).toHaveLength(1);
    const events = JSON.parse(await kubectl(['get', 'events.events.k8s.io', '-n', APPS, '--field-selector', 'reason=Unreadable', '-o', 'json'])) as { items: { regarding: { name: string }; note: string }[] };
    expect(events.items.map((e) => e.regarding.name)).toContain('unreadable');
    expect(controller.child.exitCode).toBeNull();
    await kubectl(['delete', 'gwpol', 'unreadable', '-n', APPS]);
    await kubectl(['apply', '--server-side', '--force-conflicts', '-f', join(REPO_ROOT, 'crds')]);
  }, 180_000);
});

/** A create refused while the API server still serves the previous CRD schema is retried. */
async function waitForCreate(create: () => Promise<string>): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await create();
      return;
    } catch (err) {
      // Each attempt is a kubectl run: the refusal itself paces the loop.
      if (attempt >= 100 || !/spec\.targetRefs/.test(String(err))) throw err;
    }
  }
}
