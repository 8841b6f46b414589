// The controller never takes over what it did not make, on a real kube-apiserver: the chart
// installed, the controller binary out of cluster with the chart ServiceAccount's token. A
// Deployment a tenant made with the name a Gateway's proxies would get, and a `tollgate-ca`
// ConfigMap a tenant made in a Gateway's namespace, are left exactly as they are; the Gateway's
// Programmed condition names the object and the fix; once the object is gone, Tollgate makes
// its own.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { installChart, startAsChart, type ControllerProcess, waitForObject } from './controller-process.js';
import { programmed, type GatewayStatus } from './lib/conditions.js';
import { run } from './lib/exec.js';
import { e2eAvailability } from './lib/tools.js';
import { useCluster } from './lib/use-cluster.js';

const availability = e2eAvailability();
const APPS = 'tenant';
const OTHER = 'tenant-b';

interface Meta {
  labels?: Record<string, string>;
  ownerReferences?: unknown[];
  managedFields?: { manager: string }[];
}
interface DeploymentObject {
  metadata: Meta;
  spec: { template: { spec: { containers: { image: string }[] } } };
}
interface ConfigMapObject {
  metadata: Meta;
  data?: Record<string, string>;
}

const gateway = (name: string, namespace: string) =>
  JSON.stringify({
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'Gateway',
    metadata: { name, namespace },
    spec: { gatewayClassName: 'tollgate', listeners: [{ name: 'http', protocol: 'HTTP', port: 80 }] },
  });

describe.skipIf(!availability.run)('objects the controller did not make (kube-apiserver)', () => {
  const cluster = useCluster({ tollgateCrds: false });
  const kubectl = (args: string[], input?: string) => run(cluster.current.tools.kubectl, args, { env: cluster.current.env, ...(input === undefined ? {} : { input }) });
  const json = async <T>(...args: string[]) => JSON.parse(await kubectl([...args, '-o', 'json', '--show-managed-fields'])) as T;
  const programmedWhere = (name: string, namespace: string, predicate: (message: string, reason: string) => boolean) =>
    waitForObject<GatewayStatus>(cluster.current, 'gateway', name, namespace, (g) => {
      const c = programmed(g);
      return c !== undefined && predicate(c.message, c.reason);
    });
  /**
   * A Gateway applied where `resource` `name` already is someone else's: its Programmed is False
   * (NoResources) naming the object, and the object is exactly as it was. Resolves to the message.
   */
  const blockedBy = async (resource: string, name: string, gateway_: { name: string; namespace: string }): Promise<string> => {
    const before = await json<object>('get', resource, name, '-n', gateway_.namespace);
    await kubectl(['apply', '-f', '-'], gateway(gateway_.name, gateway_.namespace));
    const gw = await programmedWhere(gateway_.name, gateway_.namespace, (m, reason) => reason === 'NoResources' && m.includes(name));
    expect(programmed(gw)).toMatchObject({ status: 'False', reason: 'NoResources' });
    expect(await json<object>('get', resource, name, '-n', gateway_.namespace)).toEqual(before);
    return programmed(gw)!.message;
  };
  let controller: ControllerProcess;

  beforeAll(async () => {
    await installChart(cluster.current, [APPS, OTHER]);
    controller = await startAsChart(cluster.current, 'controller-ownership', ['--proxy-image=registry.example.com/tollgate:e2e']);
  }, 120_000);

  afterAll(async () => {
    await controller?.stop('SIGKILL');
  });

  it('a Deployment of the proxies’ name that is not Tollgate’s is left alone; the Gateway says so until it is gone', async () => {
    await kubectl(['create', 'deployment', 'edge-tollgate', '-n', APPS, '--image=registry.example.com/their-app:1']);
    const message = await blockedBy('deployment', 'edge-tollgate', { name: 'edge', namespace: APPS });
    expect(message).toContain(`Deployment ${APPS}/edge-tollgate exists and was not made by Tollgate for this Gateway`);
    expect(message).toContain(`kubectl delete deployment edge-tollgate -n ${APPS}`);
    const after = await json<DeploymentObject>('get', 'deployment', 'edge-tollgate', '-n', APPS);
    expect(after.metadata.managedFields!.map((f) => f.manager)).not.toContain('tollgate');
    // None of the Gateway's other objects were made either.
    for (const kind of ['serviceaccount', 'service']) expect((await cluster.current.kubectl(['get', kind, 'edge-tollgate', '-n', APPS])).code, kind).not.toBe(0);
    expect(controller.lines.some((l) => l.code === 'TG_CONTROLLER_PROXY_CONFLICT' && l.gateway === `${APPS}/edge`)).toBe(true);

    await kubectl(['delete', 'deployment', 'edge-tollgate', '-n', APPS]);
    const ours = await waitForObject<DeploymentObject>(cluster.current, 'deployment', 'edge-tollgate', APPS, (d) => d.metadata.labels?.['app.kubernetes.io/managed-by'] === 'tollgate');
    expect(ours.spec.template.spec.containers[0]!.image).toBe('registry.example.com/tollgate:e2e');
    await programmedWhere('edge', APPS, (_m, reason) => reason === 'Pending');
  });

  it('a tollgate-ca ConfigMap that is not Tollgate’s is not overwritten; the Gateways of the namespace say so until it is gone', async () => {
    await kubectl(['create', 'configmap', 'tollgate-ca', '-n', OTHER, '--from-literal=ca.crt=their certificate']);
    expect(await blockedBy('configmap', 'tollgate-ca', { name: 'shop', namespace: OTHER })).toContain(`ConfigMap ${OTHER}/tollgate-ca exists and was not made by Tollgate`);

    await kubectl(['delete', 'configmap', 'tollgate-ca', '-n', OTHER]);
    const published = await waitForObject<ConfigMapObject>(cluster.current, 'configmap', 'tollgate-ca', OTHER, (c) => c.metadata.labels?.['app.kubernetes.io/managed-by'] === 'tollgate');
    expect(published.data!['ca.crt']).toContain('-----BEGIN CERTIFICATE-----');
    await programmedWhere('shop', OTHER, (_m, reason) => reason === 'Pending');
  });
});
