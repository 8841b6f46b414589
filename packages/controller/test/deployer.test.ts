// The deployer's passes against an in-memory API server: what is applied, when it is applied
// again, what is pruned, that only a leader writes, and that a failed pass heals by itself.
import type { KubernetesObject } from '@kubernetes/client-node';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import type { DeployedKind, DeployerApi, OwnedObject } from '../src/deployer/api.js';
import { Deployer, type DeployerPassResult } from '../src/deployer/deployer.js';
import { DEFAULT_PROXY_SETTINGS, render } from '../src/deployer/render.js';
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
  failApplies = 0;
  failLists = 0;
  async apply(obj: KubernetesObject): Promise<KubernetesObject> {
    const k = `${obj.kind}/${obj.metadata!.namespace}/${obj.metadata!.name}`;
    this.calls.push(`apply ${k}`);
    if (this.failApplies > 0) {
      this.failApplies--;
      throw Object.assign(new Error('refused'), { code: 500 });
    }
    this.stored.set(k, structuredClone(obj));
    return obj;
  }
  async listOwned(kind: DeployedKind): Promise<OwnedObject[]> {
    if (this.failLists > 0) {
      this.failLists--;
      throw Object.assign(new Error('unavailable'), { code: 503 });
    }
    return [...this.stored.values()].filter((o) => o.kind === kind && o.metadata?.labels?.['app.kubernetes.io/managed-by'] === 'tollgate').map((o) => ({ kind, namespace: o.metadata!.namespace!, name: o.metadata!.name! }));
  }
  async delete(o: OwnedObject): Promise<void> {
    const k = `${o.kind}/${o.namespace}/${o.name}`;
    this.calls.push(`delete ${k}`);
    this.stored.delete(k);
  }
}

/** A deployer whose passes can be awaited. */
function setup(leader = { value: true }) {
  const api = new FakeApi();
  const passes: DeployerPassResult[] = [];
  const waiters: { n: number; resolve: () => void }[] = [];
  const deployer = new Deployer(api, PARAMS, () => leader.value, log, (r) => {
    passes.push(r);
    for (const w of waiters.splice(0)) {
      if (passes.length >= w.n) w.resolve();
      else waiters.push(w);
    }
  }, { initialMs: 1, maxMs: 4 });
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

  it('prunes what no Gateway needs: a deleted Gateway, a Service without listeners', async () => {
    const { api, deployer } = setup();
    await deployer.start();
    deployer.submit([gateway('edge', [80]), gateway('old', [80])]);
    await deployer.idle();
    api.calls.length = 0;
    const noListener: Gateway = { ...gateway('edge', []), spec: { gatewayClassName: 'tollgate', listeners: [{ name: 'tls', port: 443, protocol: 'TLS' }] } };
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

  it('retries a failed apply with a backoff, without waiting for a change', async () => {
    const { api, deployer, passes, passCount } = setup();
    api.failApplies = 2;
    await deployer.start();
    deployer.submit([gateway('edge', [80])]);
    await passCount(2);
    await deployer.idle();
    expect(passes[0]).toMatchObject({ failed: 2 });
    expect(passes.at(-1)).toMatchObject({ failed: 0 });
    expect(api.stored.size).toBe(3);
    await deployer.stop();
  });

  it('a failed listing deletes nothing and is retried', async () => {
    const { api, deployer, passCount } = setup();
    await deployer.start();
    deployer.submit([gateway('edge', [80]), gateway('old', [80])]);
    await deployer.idle();
    api.failLists = 1;
    api.calls.length = 0;
    deployer.submit([gateway('edge', [80])]);
    // The failed pass reports nothing; the retry is the second pass overall.
    await passCount(2);
    await deployer.idle();
    expect(api.calls.filter((c) => c.startsWith('delete')).length).toBe(3);
    await deployer.stop();
  });
});
