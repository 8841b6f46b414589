// spec.addresses on a real kube-apiserver (its Service range 198.19.0.0/16): the chart
// installed, the controller binary out of cluster with the chart ServiceAccount's token. An
// address the cluster can give becomes the ClusterIP of the Gateway's Service and its
// status.addresses; a new address replaces the Service (a ClusterIP cannot change in place);
// one the API server refuses (outside the range, another Service's) is Programmed False,
// AddressNotUsable, naming it, and is in no status; an IPAddress without a value gets the
// cluster's choice; a Hostname is not accepted. No node: no pod runs, so Programmed is
// otherwise Pending.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { installChart, startAsChart, type ControllerProcess, waitForObject } from './controller-process.js';
import { programmed, type Condition } from './lib/conditions.js';
import { run } from './lib/exec.js';
import { e2eAvailability } from './lib/tools.js';
import { useCluster } from './lib/use-cluster.js';

const availability = e2eAvailability();
const APPS = 'edge';
const SERVICE = 'gw-tollgate';
// In the API server's Service range, in its lower band (which the allocator leaves to addresses asked for by value).
const [FREE, OTHER, TAKEN] = ['198.19.0.230', '198.19.0.231', '198.19.0.232'] as const;
// Outside the Service range: the allocator refuses it.
const OUTSIDE = '198.18.240.1';

interface GatewayObject {
  metadata: { generation: number };
  status?: { addresses?: { type: string; value: string }[]; conditions?: (Condition & { observedGeneration?: number })[] };
}
interface ServiceObject {
  metadata: { uid: string };
  spec: { clusterIP?: string; clusterIPs?: string[] };
}
const accepted = (g: GatewayObject) => g.status?.conditions?.find((c) => c.type === 'Accepted');
/** Status written for the Gateway's current generation. */
const current = (g: GatewayObject) => (g.status?.conditions ?? []).length > 0 && g.status!.conditions!.every((c) => c.observedGeneration === g.metadata.generation);

const gateway = (addresses: object[] | undefined) =>
  JSON.stringify({
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'Gateway',
    metadata: { name: 'gw', namespace: APPS },
    spec: { gatewayClassName: 'tollgate', ...(addresses ? { addresses } : {}), listeners: [{ name: 'http', protocol: 'HTTP', port: 8080 }] },
  });

