// The deployer on a real kube-apiserver: the chart installed with helm, the controller binary
// out of cluster with the chart ServiceAccount's token (so a verb missing from the chart's
// RBAC fails here). A Gateway of our class gets its ServiceAccount, Deployment and Service in
// its own namespace, owned by it and written by field manager `tollgate`; a listener change
// updates them; the Gateway's status.addresses follow the Service; deleting the Gateway
// prunes them (this API server runs no garbage collector, so the deployer's own pruning is
// what is tested). No node: no pod runs here.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ControllerProcess, serviceAccountKubeconfig, waitForObject, waitForObjectWhere } from './controller-process.js';
import { run } from './lib/exec.js';
import { REPO_ROOT, e2eAvailability } from './lib/tools.js';
import { useCluster } from './lib/use-cluster.js';

const availability = e2eAvailability();
const CHART = join(REPO_ROOT, 'charts/tollgate');
const NS = 'tollgate-system';
const APPS = 'shop';
const NAME = 'edge-tollgate';
const IMAGE = 'registry.example.com/tollgate:e2e';

const gateway = (listeners: string, annotations = '') => `
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: { name: edge, namespace: ${APPS} }
spec:
  gatewayClassName: tollgate
  infrastructure:
    labels: { team: shop }
    annotations: { example.com/owner: shop-team${annotations} }
  listeners:
${listeners}
`;
const HTTP_80 = '  - { name: http, protocol: HTTP, port: 80 }';
const HTTP_80_8080 = `${HTTP_80}\n  - { name: alt, protocol: HTTP, port: 8080 }`;

interface GatewayObject {
  metadata: { uid: string };
  status?: { addresses?: { type: string; value: string }[] };
}
// The fields of the deployed objects this test reads.
interface Meta {
  uid?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  ownerReferences?: unknown[];
}
interface V1ServiceAccount {
  metadata?: Meta;
  automountServiceAccountToken?: boolean;
}
interface Container {
  image?: string;
  env?: { name: string; value?: string }[];
  args?: string[];
  securityContext?: unknown;
  readinessProbe?: { httpGet?: unknown };
  ports?: { containerPort: number }[];
}
interface V1Deployment {
  metadata?: Meta;
  spec?: {
    replicas?: number;
    selector: { matchLabels?: Record<string, string> };
    template: {
      metadata?: { labels?: Record<string, string>; annotations?: Record<string, string> };
      spec?: {
        serviceAccountName?: string;
        securityContext?: unknown;
        containers: Container[];
        volumes?: { name: string; projected?: { sources?: { serviceAccountToken?: unknown }[] } }[];
      };
    };
  };
}
interface V1Service {
  metadata?: Meta;
  spec?: { clusterIP?: string; selector?: Record<string, string>; ports?: { name?: string; port: number }[] };
}
interface Managed {
  metadata: { managedFields?: { manager: string; operation: string }[] };
}

