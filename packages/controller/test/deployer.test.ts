// The deployer's passes against an in-memory API server: what is applied, when it is applied
// again, what is pruned, that only a leader writes. That a failed pass heals by itself (failed
// applies, a failed listing) is proven on the real kube-apiserver, with faults from a proxy, in
// e2e/controller-api-faults.test.ts.
import type { KubernetesObject } from '@kubernetes/client-node';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import type { DeployedKind, DeployerApi, OwnedObject } from '../src/deployer/api.js';
import { Deployer, type DeployerPassResult } from '../src/deployer/deployer.js';
import { DEFAULT_PROXY_SETTINGS } from '../src/proxy-settings/defaults.js';
import { render } from '../src/deployer/render.js';
import type { Gateway } from '../src/types/gateway-api.js';

const PARAMS = { proxyImage: 'ghcr.io/tollgate-dev/tollgate:0.1.0', snapshotService: 'tollgate-controller.tollgate-system.svc:9978', defaults: DEFAULT_PROXY_SETTINGS };
const log = pino({ level: 'silent' });

const gateway = (name: string, ports: number[], uid = `uid-${name}`): Gateway => ({
  apiVersion: 'gateway.networking.k8s.io/v1',
  kind: 'Gateway',
  metadata: { name, namespace: 'apps', uid },
  spec: { gatewayClassName: 'tollgate', listeners: ports.map((port) => ({ name: `p${port}`, port, protocol: 'HTTP' })) },
});