describe.skipIf(!availability.run)('Gateway spec.addresses (kube-apiserver)', () => {
  const cluster = useCluster({ tollgateCrds: false });
  const kubectl = (args: string[], input?: string) => run(cluster.current.tools.kubectl, args, { env: cluster.current.env, ...(input === undefined ? {} : { input }) });
  const apply = (doc: string) => kubectl(['apply', '-f', '-'], doc);
  const gw = (predicate: (g: GatewayObject) => boolean) => waitForObject<GatewayObject>(cluster.current, 'gateway', 'gw', APPS, (g) => current(g) && predicate(g));
  const service = (predicate: (s: ServiceObject) => boolean) => waitForObject<ServiceObject>(cluster.current, 'service', SERVICE, APPS, predicate);
  const serviceExists = async () => (await cluster.current.kubectl(['get', 'service', SERVICE, '-n', APPS])).code === 0;
  let controller: ControllerProcess;

  beforeAll(async () => {
    await installChart(cluster.current, [APPS]);
    controller = await startAsChart(cluster.current, 'controller-addresses', ['--proxy-image=registry.example.com/tollgate:e2e']);
  }, 120_000);

  afterAll(async () => {
    await controller?.stop('SIGKILL');
  });

  it('an address the cluster can give is the Service’s ClusterIP and the Gateway’s status.addresses', async () => {
    await apply(gateway([{ type: 'IPAddress', value: FREE }]));
    const svc = await service(() => true);
    expect(svc.spec.clusterIPs).toEqual([FREE]);
    const g = await gw((x) => x.status?.addresses?.length === 1);
    expect(g.status!.addresses).toEqual([{ type: 'IPAddress', value: FREE }]);
    expect(accepted(g)).toMatchObject({ status: 'True', reason: 'Accepted' });
    // Nothing about the address holds Programmed back: no pod runs here.
    expect(programmed(g)).toMatchObject({ status: 'False', reason: 'Pending' });
  });

  it('another address replaces the Service, and the status follows', async () => {
    const before = await service(() => true);
    await apply(gateway([{ value: OTHER }]));
    const after = await service((s) => s.spec.clusterIP === OTHER);
    expect(after.metadata.uid).not.toBe(before.metadata.uid);
    expect((await gw((x) => x.status?.addresses?.[0]?.value === OTHER)).status!.addresses).toEqual([{ type: 'IPAddress', value: OTHER }]);
  });

  it('an address outside the cluster’s Service range is AddressNotUsable, named with the API server’s reason, and in no status', async () => {
    const from = controller.lines.length;
    // The first IPv4 address is the Service's; the second of the family cannot be.
    await apply(gateway([{ value: OUTSIDE }, { value: FREE }]));
    // The Gateway's own check names the second address first; the API server's refusal of the
    // first joins it once the deployer has asked for the Service.
    const g = await gw((x) => programmed(x)?.reason === 'AddressNotUsable' && !x.status?.addresses && programmed(x)!.message.includes('the cluster refused'));
    expect(accepted(g)).toMatchObject({ status: 'True', reason: 'Accepted' });
    const message = programmed(g)!.message;
    expect(message).toContain(`spec.addresses ${OUTSIDE}: the cluster refused the address for Service ${APPS}/${SERVICE} (spec.clusterIPs: `);
    expect(message).toContain(`failed to allocate IP ${OUTSIDE}`);
    expect(message).toContain(`spec.addresses[1] ${FREE}: the Gateway's Service takes one IPv4 address, ${OUTSIDE} (spec.addresses[0]); remove one of them`);
    // The old Service went (its address is no longer asked for); none replaced it.
    expect(await serviceExists()).toBe(false);
    // Said once in the log, with its code, however often the deployer tries again.
    const line = await controller.waitForLog((l) => l.code === 'TG_CONTROLLER_ADDRESS_REFUSED', 30_000, from);
    expect(line).toMatchObject({ component: 'deployer', gateway: `${APPS}/gw` });
    expect(controller.lines.slice(from).filter((l) => l.code === 'TG_CONTROLLER_DEPLOY')).toEqual([]);
  });

  it('taking the unusable address out programs the usable one', async () => {
    await apply(gateway([{ value: FREE }]));
    await service((s) => s.spec.clusterIP === FREE);
    const g = await gw((x) => x.status?.addresses?.[0]?.value === FREE && programmed(x)?.reason === 'Pending');
    expect(g.status!.addresses).toEqual([{ type: 'IPAddress', value: FREE }]);
  });

  it('an address another Service holds is AddressNotUsable until that Service lets it go', async () => {
    await apply(JSON.stringify({ apiVersion: 'v1', kind: 'Service', metadata: { name: 'squatter', namespace: APPS }, spec: { clusterIP: TAKEN, ports: [{ port: 80 }] } }));
    await apply(gateway([{ value: TAKEN }]));
    const g = await gw((x) => programmed(x)?.reason === 'AddressNotUsable');
    expect(programmed(g)!.message).toContain(`spec.addresses ${TAKEN}: the cluster refused the address for Service ${APPS}/${SERVICE}`);
    expect(programmed(g)!.message).toContain('already allocated');
    // Freed: the deployer's next try (its backoff) takes it.
    await kubectl(['delete', 'service', 'squatter', '-n', APPS]);
    await service((s) => s.spec.clusterIP === TAKEN);
    await gw((x) => x.status?.addresses?.[0]?.value === TAKEN && programmed(x)?.reason === 'Pending');
  }, 90_000);

  it('an IPAddress without a value gets the cluster’s choice', async () => {
    await kubectl(['delete', 'gateway', 'gw', '-n', APPS]);
    await apply(gateway([{ type: 'IPAddress' }]));
    const svc = await service((s) => s.spec.clusterIP !== undefined && s.spec.clusterIP !== TAKEN);
    const g = await gw((x) => x.status?.addresses?.length === 1);
    expect(g.status!.addresses).toEqual([{ type: 'IPAddress', value: svc.spec.clusterIP }]);
    expect(programmed(g)?.reason).toBe('Pending');
  });

  it('a Hostname is not accepted (UnsupportedAddress), and the Gateway has no proxies', async () => {
    await apply(gateway([{ type: 'Hostname', value: 'gw.example.com' }]));
    const g = await gw((x) => accepted(x)?.reason === 'UnsupportedAddress');
    expect(accepted(g)).toMatchObject({ status: 'False', message: expect.stringContaining('spec.addresses[0]: type Hostname is not supported') as unknown });
    await controller.waitForLog((l) => l.msg === 'deleted (no Gateway needs it)' && l.kind === 'Service' && l.name === SERVICE);
    expect(await serviceExists()).toBe(false);
  });
});
