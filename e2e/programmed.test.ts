// Gateway Programmed from the proxy pods, on a real kube-apiserver: the chart installed, the
// controller out of cluster with the chart ServiceAccount's token (so the pod list and watch
// the chart grants are what is used). No kubelet runs here: a proxy pod is created through the
// API and its status written through the status subresource, as a kubelet would write it
// (image pull failing, then Ready). The path with real pods runs in e2e/node/helm-install.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ControllerProcess, serviceAccountKubeconfig, waitForObject } from './controller-process.js';
import { run } from './lib/exec.js';
import { REPO_ROOT, e2eAvailability } from './lib/tools.js';
import { useCluster } from './lib/use-cluster.js';
import type { Condition } from './lib/conditions.js';

const availability = e2eAvailability();
const CHART = join(REPO_ROOT, 'charts/tollgate');
const NS = 'tollgate-system';
const APPS = 'shop';
const PROXY = 'edge-tollgate';
const IMAGE = 'registry.example.com/tollgate:missing';
const POD = `${PROXY}-5d8f7c9b4-x2x7q`;

interface GatewayObject {
  status?: { conditions?: Condition[]; listeners?: { name: string; conditions: Condition[] }[] };
}
const programmed = (gw: GatewayObject) => gw.status?.conditions?.find((c) => c.type === 'Programmed');

describe.skipIf(!availability.run)('Gateway Programmed from proxy pods on kube-apiserver', () => {
  const cluster = useCluster({ tollgateCrds: false });
  const kubectl = (args: string[], input?: string) => run(cluster.current.tools.kubectl, args, { env: cluster.current.env, ...(input === undefined ? {} : { input }) });
  const gatewayWhere = (predicate: (c: Condition | undefined) => boolean) => waitForObject<GatewayObject>(cluster.current, 'gateway', 'edge', APPS, (gw) => predicate(programmed(gw)));
  const podStatus = (status: object) => kubectl(['patch', 'pod', POD, '-n', APPS, '--subresource=status', '--type=merge', '-p', JSON.stringify({ status })]);
  const now = () => new Date().toISOString().replace(/\.\d+Z$/, 'Z');
  let controller: ControllerProcess;

  beforeAll(async () => {
    await run(cluster.current.tools.helm, ['install', 'tollgate', CHART, '-n', NS, '--create-namespace'], { env: cluster.current.env });
    await kubectl(['create', 'namespace', APPS]);
    const kubeconfig = await serviceAccountKubeconfig(cluster.current, NS, 'tollgate-controller', join(mkdtempSync(join(tmpdir(), 'tg-prog-')), 'kubeconfig'));
    controller = await ControllerProcess.start('controller-programmed', cluster.current, kubeconfig, ['--proxy-image=registry.example.com/tollgate:e2e']);
    await controller.synced();
    await kubectl(['apply', '-f', '-'], JSON.stringify({
      apiVersion: 'gateway.networking.k8s.io/v1',
      kind: 'Gateway',
      metadata: { name: 'edge', namespace: APPS },
      spec: { gatewayClassName: 'tollgate', listeners: [{ name: 'http', protocol: 'HTTP', port: 80 }] },
    }));
    await waitForObject(cluster.current, 'deployment', PROXY, APPS, () => true);
  }, 120_000);

  afterAll(async () => {
    await controller?.stop('SIGKILL');
  });

  it('is Pending while no proxy pod is ready', async () => {
    const gw = await gatewayWhere((c) => c?.reason === 'Pending' && c.message.includes('proxy pods'));
    expect(programmed(gw)).toMatchObject({ status: 'False', reason: 'Pending', message: `0 of 1 proxy pods of Deployment ${PROXY} ready` });
  });

  it('names the image and the kubelet’s message when the proxy pod cannot pull its image', async () => {
    // As the ReplicaSet would create it: the Deployment's pod labels and ServiceAccount.
    const dep = JSON.parse(await kubectl(['get', 'deployment', PROXY, '-n', APPS, '-o', 'json'])) as { spec: { template: { metadata: { labels: Record<string, string> } } } };
    await kubectl(['create', '-f', '-'], JSON.stringify({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: POD, namespace: APPS, labels: dep.spec.template.metadata.labels },
      spec: { serviceAccountName: PROXY, automountServiceAccountToken: false, containers: [{ name: 'proxy', image: IMAGE }] },
    }));
    const kubeletMessage = `rpc error: code = NotFound desc = failed to pull and unpack image "${IMAGE}": not found`;
    await podStatus({
      phase: 'Pending',
      conditions: [{ type: 'Ready', status: 'False', lastTransitionTime: now() }],
      containerStatuses: [{ name: 'proxy', image: IMAGE, imageID: '', ready: false, restartCount: 0, state: { waiting: { reason: 'ErrImagePull', message: kubeletMessage } } }],
    });
    const gw = await gatewayWhere((c) => c?.reason === 'NoResources');
    expect(programmed(gw)).toEqual(expect.objectContaining({
      status: 'False',
      reason: 'NoResources',
      message: `proxy pod ${POD} cannot start: image "${IMAGE}" cannot be pulled (ErrImagePull): ${kubeletMessage}`,
    }));
  });

  it('is True on the Gateway and its listener once the pod is ready', async () => {
    await podStatus({
      phase: 'Running',
      conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: now() }],
      containerStatuses: [{ name: 'proxy', image: IMAGE, imageID: 'sha256:0', ready: true, restartCount: 0, state: { running: { startedAt: now() } } }],
    });
    const gw = await gatewayWhere((c) => c?.status === 'True');
    expect(programmed(gw)).toMatchObject({ reason: 'Programmed' });
    expect(programmed(gw)!.message).toMatch(/^1 proxy pod ready; snapshot \S+ applied$/);
    expect(gw.status!.listeners![0]!.conditions.find((c) => c.type === 'Programmed')).toMatchObject({ status: 'True', reason: 'Programmed' });
  });

  it('goes back to Pending when the pod is gone', async () => {
    await kubectl(['delete', 'pod', POD, '-n', APPS, '--grace-period=0', '--force']);
    const gw = await gatewayWhere((c) => c?.reason === 'Pending');
    expect(programmed(gw)).toMatchObject({ status: 'False', message: `0 of 1 proxy pods of Deployment ${PROXY} ready` });
  });
});
