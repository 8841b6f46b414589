// Leader election between controller replicas on a real kube-apiserver: every replica
// watches and translates, only the holder of the Lease writes status; a leader stopped with
// SIGTERM releases the Lease and a follower takes over at once; a leader killed outright is
// replaced once its Lease expires, never before; helm uninstall deletes the Lease (the chart
// owns it), so the controller of the next install does not wait for the last one's.
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
const LEASE_MS = 4000;
const ELECTION = ['--leader-elect', `--leader-elect-lease-duration=${LEASE_MS}ms`, '--leader-elect-renew-deadline=3s', '--leader-elect-retry-period=500ms'];

interface Lease {
  spec: { holderIdentity?: string; acquireTime?: string; renewTime?: string; leaseTransitions?: number };
}
interface Policy {
  status?: { ancestors?: { controllerName: string; conditions: { type: string; observedGeneration?: number }[] }[] };
}

const policy = (tokens: number) => `
apiVersion: tollgate.dev/v1alpha1
kind: GatewayPolicy
metadata: { name: budget, namespace: ${APPS} }
spec:
  targetRefs: [ { group: gateway.networking.k8s.io, kind: Gateway, name: gw } ]
  traffic: { rateLimit: { local: [ { requests: ${tokens}, unit: Minutes } ] } }
`;

const GATEWAY = `
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: { name: gw, namespace: ${APPS} }
spec:
  gatewayClassName: tollgate
  listeners: [ { name: http, protocol: HTTP, port: 80 } ]
`;

