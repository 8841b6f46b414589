// The controller starting while the API server answers with transient errors, as it does right
// after CRDs are installed (`429 storage is (re)initializing`), while it restarts (500, 503) or
// while a connection drops: a fault-injecting proxy between the controller and the real
// kube-apiserver fails the first lists and watches of several kinds, the read of the Gateway API
// version and the first status write. Whatever retries that takes, the controller runs its first
// reconcile once every cache has synced and the GatewayClass that existed before it started gets
// Accepted and SupportedVersion True. Each planned fault is asserted to have happened.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ControllerProcess, serviceAccountKubeconfig, waitForObject } from './controller-process.js';
import { run } from './lib/exec.js';
import { faultProxyFor, type FaultProxy, type FaultRule } from './lib/fault-proxy.js';
import { REPO_ROOT, e2eAvailability } from './lib/tools.js';
import { useCluster } from './lib/use-cluster.js';
import type { Condition } from './lib/conditions.js';

const availability = e2eAvailability();
const CHART = join(REPO_ROOT, 'charts/tollgate');
const NS = 'tollgate-system';

interface GatewayClass {
  status?: { conditions?: Condition[] };
}
const condition = (gc: GatewayClass, type: string) => gc.status?.conditions?.find((c) => c.type === type);

describe.skipIf(!availability.run)('controller start-up through transient API errors', () => {
  const cluster = useCluster({ tollgateCrds: false });
  let proxy: FaultProxy;
  let controller: ControllerProcess | undefined;
  let kubeconfig: string;

  beforeAll(async () => {
    // The chart makes the GatewayClass before any controller runs.
    await run(cluster.current.tools.helm, ['install', 'tollgate', CHART, '-n', NS, '--create-namespace'], { env: cluster.current.env });
    const dir = mkdtempSync(join(tmpdir(), 'tg-faults-'));
    const direct = await serviceAccountKubeconfig(cluster.current, NS, 'tollgate-controller', join(dir, 'direct.kubeconfig'));
    proxy = await faultProxyFor(cluster.current);
    kubeconfig = proxy.kubeconfig(direct, join(dir, 'kubeconfig'));
  }, 120_000);

  afterAll(async () => {
    await controller?.stop('SIGKILL');
    await proxy?.close();
  });

  it('runs its first reconcile once every cache has synced, whatever retries that took', { timeout: 120_000 }, async () => {
    const storage = { kind: 'status', code: 429, message: 'storage is (re)initializing', retryAfterSeconds: 1 } as const;
    const rules: [string, FaultRule][] = [
      // The first list of GatewayClasses twice refused, its first watch failed then reset.
      ['list gatewayclasses 429', proxy.rule({ match: { verb: 'list', resource: 'gatewayclasses' }, fault: storage, times: 2 })],
      ['watch gatewayclasses 500', proxy.rule({ match: { verb: 'watch', resource: 'gatewayclasses' }, fault: { kind: 'status', code: 500 }, times: 1 })],
      ['watch gatewayclasses reset', proxy.rule({ match: { verb: 'watch', resource: 'gatewayclasses' }, fault: { kind: 'reset' }, times: 1 })],
      // Other kinds: a refused watch after a good list, a reset list, a watch cut after its headers.
      ['watch gateways 429', proxy.rule({ match: { verb: 'watch', resource: 'gateways' }, fault: storage, times: 1 })],
      ['list httproutes reset', proxy.rule({ match: { verb: 'list', resource: 'httproutes' }, fault: { kind: 'reset' }, times: 1 })],
      ['watch gatewaypolicies cut', proxy.rule({ match: { verb: 'watch', resource: 'gatewaypolicies' }, fault: { kind: 'reset', when: 'headers' }, times: 1 })],
      ['list services 503', proxy.rule({ match: { verb: 'list', resource: 'services' }, fault: { kind: 'status', code: 503 }, times: 1 })],
      ['watch namespaces 429', proxy.rule({ match: { verb: 'watch', resource: 'namespaces' }, fault: storage, times: 1 })],
      // The installed Gateway API version, read at start.
      ['get gatewayclass CRD 429', proxy.rule({ match: { verb: 'get', resource: 'customresourcedefinitions' }, fault: storage, times: 1 })],
      // The GatewayClass's first status write.
      ['update gatewayclass status 429', proxy.rule({ match: { verb: 'update', resource: 'gatewayclasses', subresource: 'status' }, fault: storage, times: 1 })],
    ];
    controller = await ControllerProcess.start('controller', cluster.current, kubeconfig);
    const gc = await waitForObject<GatewayClass>(
      cluster.current,
      'gatewayclasses.gateway.networking.k8s.io',
      'tollgate',
      undefined,
      (o) => condition(o, 'Accepted')?.status === 'True' && condition(o, 'SupportedVersion')?.status === 'True',
      90_000,
    );
    expect(condition(gc, 'Accepted')).toMatchObject({ status: 'True', reason: 'Accepted' });
    // The faults happened: each rule injected all it planned, and the controller saw them.
    for (const [name, rule] of rules) expect({ name, injected: rule.injected }).toEqual({ name, injected: rule.spec.times });
    expect(proxy.count({ verb: 'list', resource: 'gatewayclasses' }, 'status 429')).toBe(2);
    expect(proxy.count({ verb: 'update', resource: 'gatewayclasses', subresource: 'status' }, 'status 429')).toBe(1);
    // Polled: the proxy counts a write when its answer passes back, which can be after the
    // watch has shown the new status.
    await expect.poll(() => proxy.count({ verb: 'update', resource: 'gatewayclasses', subresource: 'status' }, 'passed')).toBeGreaterThanOrEqual(1);
    expect(await controller.metric('tollgate_controller_watch_restarts_total')).toBeGreaterThanOrEqual(7);
    // Every kind synced once, and translation ran only on the synced world: its first run
    // comes after the last kind's first list.
    await controller.synced();
    const lines = controller.lines;
    const lastSynced = lines.findLastIndex((l) => l.msg === 'cache synced');
    const firstReconcile = lines.findIndex((l) => l.msg === 'reconciled');
    expect(firstReconcile).toBeGreaterThan(lastSynced);
    expect(await controller.metric('tollgate_controller_reconciles_total', { result: 'success' })).toBeGreaterThan(0);
  });
});