class FakeApi implements DeployerApi {
  readonly stored = new Map<string, KubernetesObject>();
  readonly calls: string[] = [];
  /** Listings of an owned kind (not in `calls`: most tests look at writes only). */
  lists = 0;
  #rv = 0;
  /** Called with the stored object before the apply answers (a watch event that overtakes it). */
  beforeAnswer: ((stored: KubernetesObject) => void) | undefined;
  async apply(obj: KubernetesObject): Promise<KubernetesObject> {
    const k = `${obj.kind}/${obj.metadata!.namespace}/${obj.metadata!.name}`;
    this.calls.push(`apply ${k}`);
    const stored = structuredClone(obj);
    stored.metadata!.resourceVersion = String(++this.#rv);
    this.stored.set(k, stored);
    this.beforeAnswer?.(structuredClone(stored));
    return structuredClone(stored);
  }
  async listOwned(kind: DeployedKind): Promise<OwnedObject[]> {
    this.lists++;
    return [...this.stored.values()]
      .filter((o) => o.kind === kind && o.metadata?.labels?.['app.kubernetes.io/managed-by'] === 'tollgate' && o.metadata.labels['app.kubernetes.io/component'] === 'proxy')
      .map((o) => ({ kind, namespace: o.metadata!.namespace!, name: o.metadata!.name!, gateway: o.metadata!.labels!['gateway.networking.k8s.io/gateway-name'] ?? '' }));
  }
  async exists(kind: DeployedKind, namespace: string, name: string): Promise<boolean> {
    return this.stored.has(`${kind}/${namespace}/${name}`);
  }
  async delete(o: OwnedObject): Promise<void> {
    const k = `${o.kind}/${o.namespace}/${o.name}`;
    this.calls.push(`delete ${k}`);
    this.stored.delete(k);
  }
}

/** A deployer whose passes can be awaited. */
function setup(leader = { value: true }, watchEpoch?: () => number | null) {
  const api = new FakeApi();
  const passes: DeployerPassResult[] = [];
  const waiters: { n: number; resolve: () => void }[] = [];
  const onPass = (r: DeployerPassResult) => {
    passes.push(r);
    for (const w of waiters.splice(0)) {
      if (passes.length >= w.n) w.resolve();
      else waiters.push(w);
    }
  };
  const deployer = new Deployer({ api, params: PARAMS, isLeader: () => leader.value, log, onPass, retry: { initialMs: 1, maxMs: 4 }, ...(watchEpoch ? { watchEpoch } : {}) });
  const passCount = (n: number) => (passes.length >= n ? Promise.resolve() : new Promise<void>((resolve) => waiters.push({ n, resolve })));
  return { api, deployer, passes, passCount, leader };
}

describe('render', () => {
  it('a listener added or removed changes the Service, not the pod template (the proxies reconfigure without a rollout)', () => {
    const objects = (ports: number[]) => render(gateway('edge', ports), PARAMS).objects;
    const template = (ports: number[]) => (objects(ports).find((o) => o.kind === 'Deployment') as { spec: { template: unknown } }).spec.template;
    const servicePorts = (ports: number[]) => (objects(ports).find((o) => o.kind === 'Service') as { spec: { ports: { port: number }[] } }).spec.ports.map((p) => p.port);
    expect(template([8080, 80])).toEqual(template([8080]));
    expect(template([443])).toEqual(template([9000]));
    expect(servicePorts([8080, 80])).toEqual([80, 8080]);
  });
  it('a changed replicas setting changes the replicas, not the pod template (no rollout)', () => {
    const withReplicas = (n: string): Gateway => ({ ...gateway('edge', [80]), spec: { ...gateway('edge', [80]).spec, infrastructure: { annotations: { 'tollgate.dev/replicas': n, 'example.com/x': 'y' } } } });
    const dep = (n: string) => render(withReplicas(n), PARAMS).objects.find((o) => o.kind === 'Deployment') as { spec: { replicas: number; template: unknown } };
    expect(dep('2').spec.replicas).toBe(2);
    expect(dep('3').spec.replicas).toBe(3);
    expect(dep('3').spec.template).toEqual(dep('2').spec.template);
    expect(JSON.stringify(dep('2').spec.template)).toContain('example.com/x');
  });
});

describe('Deployer', () => {
  it('applies the three objects of a Gateway, then only what changed', async () => {
    const { api, deployer } = setup();
    await deployer.start();
    deployer.submit([gateway('edge', [80])]);
    await deployer.idle();
    expect(api.calls).toEqual(['apply ServiceAccount/apps/edge-tollgate', 'apply Deployment/apps/edge-tollgate', 'apply Service/apps/edge-tollgate']);

    api.calls.length = 0;
    deployer.submit([gateway('edge', [80])]);
    await deployer.idle();
    expect(api.calls).toEqual([]);

    // A new listener port changes the Service only: the proxies take it from their snapshot.
    deployer.submit([gateway('edge', [80, 8080])]);
    await deployer.idle();
    expect(api.calls).toEqual(['apply Service/apps/edge-tollgate']);
    await deployer.stop();
  });

  it('puts back an object deleted behind its back, on the next pass', async () => {
    const { api, deployer } = setup();
    await deployer.start();
    deployer.submit([gateway('edge', [80])]);
    await deployer.idle();
    api.stored.delete('Deployment/apps/edge-tollgate');
    api.calls.length = 0;
    deployer.submit([gateway('edge', [80])]);
    await deployer.idle();
    expect(api.calls).toEqual(['apply Deployment/apps/edge-tollgate']);
    await deployer.stop();
  });

  it('while the watch of its objects holds, a pass that wants what is in place lists nothing; news from the watch or a new watch makes it list again', async () => {
    const epoch = { value: 1 as number | null };
    const { api, deployer, passes } = setup(undefined, () => epoch.value);
    await deployer.start();
    deployer.submit([gateway('edge', [80])]);
    await deployer.idle();
    expect(api.lists).toBe(3);
    expect(api.stored.size).toBe(3);
    const settled = async (g: Gateway[], lists: number, calls: string[] = []) => {
      api.lists = 0;
      api.calls.length = 0;
      const before = passes.length;
      deployer.submit(g);
      await deployer.idle();
      expect(passes.length).toBe(before + 1);
      expect(api.lists).toBe(lists);
      expect(api.calls).toEqual(calls);
    };
    // A reconcile of anything else (a route added): the same Gateway, another object of it.
    await settled([gateway('edge', [80])], 0);
    await settled([gateway('edge', [80])], 0);

    // Someone else's object with the deployer's labels, which only the watch saw: the next pass lists and prunes it.
    const stray = { apiVersion: 'v1', kind: 'Service', metadata: { name: 'stray-tollgate', namespace: 'apps', labels: { 'app.kubernetes.io/managed-by': 'tollgate', 'app.kubernetes.io/component': 'proxy', 'gateway.networking.k8s.io/gateway-name': 'stray' } } };
    api.stored.set('Service/apps/stray-tollgate', stray);
    deployer.observed('Service', 'add', stray);
    await settled([gateway('edge', [80])], 3, ['delete Service/apps/stray-tollgate']);
    await settled([gateway('edge', [80])], 0);

    // A Gateway that renders something else is a pass like any.
    await settled([gateway('edge', [80, 8080])], 3, ['apply Service/apps/edge-tollgate']);
    await settled([gateway('edge', [80, 8080])], 0);

    // The watch listed again (it may have missed a change meanwhile): list once.
    epoch.value = 2;
    await settled([gateway('edge', [80, 8080])], 3);
    await settled([gateway('edge', [80, 8080])], 0);

    // No watch now: every pass lists, and a deletion behind its back is put back.
    epoch.value = null;
    api.stored.delete('Deployment/apps/edge-tollgate');
    await settled([gateway('edge', [80, 8080])], 3, ['apply Deployment/apps/edge-tollgate']);
    await settled([gateway('edge', [80, 8080])], 3);
    await deployer.stop();
  });

  it('a change the watch reports during a pass leaves that pass unsettled: the next one lists', async () => {
    const { api, deployer } = setup(undefined, () => 1);
    await deployer.start();
    // Someone else's object with the deployer's labels, made after the pass listed (while an apply is on its way).
    const stray = { apiVersion: 'v1', kind: 'Service', metadata: { name: 'stray-tollgate', namespace: 'apps', labels: { 'app.kubernetes.io/managed-by': 'tollgate', 'app.kubernetes.io/component': 'proxy', 'gateway.networking.k8s.io/gateway-name': 'stray' } } };
    api.beforeAnswer = () => {
      api.beforeAnswer = undefined;
      api.stored.set('Service/apps/stray-tollgate', stray);
      deployer.observed('Service', 'add', stray);
    };
    deployer.submit([gateway('edge', [80])]);
    await deployer.idle();
    expect(api.stored.has('Service/apps/stray-tollgate')).toBe(true);
    api.lists = 0;
    api.calls.length = 0;
    deployer.submit([gateway('edge', [80])]);
    await deployer.idle();
    expect(api.lists).toBe(3);
    expect(api.calls).toEqual(['delete Service/apps/stray-tollgate']);
    await deployer.stop();
  });

  it('puts back at once an object the watch saw deleted or edited by someone else; ignores its own applies', async () => {
    const { api, deployer, passes } = setup();
    await deployer.start();
    deployer.submit([gateway('edge', [80])]);
    await deployer.idle();
    api.calls.length = 0;

    // The watch reports our own apply (same object): nothing to do.
    deployer.observed('Service', 'update', structuredClone(api.stored.get('Service/apps/edge-tollgate')!));
    // A status update of the Deployment (no spec change) is not an edit either, nor the
    // Deployment controller's revision annotation.
    const rolled = structuredClone(api.stored.get('Deployment/apps/edge-tollgate')!);
    rolled.metadata!.annotations = { ...rolled.metadata!.annotations, 'deployment.kubernetes.io/revision': '2' };
    deployer.observed('Deployment', 'update', { ...rolled, status: { readyReplicas: 1 } } as KubernetesObject);
    await deployer.idle();
    expect(api.calls).toEqual([]);

    const deleted = api.stored.get('Deployment/apps/edge-tollgate')!;
    api.stored.delete('Deployment/apps/edge-tollgate');
    const before = passes.length;
    deployer.observed('Deployment', 'delete', deleted);
    await deployer.idle();
    expect(passes.length).toBe(before + 1);
    expect(api.calls).toEqual(['apply Deployment/apps/edge-tollgate']);

    api.calls.length = 0;
    const edited = structuredClone(api.stored.get('Service/apps/edge-tollgate')!) as KubernetesObject & { spec: { ports: unknown[] } };
    edited.spec.ports = [];
    deployer.observed('Service', 'update', edited);
    await deployer.idle();
    expect(api.calls).toEqual(['apply Service/apps/edge-tollgate']);
    await deployer.stop();
  });

  it('a watch event of its own apply that arrives before the apply answers starts no pass', async () => {
    const { api, deployer, passes } = setup();
    await deployer.start();
    api.beforeAnswer = (stored) => deployer.observed(stored.kind as 'Service', 'add', stored);
    deployer.submit([gateway('edge', [80])]);
    await deployer.idle();
    expect(passes).toHaveLength(1);
    // One that differs from what the apply stored (an edit made meanwhile) is judged after the answer.
    api.calls.length = 0;
    api.beforeAnswer = (stored) => {
      api.beforeAnswer = undefined;
      deployer.observed('Service', 'update', { ...stored, metadata: { ...stored.metadata, resourceVersion: 'older', labels: {} } });
    };
    deployer.submit([gateway('edge', [80, 8080])]);
    await deployer.idle();
    expect(api.calls).toEqual(['apply Service/apps/edge-tollgate', 'apply Service/apps/edge-tollgate']);
    await deployer.stop();
  });

  it('keeps the objects of a Gateway refused for its parameters: neither applied nor pruned', async () => {
    const { api, deployer } = setup();
    await deployer.start();
    deployer.submit([gateway('edge', [80]), gateway('old', [80])]);
    await deployer.idle();
    api.calls.length = 0;
    deployer.submit([gateway('edge', [80])], { keep: [gateway('old', [80, 9090])] });
    await deployer.idle();
    expect(api.calls).toEqual([]);
    expect(api.stored.size).toBe(6);
    await deployer.stop();
  });

  it('never takes over an object it did not make: the Gateway deploys nothing and says why until the name is free', async () => {
    const { api, deployer, passCount, passes } = setup();
    // Someone else's Deployment with the name the proxies of `edge` would get.
    api.stored.set('Deployment/apps/edge-tollgate', { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'edge-tollgate', namespace: 'apps', labels: { app: 'theirs' } } });
    await deployer.start();
    deployer.submit([gateway('edge', [80]), gateway('other', [80])]);
    await passCount(1);
    expect(deployer.conflict('apps', 'edge')).toMatch(/^Deployment apps\/edge-tollgate exists and was not made by Tollgate for this Gateway/);
    expect(deployer.conflict('apps', 'other')).toBeUndefined();
    // Nothing of edge was written (not even its free ServiceAccount and Service); other was.
    expect(api.calls.filter((c) => c.includes('edge-tollgate'))).toEqual([]);
    expect(api.stored.get('Deployment/apps/edge-tollgate')!.metadata!.labels).toEqual({ app: 'theirs' });
    expect(api.calls.filter((c) => c.includes('other-tollgate')).length).toBe(3);
    // Its owner deletes it: the retry (no change needed) deploys edge.
    api.stored.delete('Deployment/apps/edge-tollgate');
    await passCount(passes.length + 1);
    await deployer.idle();
    expect(deployer.conflict('apps', 'edge')).toBeUndefined();
    expect(api.stored.get('Deployment/apps/edge-tollgate')!.metadata!.labels).toMatchObject({ 'app.kubernetes.io/managed-by': 'tollgate' });
    await deployer.stop();
  });

  it('two Gateways whose proxies get the same name: the first keeps it, the second is told which Gateway has it', async () => {
    const { api, deployer, passCount } = setup();
    const named = (name: string, cls: string): Gateway => ({ ...gateway(name, [80]), spec: { ...gateway(name, [80]).spec, gatewayClassName: cls } });
    await deployer.start();
    deployer.submit([named('a-b', 'c'), named('a', 'b-c')]);
    await passCount(1);
    expect(deployer.conflict('apps', 'a-b')).toBeUndefined();
    expect(deployer.conflict('apps', 'a')).toBe('ServiceAccount apps/a-b-c runs the proxies of Gateway apps/a-b: both Gateways\' proxies get that name (<gateway>-<class>); rename one of the Gateways');
    expect(api.stored.get('Deployment/apps/a-b-c')!.metadata!.labels!['gateway.networking.k8s.io/gateway-name']).toBe('a-b');
    // Also once the first one's objects exist (listed as its own).
    deployer.submit([named('a', 'b-c'), named('a-b', 'c')]);
    await passCount(2);
    expect(deployer.conflict('apps', 'a')).toMatch(/runs the proxies of Gateway apps\/a-b/);
    expect(api.stored.get('Deployment/apps/a-b-c')!.metadata!.labels!['gateway.networking.k8s.io/gateway-name']).toBe('a-b');
    await deployer.stop();
  });

  it('renders each Gateway with the settings its parameters give', async () => {
    const { api, deployer } = setup();
    await deployer.start();
    deployer.submit([gateway('edge', [80]), gateway('big', [80])], { settings: (gw) => (gw.metadata.name === 'big' ? { ...DEFAULT_PROXY_SETTINGS, replicas: 4 } : DEFAULT_PROXY_SETTINGS) });
    await deployer.idle();
    const replicas = (name: string) => (api.stored.get(`Deployment/apps/${name}-tollgate`) as { spec: { replicas: number } }).spec.replicas;
    expect([replicas('edge'), replicas('big')]).toEqual([1, 4]);
    await deployer.stop();
  });

  it('prunes what no Gateway needs: a deleted Gateway, a Service without listeners', async () => {
    const { api, deployer } = setup();
    await deployer.start();
    deployer.submit([gateway('edge', [80]), gateway('old', [80])]);
    await deployer.idle();
    api.calls.length = 0;
    const noListener: Gateway = { ...gateway('edge', []), spec: { gatewayClassName: 'tollgate', listeners: [{ name: 'tcp', port: 443, protocol: 'TCP' }] } };
    deployer.submit([noListener]);
    await deployer.idle();
    expect(api.calls.filter((c) => c.startsWith('delete')).sort()).toEqual([
      'delete Deployment/apps/old-tollgate',
      'delete Service/apps/edge-tollgate',
      'delete Service/apps/old-tollgate',
      'delete ServiceAccount/apps/old-tollgate',
    ]);
    expect([...api.stored.keys()].sort()).toEqual(['Deployment/apps/edge-tollgate', 'ServiceAccount/apps/edge-tollgate']);
    await deployer.stop();
  });

  it('writes nothing while not leader; applies once started as leader', async () => {
    const { api, deployer, leader } = setup({ value: false });
    deployer.submit([gateway('edge', [80])]);
    await deployer.idle();
    expect(api.calls).toEqual([]);
    leader.value = true;
    await deployer.start();
    await deployer.idle();
    expect(api.stored.size).toBe(3);
    await deployer.stop();
  });
});
