// The Helm chart on a real kube-apiserver: lint, install into tollgate-system, the objects
// and the controller's permissions (RBAC, and the ValidatingAdmissionPolicy that narrows its
// writes to what it owns), uninstall.
import { join } from 'node:path';
import { until } from '@tollgate/testkit';
import { describe, expect, it } from 'vitest';
import { render } from '../packages/controller/src/deployer/render.js';
import { DEFAULT_PROXY_SETTINGS } from '../packages/controller/src/proxy-settings/defaults.js';
import { renderCaConfigMaps } from '../packages/controller/src/pki/ca-configmap.js';
import type { Gateway } from '../packages/controller/src/types/gateway-api.js';
import { run } from './lib/exec.js';
import { REPO_ROOT, e2eAvailability } from './lib/tools.js';
import { useCluster } from './lib/use-cluster.js';

const availability = e2eAvailability();
const CHART = join(REPO_ROOT, 'charts/tollgate');
const NS = 'tollgate-system';
const SA = `system:serviceaccount:${NS}:tollgate-controller`;

describe.skipIf(!availability.run)('Helm chart on kube-apiserver', () => {
  // Without crds/ applied by the harness, so the test sees the chart install the CRD.
  const cluster = useCluster({ tollgateCrds: false });
  const helm = (args: string[]) => run(cluster.current.tools.helm, args, { env: cluster.current.env });
  const kubectl = (args: string[]) => run(cluster.current.tools.kubectl, args, { env: cluster.current.env });

  const namespaced = [
    'deployment/tollgate-controller',
    'serviceaccount/tollgate-controller',
    'service/tollgate-controller',
    'role.rbac.authorization.k8s.io/tollgate-controller-leader-election',
    'rolebinding.rbac.authorization.k8s.io/tollgate-controller-leader-election',
    // Owned by the release, so uninstall leaves no Lease naming a pod that is gone.
    'lease.coordination.k8s.io/tollgate-controller',
    'networkpolicy.networking.k8s.io/tollgate-controller',
  ];
  const clusterScoped = [
    'clusterrole.rbac.authorization.k8s.io/tollgate-controller',
    'clusterrolebinding.rbac.authorization.k8s.io/tollgate-controller',
    'gatewayclass.gateway.networking.k8s.io/tollgate',
    'validatingadmissionpolicy.admissionregistration.k8s.io/tollgate-controller-writes',
    'validatingadmissionpolicybinding.admissionregistration.k8s.io/tollgate-controller-writes',
  ];

  it('helm lint is clean', async () => {
    const out = await helm(['lint', '--strict', CHART]);
    expect(out).toContain('1 chart(s) linted, 0 chart(s) failed');
    expect(out).not.toMatch(/\[(WARNING|ERROR)\]/);
  });

  it('renders per-component log levels, image and replicas from values', async () => {
    const out = await helm([
      'template', 'tollgate', CHART, '-n', NS,
      '--set', 'controller.logLevels.deployer=debug',
      '--set', 'controller.image.tag=v9.9.9',
      '--set', 'controller.replicas=2',
    ]);
    // helm renders args one per line: `        - --flag=value`.
    expect(out).toMatch(/^\s+replicas: 2$/m);
    expect(out).toContain('image: ghcr.io/tollgate-dev/tollgate-controller:v9.9.9');
    expect(out).toContain('- --log-level=info,deployer=debug,gateway-controller=info,tollgate/syncer=info,tollgate/translator=info');
    expect(out).toContain('- --leader-elect=true');
    expect(out).toContain('- --leader-elect-lease-name=tollgate-controller');
    // No Gateway chooses its proxy image unless the admin lists what it may choose.
    expect(out).not.toContain('--gateway-proxy-images');
    const images = await helm(['template', 'tollgate', CHART, '-n', NS, '--set', 'proxy.gatewayImages={registry.example.com/canary/,registry.example.com/tollgate:0.2.0}']);
    expect(images).toContain('- --gateway-proxy-images=registry.example.com/canary/,registry.example.com/tollgate:0.2.0');
    const comma = await cluster.current.helm(['template', 'tollgate', CHART, '--set-json', 'proxy.gatewayImages=["a.example.com/x,b.example.com/y"]']);
    expect(comma.code).not.toBe(0);
    // The controller's default list of denied infrastructure domains unless the admin gives one (even empty).
    expect(out).not.toContain('--gateway-infrastructure-denied-domains');
    const denied = await helm(['template', 'tollgate', CHART, '-n', NS, '--set-json', 'proxy.infrastructureDeniedDomains=["istio.io","example.com"]']);
    expect(denied).toContain('- --gateway-infrastructure-denied-domains=istio.io,example.com');
    expect(await helm(['template', 'tollgate', CHART, '-n', NS, '--set-json', 'proxy.infrastructureDeniedDomains=[]'])).toContain('- --gateway-infrastructure-denied-domains=\n');
    expect((await cluster.current.helm(['template', 'tollgate', CHART, '--set-json', 'proxy.infrastructureDeniedDomains=["istio.io/"]'])).code).not.toBe(0);
    // The admission policy and the network policy are on by default, and can be turned off.
    for (const kind of ['ValidatingAdmissionPolicy', 'ValidatingAdmissionPolicyBinding', 'NetworkPolicy']) expect(out).toMatch(new RegExp(`^kind: ${kind}$`, 'm'));
    const off = await helm(['template', 'tollgate', CHART, '-n', NS, '--set', 'controller.admissionPolicy.enabled=false', '--set', 'controller.networkPolicy.enabled=false']);
    expect(off).not.toMatch(/^kind: (ValidatingAdmissionPolicy|NetworkPolicy)/m);
    const bad = await cluster.current.helm(['template', 'tollgate', CHART, '--set', 'controller.logLevels.deployer=loud']);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/controller\/logLevels\/deployer'?: value must be one of 'error', 'warn', 'info', 'debug', 'trace'/);
  });

  it('helm install creates the objects; helm uninstall removes them', async () => {
    expect((await cluster.current.kubectl(['get', 'crd', 'gatewaypolicies.tollgate.dev'])).code, 'CRD present before install').not.toBe(0);
    const out = await helm(['install', 'tollgate', CHART, '-n', NS, '--create-namespace', '--timeout', '60s']);
    expect(out).toContain('STATUS: deployed');
    expect(out).toContain('kubectl apply -f examples/gatewaypolicy.yaml'); // NOTES.txt

    for (const obj of namespaced) await kubectl(['get', obj, '-n', NS]);
    for (const obj of clusterScoped) await kubectl(['get', obj]);
    expect(await kubectl(['get', 'crd', 'gatewaypolicies.tollgate.dev', '-o', 'jsonpath={.metadata.labels.gateway\\.networking\\.k8s\\.io/policy}'])).toBe('Direct');

    const deploy = JSON.parse(await kubectl(['get', 'deployment/tollgate-controller', '-n', NS, '-o', 'json'])) as {
      spec: { template: { spec: { serviceAccountName: string; containers: { ports: { name: string; containerPort: number }[]; readinessProbe: { httpGet: { port: string } } }[] } } };
    };
    const pod = deploy.spec.template.spec;
    expect(pod.serviceAccountName).toBe('tollgate-controller');
    expect(pod.containers[0]!.ports.map((p) => [p.name, p.containerPort])).toEqual([['snapshots', 9978], ['metrics', 9092], ['health', 9093]]);
    expect(pod.containers[0]!.readinessProbe.httpGet.port).toBe('health');
    const svcPorts = await kubectl(['get', 'service/tollgate-controller', '-n', NS, '-o', 'jsonpath={.spec.ports[*].port}']);
    expect(svcPorts).toBe('9978 9092');
    // The NetworkPolicy selects the controller's pods; the snapshot port admits the proxy pods only.
    const np = JSON.parse(await kubectl(['get', 'networkpolicy/tollgate-controller', '-n', NS, '-o', 'json'])) as {
      spec: { podSelector: { matchLabels: Record<string, string> }; policyTypes: string[]; ingress: { ports: { port: number }[]; from?: { podSelector?: { matchLabels: Record<string, string> }; namespaceSelector?: object }[] }[] };
    };
    const podLabels = (JSON.parse(await kubectl(['get', 'deployment/tollgate-controller', '-n', NS, '-o', 'jsonpath={.spec.template.metadata.labels}'])) as Record<string, string>);
    expect(podLabels).toMatchObject(np.spec.podSelector.matchLabels);
    expect(np.spec.policyTypes).toEqual(['Ingress']);
    expect(np.spec.ingress.map((r) => r.ports.map((p) => p.port))).toEqual([[9978], [9092], [9093]]);
    expect(np.spec.ingress[0]!.from).toEqual([{ namespaceSelector: {}, podSelector: { matchLabels: { 'app.kubernetes.io/managed-by': 'tollgate', 'app.kubernetes.io/component': 'proxy' } } }]);
    const proxyPodLabels = (render({ apiVersion: 'gateway.networking.k8s.io/v1', kind: 'Gateway', metadata: { name: 'g', namespace: 'n', uid: 'u' }, spec: { gatewayClassName: 'tollgate', listeners: [] } }, { proxyImage: 'x', snapshotService: 'x:1', defaults: DEFAULT_PROXY_SETTINGS }).objects[1] as { spec: { template: { metadata: { labels: Record<string, string> } } } }).spec.template.metadata.labels;
    expect(proxyPodLabels).toMatchObject(np.spec.ingress[0]!.from![0]!.podSelector!.matchLabels);
    const controllerName = await kubectl(['get', 'gatewayclass', 'tollgate', '-o', 'jsonpath={.spec.controllerName}']);
    expect(controllerName).toBe('tollgate.dev/gateway-controller');

    await helm(['uninstall', 'tollgate', '-n', NS, '--wait', '--timeout', '60s']);
    for (const obj of [...namespaced.map((o) => [o, '-n', NS]), ...clusterScoped.map((o) => [o])]) {
      const r = await cluster.current.kubectl(['get', ...obj]);
      expect(r.code, `${obj[0]} still exists`).not.toBe(0);
      expect(r.stderr).toContain('NotFound');
    }
    // Helm never deletes what it installed from crds/.
    await kubectl(['get', 'crd', 'gatewaypolicies.tollgate.dev']);
  }, 120_000);

  it('grants the controller what it needs and no more', async () => {
    await helm(['upgrade', '--install', 'tollgate', CHART, '-n', NS, '--create-namespace']);
    const can = async (...args: string[]) => (await cluster.current.kubectl(['auth', 'can-i', '--as', SA, ...args])).stdout.trim();
    const allowed = [
      ['watch', 'httproutes.gateway.networking.k8s.io', '-A'],
      ['watch', 'grpcroutes.gateway.networking.k8s.io', '-A'],
      ['watch', 'gateways.gateway.networking.k8s.io', '-A'],
      ['watch', 'gatewayclasses.gateway.networking.k8s.io'],
      ['watch', 'referencegrants.gateway.networking.k8s.io', '-A'],
      ['watch', 'gatewaypolicies.tollgate.dev', '-A'],
      ['watch', 'endpointslices.discovery.k8s.io', '-A'],
      ['watch', 'services', '-A'],
      ['watch', 'namespaces'],
      // Certificates of HTTPS listeners and policies' credentials (the controller asks for metadata, reads whole the referenced ones).
      ['list', 'secrets', '-A'],
      ['watch', 'secrets', '-A'],
      ['get', 'gatewaypolicies.tollgate.dev', '-n', 'default'],
      ['update', 'gatewaypolicies.tollgate.dev', '--subresource=status', '-n', 'default'],
      ['list', 'backendtlspolicies.gateway.networking.k8s.io', '-A'],
      ['watch', 'backendtlspolicies.gateway.networking.k8s.io', '-A'],
      ['get', 'backendtlspolicies.gateway.networking.k8s.io', '-n', 'default'],
      ['update', 'backendtlspolicies.gateway.networking.k8s.io', '--subresource=status', '-n', 'default'],
      ['list', 'listenersets.gateway.networking.k8s.io', '-A'],
      ['watch', 'listenersets.gateway.networking.k8s.io', '-A'],
      ['get', 'listenersets.gateway.networking.k8s.io', '-n', 'default'],
      ['update', 'listenersets.gateway.networking.k8s.io', '--subresource=status', '-n', 'default'],
      ['update', 'httproutes.gateway.networking.k8s.io', '--subresource=status', '-n', 'default'],
      ['update', 'grpcroutes.gateway.networking.k8s.io', '--subresource=status', '-n', 'default'],
      ['update', 'gateways.gateway.networking.k8s.io', '--subresource=status', '-n', 'default'],
      ['update', 'gatewayclasses.gateway.networking.k8s.io', '--subresource=status'],
      ['create', 'events.events.k8s.io', '-n', 'default'],
      ['get', 'leases.coordination.k8s.io/tollgate-controller', '-n', NS],
      ['update', 'leases.coordination.k8s.io/tollgate-controller', '-n', NS],
      ['get', 'customresourcedefinitions.apiextensions.k8s.io/gatewayclasses.gateway.networking.k8s.io'],
      // The deployer: server-side apply (patch, and create for a new object), list to prune,
      // watch to put back what is deleted or edited by hand, delete.
      ...['serviceaccounts', 'deployments.apps', 'services'].flatMap((r) => [
        ['create', r, '-n', 'default'],
        ['patch', r, '-n', 'default'],
        ['list', r, '-A'],
        ['watch', r, '-A'],
        ['delete', r, '-n', 'default'],
      ]),
      // Proxy parameters (the controller selects ConfigMaps labelled tollgate.dev/parameters).
      ['list', 'configmaps', '-A'],
      ['watch', 'configmaps', '-A'],
      // The snapshot stream: proxies' tokens reviewed, the CA Secret read and created in the
      // release namespace, the CA certificate applied to each Gateway namespace's ConfigMap.
      ['create', 'tokenreviews.authentication.k8s.io'],
      ['get', 'secrets/tollgate-ca', '-n', NS],
      ['create', 'secrets', '-n', NS],
      ['patch', 'configmaps/tollgate-ca', '-n', 'default'],
      ['create', 'configmaps/tollgate-ca', '-n', 'default'],
    ];
    // The specs of what it reads, what the deployer does not need (update, get, pods, the
    // token of its ServiceAccounts), other Secrets and writes to other ConfigMaps stay out of reach.
    const denied = [
      ['patch', 'gatewaypolicies.tollgate.dev', '-n', 'default'],
      ['update', 'backendtlspolicies.gateway.networking.k8s.io', '-n', 'default'],
      ['update', 'gatewaypolicies.tollgate.dev', '-n', 'default'],
      ['update', 'httproutes.gateway.networking.k8s.io', '-n', 'default'],
      ['update', 'services', '-n', 'default'],
      ['update', 'deployments.apps', '-n', 'default'],
      ['get', 'serviceaccounts', '-n', 'default'],
      ['create', 'serviceaccounts', '--subresource=token', '-n', 'default'],
      ['get', 'secrets', '-n', 'default'],
      ['create', 'secrets', '-n', 'default'],
      ['update', 'secrets', '-n', 'default'],
      ['delete', 'secrets', '-n', 'default'],
      ['create', 'pods', '-n', 'default'],
      ['delete', 'pods', '-n', 'default'],
      ['get', 'secrets/other', '-n', NS],
      ['get', 'secrets/tollgate-ca', '-n', 'default'],
      ['update', 'secrets/tollgate-ca', '-n', NS],
      ['delete', 'secrets/tollgate-ca', '-n', NS],
      ['get', 'configmaps/tollgate-ca', '-n', 'default'],
      ['patch', 'configmaps/other', '-n', 'default'],
      ['delete', 'configmaps/other', '-n', 'default'],
      ['update', 'leases.coordination.k8s.io', '-n', 'default'],
      ['delete', 'leases.coordination.k8s.io', '-n', NS],
      // The chart creates the Lease: a controller creating one could make a helm install fail.
      ['create', 'leases.coordination.k8s.io', '-n', NS],
      ['update', 'leases.coordination.k8s.io/other', '-n', NS],
      ['create', 'clusterroles.rbac.authorization.k8s.io'],
      ['get', 'customresourcedefinitions.apiextensions.k8s.io/gatewaypolicies.tollgate.dev'],
      ['list', 'customresourcedefinitions.apiextensions.k8s.io'],
    ];
    for (const a of allowed) expect(await can(...a), a.join(' ')).toBe('yes');
    for (const d of denied) expect(await can(...d), d.join(' ')).toBe('no');
    await helm(['uninstall', 'tollgate', '-n', NS]);
  }, 120_000);

  it('the admission policy lets the controller write what it owns, and nothing else RBAC lets it write', async () => {
    await helm(['upgrade', '--install', 'tollgate', CHART, '-n', NS, '--create-namespace']);
    const APPS = 'vap-tenant';
    await kubectl(['create', 'namespace', APPS]);
    // Objects a tenant made, which the controller's RBAC would let it patch and delete.
    await kubectl(['create', 'serviceaccount', 'theirs', '-n', APPS]);
    await kubectl(['create', 'configmap', 'tollgate-ca', '-n', APPS, '--from-literal=ca.crt=theirs']);
    // As the controller's ServiceAccount, server-side dry runs: checked by RBAC and admission, nothing stored.
    const asController = (args: string[], input?: string) => cluster.current.kubectl(['--as', SA, ...args, '--dry-run=server'], input === undefined ? {} : { input });
    // What the deployer and the CA publisher write for a Gateway, as they render it.
    const gw: Gateway = {
      apiVersion: 'gateway.networking.k8s.io/v1',
      kind: 'Gateway',
      metadata: { name: 'edge', namespace: APPS, uid: '6f1c2b3a-0000-4000-8000-000000000001' },
      spec: { gatewayClassName: 'tollgate', listeners: [{ name: 'http', protocol: 'HTTP', port: 80 }] },
    };
    const rendered = render(gw, { proxyImage: 'registry.example.com/tollgate:1', snapshotService: `tollgate-controller.${NS}.svc:9978`, defaults: DEFAULT_PROXY_SETTINGS }).objects;
    expect(rendered.map((o) => o.kind)).toEqual(['ServiceAccount', 'Deployment', 'Service']);
    const proxyLabels = rendered[0]!.metadata!.labels!;
    const meta = (name: string) => ({ ...rendered[0]!.metadata, name });
    const rendering = JSON.stringify(rendered[1]);
    const deployment = (podSpec: Record<string, unknown> = {}) => {
      const d = JSON.parse(rendering) as { spec: { template: { spec: Record<string, unknown> } } };
      d.spec.template.spec = { ...d.spec.template.spec, ...podSpec };
      return d;
    };
    const [caConfigMap] = renderCaConfigMaps([gw], 'PEM');
    const apply = (obj: object) => asController(['apply', '--server-side', '--field-manager=tollgate', '--force-conflicts', '-f', '-'], JSON.stringify(obj));
    // The policy takes effect a moment after it is created: wait until it refuses.
    await until(async () => (await apply({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'x', namespace: APPS } })).code !== 0, { timeoutMs: 30_000 });

    const allowed: [string, () => Promise<{ code: number; stderr: string }>][] = [
      ...rendered.map((o): [string, () => Promise<{ code: number; stderr: string }>] => [`the proxy ${o.kind} as the deployer renders it`, () => apply(o)]),
      ['its tollgate-ca ConfigMap as the publisher renders it', () => apply({ ...caConfigMap!, metadata: { ...caConfigMap!.metadata, namespace: 'default' } })],
      ['its CA Secret', () => asController(['create', 'secret', 'generic', 'tollgate-ca', '-n', NS, '--from-literal=ca.crt=x'])],
    ];
    const denied: [string, RegExp, () => Promise<{ code: number; stderr: string }>][] = [
      ['a Deployment without its labels', /writes only proxy objects carrying its labels/, () => asController(['create', 'deployment', 'miner', '-n', APPS, '--image=registry.example.com/miner:1'])],
      ['a proxy object without a Gateway owner', /owned by a Gateway/, () => apply({ apiVersion: 'v1', kind: 'Service', metadata: { name: 'edge-tollgate', namespace: APPS, labels: proxyLabels }, spec: { ports: [{ port: 80 }] } })],
      ['taking over a tenant’s ServiceAccount', /does not change or delete objects it did not make/, () => apply({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: meta('theirs') })],
      ['deleting a tenant’s ServiceAccount', /does not change or delete objects it did not make/, () => asController(['delete', 'serviceaccount', 'theirs', '-n', APPS])],
      // (A namespaced sysctl is refused beside the host network before admission: without it.)
      ['a proxy Deployment on the host network', /without host namespaces/, () => apply(deployment({ hostNetwork: true, securityContext: { runAsNonRoot: true } }))],
      ['a proxy Deployment in the host PID namespace', /without host namespaces/, () => apply(deployment({ hostPID: true }))],
      ['a proxy Deployment with a host path', /without host namespaces, host paths/, () => {
        const d = deployment() as { spec: { template: { spec: { volumes: object[] } } } };
        d.spec.template.spec.volumes.push({ name: 'root', hostPath: { path: '/' } });
        return apply(d);
      }],
      ['a proxy Deployment running as another ServiceAccount', /runs as its own ServiceAccount/, () => apply(deployment({ serviceAccountName: 'default' }))],
      ['a privileged proxy container', /privilege escalation/, () => apply(deployment({ containers: [{ name: 'proxy', image: 'registry.example.com/tollgate:1', securityContext: { privileged: true } }] }))],
      ['a second container', /more containers/, () => apply(deployment({ initContainers: [{ name: 'fetch', image: 'registry.example.com/tools:1' }] }))],
      ['overwriting a tenant’s tollgate-ca ConfigMap', /the only ConfigMap the Tollgate controller writes is its own tollgate-ca/, () => apply(caConfigMap!)],
      ['a tollgate-ca ConfigMap without its labels', /the only ConfigMap the Tollgate controller writes/, () => apply({ ...caConfigMap!, metadata: { name: 'tollgate-ca', namespace: 'default' } })],
      ['another Secret in its namespace', /the only Secret the Tollgate controller writes is the snapshot stream CA/, () => asController(['create', 'secret', 'generic', 'stolen', '-n', NS, '--from-literal=a=b'])],
    ];
    for (const [what, call] of allowed) {
      const r = await call();
      expect(r.code, `${what}: ${r.stderr}`).toBe(0);
    }
    for (const [what, message, call] of denied) {
      const r = await call();
      expect(r.code, what).not.toBe(0);
      expect(r.stderr, what).toMatch(message);
      expect(r.stderr, what).toContain('ValidatingAdmissionPolicy');
    }
    // Nobody else is bound by it: the admin changes the same ServiceAccount.
    expect((await cluster.current.kubectl(['label', 'serviceaccount', 'theirs', '-n', APPS, 'x=y', '--dry-run=server'])).code).toBe(0);
    await helm(['uninstall', 'tollgate', '-n', NS]);
  }, 120_000);
});