describe.skipIf(!availability.run)('deployer on kube-apiserver', () => {
  const cluster = useCluster({ tollgateCrds: false });
  const kubectl = (args: string[], input?: string) => run(cluster.current.tools.kubectl, args, { env: cluster.current.env, input });
  const apply = (yaml: string) => kubectl(['apply', '-f', '-'], yaml);
  const get = async <T>(resource: string): Promise<T & Managed> => JSON.parse(await kubectl(['get', resource, NAME, '-n', APPS, '-o', 'json', '--show-managed-fields'])) as T & Managed;
  let controller: ControllerProcess;

  beforeAll(async () => {
    await run(cluster.current.tools.helm, ['install', 'tollgate', CHART, '-n', NS, '--create-namespace'], { env: cluster.current.env });
    await kubectl(['create', 'namespace', APPS]);
    const kubeconfig = await serviceAccountKubeconfig(cluster.current, NS, 'tollgate-controller', join(mkdtempSync(join(tmpdir(), 'tg-dep-')), 'kubeconfig'));
    controller = await ControllerProcess.start('controller-deployer', cluster.current, kubeconfig, [`--proxy-image=${IMAGE}`, '--log-level=info,deployer=debug']);
    await controller.synced();
  }, 120_000);

  afterAll(async () => {
    await controller?.stop('SIGKILL');
  });

  it('creates the ServiceAccount, Deployment and Service in the Gateway’s namespace, owned by it', async () => {
    await apply(gateway(HTTP_80));
    const deployment = await waitForObject<V1Deployment>(cluster.current, 'deployment', NAME, APPS, () => true);
    await waitForObject(cluster.current, 'service', NAME, APPS, () => true);
    const gw = JSON.parse(await kubectl(['get', 'gateway', 'edge', '-n', APPS, '-o', 'json'])) as GatewayObject;

    const sa = await get<V1ServiceAccount>('serviceaccount');
    const dep = await get<V1Deployment>('deployment');
    const svc = await get<V1Service>('service');
    for (const o of [sa, dep, svc]) {
      expect(o.metadata.ownerReferences).toEqual([{ apiVersion: 'gateway.networking.k8s.io/v1', kind: 'Gateway', name: 'edge', uid: gw.metadata.uid, controller: true, blockOwnerDeletion: true }]);
      expect(o.metadata.labels).toMatchObject({ 'gateway.networking.k8s.io/gateway-name': 'edge', 'app.kubernetes.io/managed-by': 'tollgate', team: 'shop' });
      expect(o.metadata.annotations).toMatchObject({ 'example.com/owner': 'shop-team' });
      // Server-side apply by field manager tollgate, nothing else wrote the objects.
      expect(o.metadata.managedFields?.map((f) => [f.manager, f.operation])).toEqual([['tollgate', 'Apply']]);
    }
    expect(sa.automountServiceAccountToken).toBe(false);

    // The infrastructure labels and annotations are on the pods too (the Gateway API asks it of every generated object).
    expect(deployment.spec!.template.metadata?.labels).toMatchObject({ team: 'shop', 'gateway.networking.k8s.io/gateway-name': 'edge' });
    expect(deployment.spec!.template.metadata?.annotations).toEqual({ 'example.com/owner': 'shop-team' });
    const pod = deployment.spec!.template.spec!;
    expect(deployment.spec!.replicas).toBe(1);
    expect(pod.serviceAccountName).toBe(NAME);
    expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, sysctls: [{ name: 'net.ipv4.ip_unprivileged_port_start', value: '0' }] });
    const c = pod.containers[0]!;
    expect(c.image).toBe(IMAGE);
    expect(c.args).toEqual(['--controller', `tollgate-controller.${NS}.svc:9978`, '--gateway', `${APPS}/edge`, '--controller-ca', '/etc/tollgate/ca/ca.crt', '--controller-token', '/var/run/secrets/tollgate/token', '--admin-addr', '127.0.0.1:15000', '--workers', 'auto']);
    expect(c.securityContext).toEqual({ allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, runAsNonRoot: true, capabilities: { drop: ['ALL'] } });
    expect(c.readinessProbe?.httpGet).toMatchObject({ path: '/healthz/ready', port: 15021 });
    expect(pod.volumes?.find((v) => v.name === 'tollgate-token')?.projected?.sources?.[0]?.serviceAccountToken).toMatchObject({ audience: 'tollgate', path: 'token' });
    expect(svc.spec!.ports!.map((p) => [p.name, p.port])).toEqual([['http-80', 80]]);
    expect(svc.spec!.selector).toEqual(deployment.spec!.selector.matchLabels);

    // status.addresses: the Service's ClusterIP.
    const withAddress = await waitForObject<GatewayObject>(cluster.current, 'gateway', 'edge', APPS, (o) => (o.status?.addresses?.length ?? 0) > 0);
    expect(withAddress.status!.addresses).toEqual([{ type: 'IPAddress', value: svc.spec!.clusterIP }]);
  });

  it('a listener and an override change update the objects in place', async () => {
    const before = await get<V1Service>('service');
    await apply(gateway(HTTP_80_8080, ', tollgate.dev/replicas: "2"'));
    const svc = await waitForObject<V1Service>(cluster.current, 'service', NAME, APPS, (s) => (s.spec?.ports?.length ?? 0) === 2);
    expect(svc.spec!.ports!.map((p) => [p.name, p.port])).toEqual([['http-80', 80], ['http-8080', 8080]]);
    // Updated, not recreated: the same object, the same address.
    expect(svc.metadata!.uid).toBe(before.metadata.uid);
    expect(svc.spec!.clusterIP).toBe(before.spec!.clusterIP);
    const dep = await waitForObject<V1Deployment>(cluster.current, 'deployment', NAME, APPS, (d) => d.spec?.replicas === 2);
    // The listener ports are the Service's; the pod template lists only readiness, so it stays as it was.
    expect(dep.spec!.template.spec!.containers[0]!.ports!.map((p) => p.containerPort)).toEqual([15021]);
  });

  it('a bad override is reported by name and the default is used', async () => {
    const from = controller.lines.length;
    await apply(gateway(HTTP_80_8080, ', tollgate.dev/replicas: lots'));
    const line = await controller.waitForLog((l) => l.code === 'TG_CONTROLLER_PROXY_SETTINGS', 60_000, from);
    expect(line).toMatchObject({ component: 'deployer', gateway: `${APPS}/edge` });
    expect(String(line.problem)).toContain('spec.infrastructure.annotations["tollgate.dev/replicas"] "lots" is not a whole number');
    await waitForObject<V1Deployment>(cluster.current, 'deployment', NAME, APPS, (d) => d.spec?.replicas === 1);
    // And on the Gateway, where `kubectl describe gateway` shows it.
    const event = await waitForObjectWhere<{ type?: string; note?: string; regarding?: { kind?: string; name?: string } }>(cluster.current, 'events.events.k8s.io', 'reason=InvalidProxySettings', APPS, () => true);
    expect(event).toMatchObject({ type: 'Warning', regarding: { kind: 'Gateway', name: 'edge' } });
    expect(event.note).toContain('tollgate.dev/replicas');
  });

  it('an object deleted or edited by hand is put back at once, with no other change', async () => {
    // The deployer's own applies, seen by the same watch, were never taken for edits.
    expect(controller.lines.filter((l) => String(l.msg).endsWith('by someone else; putting it back')).map((l) => `${String(l.kind)} ${String(l.event)}: ${String(l.msg)}`)).toEqual([]);
    for (const kind of ['deployment', 'service', 'serviceaccount']) {
      const before = await get<V1Service>(kind);
      const from = controller.lines.length;
      await kubectl(['delete', kind, NAME, '-n', APPS]);
      // The watch of the deployer's own objects sees the deletion; nothing else changes.
      await controller.waitForLog((l) => l.msg === 'created' && String(l.kind).toLowerCase() === kind && l.name === NAME, 60_000, from);
      const back = await waitForObject<V1Service>(cluster.current, kind, NAME, APPS, () => true);
      expect(back.metadata!.uid).not.toBe(before.metadata.uid);
      expect(controller.lines.slice(from).some((l) => l.msg === 'deleted by someone else; putting it back' && String(l.kind).toLowerCase() === kind)).toBe(true);
    }
    // A hand edit of a field the deployer sets (kubectl scale) is undone.
    const from = controller.lines.length;
    await kubectl(['scale', 'deployment', NAME, '-n', APPS, '--replicas=5']);
    await controller.waitForLog((l) => l.msg === 'changed by someone else; putting it back' && l.kind === 'Deployment', 60_000, from);
    await waitForObject<V1Deployment>(cluster.current, 'deployment', NAME, APPS, (d) => d.spec?.replicas === 1);
  });

  it('parameters from a ConfigMap (parametersRef): applied, followed on edit, a bad key refuses the Gateway and keeps its proxies', async () => {
    const params = (data: Record<string, string>) =>
      apply(JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'edge-proxy', namespace: APPS, labels: { 'tollgate.dev/parameters': 'true' } }, data }));
    const accepted = (g: { status?: { conditions?: { type: string; status: string; reason: string; message: string }[] } }) => g.status?.conditions?.find((c) => c.type === 'Accepted');
    await params({ replicas: '3', cpuRequest: '250m' });
    await kubectl(['patch', 'gateway', 'edge', '-n', APPS, '--type=merge', '-p', JSON.stringify({ spec: { infrastructure: { annotations: null, parametersRef: { group: '', kind: 'ConfigMap', name: 'edge-proxy' } } } })]);
    const dep = await waitForObject<V1Deployment>(cluster.current, 'deployment', NAME, APPS, (d) => d.spec?.replicas === 3);
    expect((dep.spec!.template.spec!.containers[0] as { resources?: unknown }).resources).toEqual({ requests: { cpu: '250m', memory: '192Mi' }, limits: { memory: '512Mi' } });

    // No process setting: no TOLLGATE_SETTINGS (the proxies' defaults).
    expect(dep.spec!.template.spec!.containers[0]!.env).toBeUndefined();

    // An edit of the ConfigMap alone re-renders (the ConfigMap is watched); process settings
    // reach the proxy container as one JSON object, numbers as numbers.
    await params({ replicas: '2', cpuRequest: '250m', maxBufferedRequestBytes: '134217728', requestBodyTimeout: '2m', maxConnectionsPerBind: '1000', workers: '3' });
    const withSettings = await waitForObject<V1Deployment>(cluster.current, 'deployment', NAME, APPS, (d) => d.spec?.replicas === 2 && d.spec.template.spec?.containers[0]?.env !== undefined);
    expect(withSettings.spec!.template.spec!.containers[0]!.env).toEqual([{ name: 'TOLLGATE_SETTINGS', value: '{"maxBufferedRequestBytes":134217728,"maxConnectionsPerBind":1000,"requestBodyTimeout":"2m","workers":3}' }]);
    // The parameters' thread count replaces the default (--workers auto).
    expect(withSettings.spec!.template.spec!.containers[0]!.args).not.toContain('--workers');

    // A process setting the proxy would refuse refuses the Gateway here, naming the key.
    await params({ replicas: '2', maxBufferedRequestBytes: '4096' });
    const badSetting = await waitForObject<{ status?: { conditions?: { type: string; status: string; reason: string; message: string }[] } }>(cluster.current, 'gateway', 'edge', APPS, (g) => accepted(g)?.reason === 'InvalidParameters');
    expect(accepted(badSetting)?.message).toBe(
      `ConfigMap ${APPS}/edge-proxy: key maxBufferedRequestBytes: got 4096; it must be at least maxRequestBodyBytes (8388608, its default), or a body of the largest size a metered route reads could never be held: raise it or lower maxRequestBodyBytes`,
    );
    await params({ replicas: '2', cpuRequest: '250m' });
    await waitForObject(cluster.current, 'deployment', NAME, APPS, (d: V1Deployment) => d.spec?.replicas === 2 && d.spec.template.spec?.containers[0]?.env === undefined);

    // A bad key: the Gateway is refused, naming the key and the fix; its proxies stay as they run.
    await params({ replicas: 'lots' });
    const refused = await waitForObject<{ status?: { conditions?: { type: string; status: string; reason: string; message: string }[] } }>(cluster.current, 'gateway', 'edge', APPS, (g) => accepted(g)?.reason === 'InvalidParameters');
    expect(accepted(refused)).toMatchObject({ status: 'False', message: `ConfigMap ${APPS}/edge-proxy: key replicas "lots" is not a whole number from 0 to 100; e.g. "2"` });
    for (const kind of ['serviceaccount', 'deployment', 'service']) expect((await cluster.current.kubectl(['get', kind, NAME, '-n', APPS])).code, `${kind} kept`).toBe(0);
    expect((await get<V1Deployment>('deployment')).spec!.replicas).toBe(2);

    // Fixed: accepted again, rendered with the new value.
    await params({ replicas: '1' });
    await waitForObject(cluster.current, 'gateway', 'edge', APPS, (g: { status?: { conditions?: { type: string; status: string }[] } }) => accepted(g as never)?.status === 'True');
    await waitForObject(cluster.current, 'deployment', NAME, APPS, (d: V1Deployment) => d.spec?.replicas === 1);
  });

  it('an infrastructure key the Gateway may not set refuses it, naming the key; its proxies stay as they run', async () => {
    const accepted = (g: { status?: { conditions?: { type: string; status: string; reason: string; message: string }[] } }) => g.status?.conditions?.find((c) => c.type === 'Accepted');
    // A merge patch: a key set to null is removed.
    const infrastructure = (labels: Record<string, string | null>, annotations: Record<string, string | null>) =>
      kubectl(['patch', 'gateway', 'edge', '-n', APPS, '--type=merge', '-p', JSON.stringify({ spec: { infrastructure: { labels, annotations } } })]);
    await infrastructure({ team: 'shop', 'sidecar.istio.io/inject': 'true' }, { 'example.com/owner': 'shop-team', 'node.kubernetes.io/exclude-from-external-load-balancers': 'true' });
    const refused = await waitForObject<{ status?: { conditions?: { type: string; status: string; reason: string; message: string }[] } }>(cluster.current, 'gateway', 'edge', APPS, (g) => accepted(g)?.reason === 'InvalidParameters');
    expect(accepted(refused)?.message).toContain('spec.infrastructure.labels["sidecar.istio.io/inject"] is under istio.io, which the cluster admin keeps from Gateways');
    expect(accepted(refused)?.message).toContain('spec.infrastructure.annotations["node.kubernetes.io/exclude-from-external-load-balancers"] is under kubernetes.io, Kubernetes\' own keys');
    // Nothing of the refused keys reached an object; the proxies are as they were.
    for (const kind of ['serviceaccount', 'deployment', 'service']) {
      const o = await get<V1Deployment>(kind);
      expect(o.metadata.labels?.['sidecar.istio.io/inject'], kind).toBeUndefined();
      expect(o.metadata.annotations?.['node.kubernetes.io/exclude-from-external-load-balancers'], kind).toBeUndefined();
    }
    expect((await get<V1Deployment>('deployment')).spec!.template.metadata?.labels?.['sidecar.istio.io/inject']).toBeUndefined();
    // Allowed keys only: accepted again, and the new label reaches every object and the pods.
    await infrastructure({ 'sidecar.istio.io/inject': null, 'app.kubernetes.io/part-of': 'storefront' }, { 'node.kubernetes.io/exclude-from-external-load-balancers': null });
    const dep = await waitForObject<V1Deployment>(cluster.current, 'deployment', NAME, APPS, (d) => d.spec?.template.metadata?.labels?.['app.kubernetes.io/part-of'] === 'storefront');
    expect(dep.metadata!.labels).toMatchObject({ 'app.kubernetes.io/part-of': 'storefront', 'app.kubernetes.io/managed-by': 'tollgate' });
    await waitForObject<V1Service>(cluster.current, 'service', NAME, APPS, (o) => o.metadata?.labels?.['app.kubernetes.io/part-of'] === 'storefront');
    await waitForObject<V1ServiceAccount>(cluster.current, 'serviceaccount', NAME, APPS, (o) => o.metadata?.labels?.['app.kubernetes.io/part-of'] === 'storefront');
  });

  it('deleting the Gateway deletes its objects', async () => {
    await kubectl(['delete', 'gateway', 'edge', '-n', APPS]);
    for (const kind of ['serviceaccount', 'deployment', 'service']) {
      await controller.waitForLog((l) => l.msg === 'deleted (no Gateway needs it)' && String(l.kind).toLowerCase() === kind && l.name === NAME);
      const r = await cluster.current.kubectl(['get', kind, NAME, '-n', APPS]);
      expect(r.code, `${kind} still exists`).not.toBe(0);
      expect(r.stderr).toContain('NotFound');
    }
    expect(await controller.metric('tollgate_controller_status_writes_total', { result: 'error' })).toBe(0);
    // Its metric series go too (the reconcile that removed its snapshot dropped them).
    await controller.waitForLog((l) => l.msg === 'snapshot removed (Gateway no longer served)' && l.gateway === `${APPS}/edge`);
    const left = (await controller.metrics()).split('\n').filter((l) => l.includes(`gateway="${APPS}/edge"`));
    expect(left).toEqual([]);
  });
});