describe.skipIf(!availability.run)('controller leader election on kube-apiserver', () => {
  const cluster = useCluster({ tollgateCrds: false });
  const kubectl = (args: string[], input?: string) => run(cluster.current.tools.kubectl, args, { env: cluster.current.env, input });
  const replicas: ControllerProcess[] = [];
  let kubeconfig: string;
  const start = async (name: string) => {
    const p = await ControllerProcess.start(name, cluster.current, kubeconfig, [...ELECTION, `--namespace=${NS}`], { POD_NAME: name });
    replicas.push(p);
    await p.synced();
    return p;
  };
  const writes = (p: ControllerProcess) => p.metric('tollgate_controller_status_writes_total');
  const accepted = (generation: number) =>
    waitForObject<Policy>(cluster.current, 'gatewaypolicies.tollgate.dev', 'budget', APPS, (p) =>
      (p.status?.ancestors ?? []).some((a) => a.controllerName === OURS && a.conditions.some((c) => c.type === 'Accepted' && c.observedGeneration === generation)),
    );
  const lease = async () => JSON.parse(await kubectl(['get', 'lease', 'tollgate-controller', '-n', NS, '-o', 'json'])) as Lease;

  beforeAll(async () => {
    await run(cluster.current.tools.helm, ['install', 'tollgate', CHART, '-n', NS, '--create-namespace', '--set', 'controller.replicas=2'], { env: cluster.current.env });
    await kubectl(['create', 'namespace', APPS]);
    kubeconfig = await serviceAccountKubeconfig(cluster.current, NS, 'tollgate-controller', join(mkdtempSync(join(tmpdir(), 'tg-ctl-')), 'kubeconfig'));
    await kubectl(['apply', '-f', '-'], GATEWAY);
  }, 120_000);

  afterAll(async () => {
    await Promise.all(replicas.map((r) => r.stop('SIGKILL')));
  });

  let a: ControllerProcess;
  let b: ControllerProcess;

  it('one replica leads; only its status-write counter moves', async () => {
    a = await start('replica-a');
    await a.waitForLog((l) => l.msg === 'became leader');
    b = await start('replica-b');
    await kubectl(['apply', '-f', '-'], policy(10));
    await accepted(1);
    await kubectl(['apply', '-f', '-'], policy(20));
    await accepted(2);
    // b translated the same changes (its reconcile counter moved) but wrote nothing.
    expect(await b.metric('tollgate_controller_reconciles_total', { result: 'success' })).toBeGreaterThan(0);
    expect(await writes(a)).toBeGreaterThan(0);
    expect(await writes(b)).toBe(0);
    expect(await a.metric('tollgate_controller_leader')).toBe(1);
    expect(await b.metric('tollgate_controller_leader')).toBe(0);
    expect((await lease()).spec.holderIdentity).toBe('replica-a');
  }, 120_000);

  it('a leader stopped with SIGTERM releases the Lease; the follower takes over without waiting for expiry', async () => {
    let released = false;
    // The watch must be running (it has seen replica-a hold the Lease) before the leader stops,
    // or a quick release and takeover could both happen before its first listing.
    let watching!: () => void;
    const watchRunning = new Promise<void>((resolve) => (watching = resolve));
    const handedOver = waitForObject<Lease>(cluster.current, 'lease', 'tollgate-controller', NS, (l) => {
      if (l.spec.holderIdentity === 'replica-a') watching();
      if (l.spec.holderIdentity === '' || l.spec.holderIdentity === undefined) released = true;
      return l.spec.holderIdentity === 'replica-b';
    });
    await watchRunning;
    const [code] = await a.stop('SIGTERM');
    expect(code).toBe(0);
    const l = await handedOver;
    expect(released).toBe(true);
    expect(l.spec.leaseTransitions).toBeGreaterThanOrEqual(1);
    await b.waitForLog((x) => x.msg === 'became leader');
    const before = await writes(b);
    await kubectl(['apply', '-f', '-'], policy(30));
    await accepted(3);
    expect(await writes(b)).toBeGreaterThan(before);
  }, 120_000);

  it('a leader killed outright is replaced when its Lease expires, never before', async () => {
    const c = await start('replica-c');
    expect(await writes(c)).toBe(0);
    const last = await lease();
    // The leader's last renewal is the last record it wrote before dying; read it from the watch.
    let lastRenew = Date.parse(last.spec.renewTime!);
    const renewals = waitForObject<Lease>(cluster.current, 'lease', 'tollgate-controller', NS, (l) => {
      if (l.spec.holderIdentity === 'replica-b') lastRenew = Math.max(lastRenew, Date.parse(l.spec.renewTime!));
      return l.spec.holderIdentity === 'replica-c';
    }, 60_000);
    await b.stop('SIGKILL');
    const l = await renewals;
    const handover = Date.parse(l.spec.acquireTime!) - lastRenew;
    console.log(`leader killed: replica-c took over ${handover} ms after replica-b's last renewal (lease ${LEASE_MS} ms)`);
    // Safety: nobody acts as leader while the dead leader's Lease is still valid.
    expect(handover).toBeGreaterThanOrEqual(LEASE_MS);
    await c.waitForLog((x) => x.msg === 'became leader');
    await kubectl(['apply', '-f', '-'], policy(40));
    await accepted(4);
    expect(await writes(c)).toBeGreaterThan(0);
  }, 120_000);

  it('helm uninstall removes the Lease; the controller of the next install leads at its first attempt', async () => {
    const c = replicas.at(-1)!;
    expect((await lease()).spec.holderIdentity).toBe(c.name);
    // Uninstall deletes the RBAC before the controller pod is told to stop: its release on
    // SIGTERM cannot succeed, so the Lease must go with the release.
    await run(cluster.current.tools.helm, ['uninstall', 'tollgate', '-n', NS], { env: cluster.current.env });
    const left = await cluster.current.kubectl(['get', 'lease', 'tollgate-controller', '-n', NS]);
    expect(left.code, `Lease left behind: ${left.stdout}`).not.toBe(0);
    expect(left.stderr).toContain('NotFound');
    const [code] = await c.stop('SIGTERM');
    expect(code).toBe(0);
    expect(await kubectl(['get', 'leases', '-n', NS, '-o', 'name'])).toBe('');

    await run(cluster.current.tools.helm, ['install', 'tollgate', CHART, '-n', NS], { env: cluster.current.env });
    // Fresh from the chart: nobody holds it.
    expect((await lease()).spec.holderIdentity ?? '').toBe('');
    // The ServiceAccount is new: a new token. A lease duration far beyond this test's timeout:
    // a controller that waited for a previous holder's Lease to expire would never lead here.
    kubeconfig = await serviceAccountKubeconfig(cluster.current, NS, 'tollgate-controller', join(mkdtempSync(join(tmpdir(), 'tg-ctl-')), 'kubeconfig'));
    const d = await ControllerProcess.start('replica-d', cluster.current, kubeconfig, ['--leader-elect', '--leader-elect-lease-duration=10m', `--namespace=${NS}`], { POD_NAME: 'replica-d' });
    replicas.push(d);
    await d.waitForLog((x) => x.msg === 'became leader');
    expect((await lease()).spec.holderIdentity).toBe('replica-d');
    await kubectl(['apply', '-f', '-'], policy(50));
    await accepted(5);
    expect(await writes(d)).toBeGreaterThan(0);
  }, 120_000);
});
