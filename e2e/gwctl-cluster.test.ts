// gwctl's target resolution on a real kube-apiserver: the Gateway is read first (a Gateway that
// does not exist is exit 12), then its pods, created through the API with their status (phase,
// Ready condition) set through the status subresource, as a kubelet would. There is no
// kubelet, so a port-forward cannot succeed: the test checks that gwctl picks the Running and
// Ready pod and then reports the refused port-forward (exit 6) with the API server's reason;
// the success path runs against a standalone proxy in packages/gwctl/test.
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { exec, run } from './lib/exec.js';
import { REPO_ROOT, e2eAvailability } from './lib/tools.js';
import { useCluster } from './lib/use-cluster.js';

const availability = e2eAvailability();
const GWCTL = join(REPO_ROOT, 'packages/gwctl/bin/gwctl.js');

interface PodSpec {
  name: string;
  namespace: string;
  labels: Record<string, string>;
  /** Status written through the status subresource; absent: left Pending as created. */
  status?: { phase: string; ready: boolean };
}

describe.skipIf(!availability.run)('gwctl target resolution on kube-apiserver', () => {
  const cluster = useCluster({ tollgateCrds: false });
  const kubectl = (args: string[], input?: string) => run(cluster.current.tools.kubectl, args, { env: cluster.current.env, ...(input === undefined ? {} : { input }) });
  const gwctl = (args: string[]) => exec(process.execPath, [GWCTL, ...args], { env: { PATH: process.env.PATH, HOME: cluster.current.dir, KUBECONFIG: cluster.current.kubeconfig } });

  async function createPod(p: PodSpec): Promise<void> {
    const pod = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: p.name, namespace: p.namespace, labels: p.labels },
      spec: { containers: [{ name: 'proxy', image: 'ghcr.io/tollgate-dev/tollgate-proxy:test', ports: [{ containerPort: 15000, name: 'admin' }] }] },
    };
    await kubectl(['create', '-f', '-'], JSON.stringify(pod));
    if (!p.status) return;
    const now = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
    const status = {
      status: {
        phase: p.status.phase,
        podIP: '10.244.0.10',
        conditions: [{ type: 'Ready', status: p.status.ready ? 'True' : 'False', lastTransitionTime: now }],
      },
    };
    await kubectl(['patch', 'pod', p.name, '-n', p.namespace, '--subresource=status', '--type=merge', '-p', JSON.stringify(status)]);
  }

  const gw = (name: string) => ({ 'gateway.networking.k8s.io/gateway-name': name });

  async function createGateway(name: string, namespace: string): Promise<void> {
    const gateway = {
      apiVersion: 'gateway.networking.k8s.io/v1',
      kind: 'Gateway',
      metadata: { name, namespace },
      spec: { gatewayClassName: 'tollgate', listeners: [{ name: 'http', port: 80, protocol: 'HTTP' }] },
    };
    await kubectl(['create', '-f', '-'], JSON.stringify(gateway));
  }

  beforeAll(async () => {
    if (!existsSync(join(REPO_ROOT, 'packages/gwctl/dist/cli.js'))) throw new Error('packages/gwctl/dist is missing: run `pnpm build` first');
    for (const ns of ['edge', 'tollgate-system']) await kubectl(['create', 'namespace', ns]);
    for (const name of ['public', 'starting', 'other', 'empty', 'pair']) await createGateway(name, 'edge');
    await createPod({ name: 'public-a', namespace: 'edge', labels: gw('public'), status: { phase: 'Running', ready: false } });
    await createPod({ name: 'public-b', namespace: 'edge', labels: gw('public'), status: { phase: 'Running', ready: true } });
    await createPod({ name: 'public-c', namespace: 'edge', labels: gw('public'), status: { phase: 'Pending', ready: false } });
    await createPod({ name: 'starting-a', namespace: 'edge', labels: gw('starting') });
    await createPod({ name: 'starting-b', namespace: 'edge', labels: gw('starting'), status: { phase: 'Running', ready: false } });
    await createPod({ name: 'other-a', namespace: 'edge', labels: gw('other'), status: { phase: 'Running', ready: true } });
    await createPod({ name: 'pair-a', namespace: 'edge', labels: gw('pair'), status: { phase: 'Running', ready: true } });
    await createPod({ name: 'pair-b', namespace: 'edge', labels: gw('pair'), status: { phase: 'Running', ready: true } });
    await createPod({ name: 'pair-c', namespace: 'edge', labels: gw('pair'), status: { phase: 'Running', ready: false } });
  }, 120_000);

  it('the status subresource really holds the states gwctl reads', async () => {
    const out = await kubectl(['get', 'pods', '-n', 'edge', '-o', 'jsonpath={range .items[*]}{.metadata.name}={.status.phase}/{.status.conditions[?(@.type=="Ready")].status}{"\\n"}{end}']);
    expect(out.trim().split('\n').sort()).toEqual(['other-a=Running/True', 'pair-a=Running/True', 'pair-b=Running/True', 'pair-c=Running/False', 'public-a=Running/False', 'public-b=Running/True', 'public-c=Pending/False', 'starting-a=Pending/', 'starting-b=Running/False']);
  });

  it('picks the Running and Ready pod of the gateway and reports the refused port-forward with exit 6', async () => {
    const r = await gwctl(['config', 'all', 'gateway/public', '-n', 'edge']);
    expect(r.stdout).toBe('');
    // No kubelet: the API server refuses the tunnel because the pod is on no node.
    expect(r.stderr).toBe('gwctl: port-forward to pod edge/public-b port 15000 failed: pod public-b does not have a host assigned (HTTP 400)\n');
    expect(r.code).toBe(6);
  });

  it('the same for trace and log, and with the proxy word', async () => {
    for (const args of [['trace', 'gateway/public', '-n', 'edge', '--raw'], ['proxy', 'log', 'gateway/public', '-n', 'edge'], ['config', 'backends', 'gateway/other', '-n', 'edge']]) {
      const r = await gwctl(args);
      expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(6);
      expect(r.stderr).toMatch(new RegExp(`^gwctl: port-forward to pod edge/(public-b|other-a) port 15000 failed: `));
    }
  });

  it('budgets asks every Running and Ready proxy of the gateway, each through its own port-forward', async () => {
    const r = await gwctl(['budgets', 'gateway/pair', '-n', 'edge']);
    expect(r.stdout).toBe('');
    // Both Ready pods are tried (pair-c is not Ready); none can be reached without a kubelet.
    expect(r.stderr).toBe(
      'gwctl: warning: port-forward to pod edge/pair-b port 15000 failed: pod pair-b does not have a host assigned (HTTP 400); its budgets are not included\n' +
        'gwctl: port-forward to pod edge/pair-a port 15000 failed: pod pair-a does not have a host assigned (HTTP 400)\n',
    );
    expect(r.code).toBe(6);
    const none = await gwctl(['budgets', 'gateway/starting', '-n', 'edge']);
    expect(none.code).toBe(5);
    const missing = await gwctl(['budgets', 'gateway/nope', '-n', 'edge']);
    expect(missing.code).toBe(12);
  });

  it('no Ready pod: exit 5 naming the namespace, the selector and the pods found', async () => {
    const r = await gwctl(['config', 'backends', 'gateway/starting', '-n', 'edge']);
    expect(r.code).toBe(5);
    expect(r.stderr).toBe(
      'gwctl: no Running and Ready gateway/starting pod in namespace "edge" with the label gateway.networking.k8s.io/gateway-name=starting (2 found: starting-a Pending, starting-b Running but not Ready)\n',
    );
  });

  it('a Gateway that does not exist (or not in that namespace, the context\'s "default" without -n): exit 12 saying so', async () => {
    const nope = await gwctl(['config', 'all', 'gateway/nope', '-n', 'edge']);
    expect(nope.stdout).toBe('');
    expect(nope.stderr).toBe('gwctl: Gateway nope not found in namespace "edge" (kubectl get gateways -A lists them; -n sets the namespace)\n');
    expect(nope.code).toBe(12);
    const wrongNamespace = await gwctl(['log', 'gateway/public']);
    expect(wrongNamespace.stderr).toBe('gwctl: Gateway public not found in namespace "default" (kubectl get gateways -A lists them; -n sets the namespace)\n');
    expect(wrongNamespace.code).toBe(12);
    const noNamespace = await gwctl(['trace', 'gateway/public', '-n', 'nosuch', '--raw']);
    expect(noNamespace.stderr).toBe('gwctl: Gateway public not found in namespace "nosuch" (kubectl get gateways -A lists them; -n sets the namespace)\n');
    expect(noNamespace.code).toBe(12);
  });

  it('a Gateway that exists without any proxy pod: exit 5 naming namespace and selector', async () => {
    const r = await gwctl(['config', 'all', 'gateway/empty', '-n', 'edge']);
    expect(r.code).toBe(5);
    expect(r.stderr).toBe(
      'gwctl: no gateway/empty pod in namespace "edge" has the label gateway.networking.k8s.io/gateway-name=empty (the Gateway exists; its Programmed condition says why it has no proxy: kubectl get gateway empty -n edge)\n',
    );
  });

  it('controller log looks in tollgate-system by the chart labels; a Ready controller pod is port-forwarded on 9095', async () => {
    const none = await gwctl(['controller', 'log']);
    expect(none.code).toBe(5);
    expect(none.stderr).toBe('gwctl: no controller pod in namespace "tollgate-system" has the label app.kubernetes.io/name=tollgate,app.kubernetes.io/component=controller (wrong namespace? use -n)\n');
    await createPod({
      name: 'tollgate-controller-0',
      namespace: 'tollgate-system',
      labels: { 'app.kubernetes.io/name': 'tollgate', 'app.kubernetes.io/component': 'controller', 'app.kubernetes.io/instance': 'tollgate' },
      status: { phase: 'Running', ready: true },
    });
    const r = await gwctl(['controller', 'log', '--set', 'deployer=debug']);
    expect(r.code).toBe(6);
    expect(r.stderr).toMatch(/^gwctl: port-forward to pod tollgate-system\/tollgate-controller-0 port 9095 failed: .+\n$/);
  });

  it('the single-file gwctl (pnpm gwctl:build) resolves the same way with its bundled Kubernetes client', async () => {
    const out = mkdtempSync(join(tmpdir(), 'gwctl-bundle-'));
    try {
      await run(process.execPath, [join(REPO_ROOT, 'scripts/gwctl-build.mjs'), '--out', out]);
      const bundled = (args: string[]) => exec(join(out, 'gwctl'), args, { env: { PATH: dirname(process.execPath), HOME: cluster.current.dir, KUBECONFIG: cluster.current.kubeconfig } });
      const nope = await bundled(['config', 'all', 'gateway/nope', '-n', 'edge']);
      expect(nope.stderr).toBe('gwctl: Gateway nope not found in namespace "edge" (kubectl get gateways -A lists them; -n sets the namespace)\n');
      expect(nope.code).toBe(12);
      // The port-forward is a WebSocket (the bundled ws) the API server refuses: no kubelet.
      const refused = await bundled(['trace', 'gateway/public', '-n', 'edge', '--raw']);
      expect(refused.stderr).toBe('gwctl: port-forward to pod edge/public-b port 15000 failed: pod public-b does not have a host assigned (HTTP 400)\n');
      expect(refused.code).toBe(6);
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  }, 120_000);

  it('a context that is not in the kubeconfig: exit 3', async () => {
    const r = await gwctl(['config', 'all', 'gateway/public', '--context', 'prod']);
    expect(r.code).toBe(3);
    expect(r.stderr).toBe('gwctl: context "prod" is not in the kubeconfig (contexts: tollgate-e2e)\n');
  });

  // Last: it removes the Gateway API from the cluster.
  it('a cluster without the Gateway API: exit 12 saying that the cluster serves no Gateways', async () => {
    await kubectl(['delete', 'crd', 'gateways.gateway.networking.k8s.io']);
    const r = await gwctl(['config', 'all', 'gateway/public', '-n', 'edge']);
    expect(r.stderr).toBe('gwctl: Gateway public not found: the cluster does not serve gateways.gateway.networking.k8s.io/v1 (are the Gateway API CRDs installed? docs/kubernetes.md, Install)\n');
    expect(r.code).toBe(12);
  });
});
