// The Helm chart on a real kube-apiserver: lint, install into tollgate-system, the objects
// and the controller's permissions, uninstall.
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
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
  ];
  const clusterScoped = [
    'clusterrole.rbac.authorization.k8s.io/tollgate-controller',
    'clusterrolebinding.rbac.authorization.k8s.io/tollgate-controller',
    'gatewayclass.gateway.networking.k8s.io/tollgate',
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
      ['watch', 'gateways.gateway.networking.k8s.io', '-A'],
      ['watch', 'gatewayclasses.gateway.networking.k8s.io'],
      ['watch', 'referencegrants.gateway.networking.k8s.io', '-A'],
      ['watch', 'gatewaypolicies.tollgate.dev', '-A'],
      ['watch', 'endpointslices.discovery.k8s.io', '-A'],
      ['watch', 'services', '-A'],
      ['watch', 'namespaces'],
      // Certificates of HTTPS listeners (the controller selects type=kubernetes.io/tls).
      ['list', 'secrets', '-A'],
      ['watch', 'secrets', '-A'],
      ['get', 'gatewaypolicies.tollgate.dev', '-n', 'default'],
      ['update', 'gatewaypolicies.tollgate.dev', '--subresource=status', '-n', 'default'],
      ['update', 'httproutes.gateway.networking.k8s.io', '--subresource=status', '-n', 'default'],
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
});
