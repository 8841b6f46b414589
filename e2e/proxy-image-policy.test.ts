// Who chooses what the proxies run, on a real kube-apiserver: the chart installed, the
// controller binary out of cluster with the chart ServiceAccount's token and
// --gateway-proxy-images allowing one path (registry.example.com/canary/). The GatewayClass's
// parameters set the image for every Gateway of the class (the admin's); a Gateway may name an
// image only under the allowed path; any other choice (annotation or its own parameters
// ConfigMap, a look-alike path, a pod annotation loosening the security profile) refuses the
// Gateway (Accepted False, InvalidParameters, naming the field) and never reaches a Deployment.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { installChart, startAsChart, type ControllerProcess, waitForObject } from './controller-process.js';
import type { Condition } from './lib/conditions.js';
import { run } from './lib/exec.js';
import { SYSTEM_NAMESPACE as NS } from './lib/chart.js';
import { e2eAvailability } from './lib/tools.js';
import { useCluster } from './lib/use-cluster.js';

const availability = e2eAvailability();
const APPS = 'tenant';
/** The controller's --proxy-image, the GatewayClass's parameter, a Gateway's allowed choice. */
const [DEFAULT_IMAGE, CLASS_IMAGE, CANARY] = ['registry.example.com/tollgate:e2e', 'registry.example.com/platform/tollgate:0.2.0', 'registry.example.com/canary/tollgate:0.3.0-rc.1'] as const;

interface GatewayObject {
  status?: { conditions?: Condition[] };
}
interface DeploymentObject {
  spec?: { template: { spec?: { containers: { image?: string }[] } } };
}
const accepted = (g: GatewayObject) => g.status?.conditions?.find((c) => c.type === 'Accepted');
const imageOf = (d: DeploymentObject) => d.spec?.template.spec?.containers[0]?.image;

const gateway = (name: string, infrastructure: object = {}) =>
  JSON.stringify({
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'Gateway',
    metadata: { name, namespace: APPS },
    spec: { gatewayClassName: 'tollgate', infrastructure, listeners: [{ name: 'http', protocol: 'HTTP', port: 80 }] },
  });
const parameters = (name: string, namespace: string, data: Record<string, string>) =>
  JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace, labels: { 'tollgate.dev/parameters': 'true' } }, data });

describe.skipIf(!availability.run)('the proxy image is the cluster admin’s (kube-apiserver)', () => {
  const cluster = useCluster({ tollgateCrds: false });
  const kubectl = (args: string[], input?: string) => run(cluster.current.tools.kubectl, args, { env: cluster.current.env, ...(input === undefined ? {} : { input }) });
  const apply = (...docs: string[]) => kubectl(['apply', '-f', '-'], docs.join('\n---\n'));
  const deployment = (gw: string, predicate: (d: DeploymentObject) => boolean = () => true) => waitForObject<DeploymentObject>(cluster.current, 'deployment', `${gw}-tollgate`, APPS, predicate);
  const refused = (gw: string, naming = '') => waitForObject<GatewayObject>(cluster.current, 'gateway', gw, APPS, (g) => accepted(g)?.reason === 'InvalidParameters' && accepted(g)!.message.includes(naming));
  const exists = async (gw: string) => (await cluster.current.kubectl(['get', 'deployment', `${gw}-tollgate`, '-n', APPS])).code === 0;
  let controller: ControllerProcess;

  beforeAll(async () => {
    await installChart(cluster.current, [APPS]);
    controller = await startAsChart(cluster.current, 'controller-image-policy', [`--proxy-image=${DEFAULT_IMAGE}`, '--gateway-proxy-images=registry.example.com/canary/']);
  }, 120_000);

  afterAll(async () => {
    await controller?.stop('SIGKILL');
  });

  it('without a choice, a Gateway runs the controller’s image; the GatewayClass’s parameters change it for every Gateway', async () => {
    await apply(gateway('plain'));
    expect(imageOf(await deployment('plain'))).toBe(DEFAULT_IMAGE);
    await apply(parameters('proxy-defaults', NS, { image: CLASS_IMAGE }));
    await kubectl(['patch', 'gatewayclass', 'tollgate', '--type=merge', '-p', JSON.stringify({ spec: { parametersRef: { group: '', kind: 'ConfigMap', name: 'proxy-defaults', namespace: NS } } })]);
    await deployment('plain', (d) => imageOf(d) === CLASS_IMAGE);
  });

  it('a Gateway may name an image the allow-list allows', async () => {
    await apply(gateway('canary', { annotations: { 'tollgate.dev/image': CANARY } }));
    expect(imageOf(await deployment('canary', (d) => imageOf(d) === CANARY))).toBe(CANARY);
  });

  it('any other choice refuses the Gateway, naming the field, and no proxy runs it', async () => {
    const choices: Record<string, { infrastructure: object; field: string }> = {
      // A path that only starts like the allowed one.
      lookalike: { infrastructure: { annotations: { 'tollgate.dev/image': 'registry.example.com/canary-builds/tollgate:1' } }, field: 'spec.infrastructure.annotations["tollgate.dev/image"] "registry.example.com/canary-builds/tollgate:1"' },
      // Another registry whose name starts like the allowed one.
      'other-registry': { infrastructure: { annotations: { 'tollgate.dev/image': 'registry.example.com.evil.io/canary/tollgate:1' } }, field: 'spec.infrastructure.annotations["tollgate.dev/image"]' },
      // The same choice through the Gateway's own parameters ConfigMap.
      'own-params': { infrastructure: { parametersRef: { group: '', kind: 'ConfigMap', name: 'own-image' } }, field: `ConfigMap ${APPS}/own-image: key image "docker.io/someone/tollgate:latest"` },
      // A pod annotation that the API server turns into the container's AppArmor profile.
      unconfined: { infrastructure: { annotations: { 'container.apparmor.security.beta.kubernetes.io/proxy': 'unconfined' } }, field: 'spec.infrastructure.annotations["container.apparmor.security.beta.kubernetes.io/proxy"]' },
    };
    await apply(parameters('own-image', APPS, { image: 'docker.io/someone/tollgate:latest' }));
    // Applied in this order, so the reconcile that deploys the last Gateway saw every refused one.
    await apply(...Object.entries(choices).map(([name, c]) => gateway(name, c.infrastructure)), gateway('witness'));
    await deployment('witness');
    for (const [name, { field }] of Object.entries(choices)) {
      const condition = accepted(await refused(name, field))!;
      expect(condition.status, name).toBe('False');
      expect(condition.message, name).toContain(field);
      expect(await exists(name), `${name} has a Deployment`).toBe(false);
    }
    expect(accepted(await refused('lookalike'))!.message).toContain('allowed: registry.example.com/canary/');
  });

  it('a Gateway that changes to a refused image keeps the proxies it had, and gets the admin’s image back once the choice is gone', async () => {
    await apply(gateway('canary', { annotations: { 'tollgate.dev/image': 'docker.io/attacker/miner:latest' } }));
    expect(accepted(await refused('canary', 'docker.io/attacker/miner'))!.message).toContain('"docker.io/attacker/miner:latest": the proxy image is the cluster admin\'s choice');
    expect(imageOf(await deployment('canary'))).toBe(CANARY);
    await apply(gateway('canary'));
    await deployment('canary', (d) => imageOf(d) === CLASS_IMAGE);
    expect(controller.lines.some((l) => JSON.stringify(l).includes('docker.io/attacker/miner') && l.msg === 'updated')).toBe(false);
  });
});
