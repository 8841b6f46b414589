// gwctl refused by the API server's RBAC, on a real kube-apiserver: users (ServiceAccount
// tokens) whose Roles lack a permission gwctl needs get exit 4 and the API server's own reason,
// in one line; with the permission, the same command gets past that step.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { serviceAccountKubeconfig } from './controller-process.js';
import { exec, run } from './lib/exec.js';
import { REPO_ROOT, e2eAvailability } from './lib/tools.js';
import { useCluster } from './lib/use-cluster.js';

const availability = e2eAvailability();
const GWCTL = join(REPO_ROOT, 'packages/gwctl/bin/gwctl.js');
const NS = 'edge';

describe.skipIf(!availability.run)('gwctl refused by RBAC on kube-apiserver', () => {
  const cluster = useCluster({ tollgateCrds: false });
  const kubectl = (args: string[], input?: string) => run(cluster.current.tools.kubectl, args, { env: cluster.current.env, ...(input === undefined ? {} : { input }) });
  const kubeconfigs: Record<string, string> = {};
  const gwctlAs = (user: string, args: string[]) => exec(process.execPath, [GWCTL, ...args, '--kubeconfig', kubeconfigs[user]!], { env: { PATH: process.env.PATH, HOME: cluster.current.dir } });

  beforeAll(async () => {
    await kubectl(['create', 'namespace', NS]);
    await kubectl(['create', 'namespace', 'tollgate-system']);
    await kubectl(['apply', '-f', '-'], JSON.stringify({
      apiVersion: 'gateway.networking.k8s.io/v1',
      kind: 'Gateway',
      metadata: { name: 'public', namespace: NS },
      spec: { gatewayClassName: 'tollgate', listeners: [{ name: 'http', port: 80, protocol: 'HTTP' }] },
    }));
    // nobody: no Role at all. reader: may read Gateways and list pods in the namespace, nothing more.
    for (const sa of ['nobody', 'reader']) await kubectl(['create', 'serviceaccount', sa, '-n', NS]);
    await kubectl(['create', 'role', 'reader', '-n', NS, '--verb=get,list', '--resource=gateways.gateway.networking.k8s.io,pods']);
    await kubectl(['create', 'rolebinding', 'reader', '-n', NS, '--role=reader', `--serviceaccount=${NS}:reader`]);
    const dir = mkdtempSync(join(tmpdir(), 'tg-gwctl-rbac-'));
    for (const sa of ['nobody', 'reader']) kubeconfigs[sa] = await serviceAccountKubeconfig(cluster.current, NS, sa, join(dir, `${sa}.kubeconfig`));
  }, 120_000);

  /** stderr has exactly one line, and it matches. */
  function oneLine(r: { stderr: string }, re: RegExp): void {
    const lines = r.stderr.split('\n').filter((l) => l.trim() !== '');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(re);
  }

  it('a user with no permission: exit 4, the API server\'s refusal naming the user, one line', async () => {
    const r = await gwctlAs('nobody', ['config', 'all', 'gateway/public', '-n', NS]);
    expect(r.code).toBe(4);
    oneLine(r, new RegExp(`^gwctl: cannot .* in namespace "${NS}" \\(server https://127\\.0\\.0\\.1:\\d+\\): .* is forbidden: User "system:serviceaccount:${NS}:nobody" cannot .* \\(HTTP 403\\)$`));
  });

  it('the controller\'s namespace the same way (gwctl controller log)', async () => {
    const r = await gwctlAs('nobody', ['controller', 'log']);
    expect(r.code).toBe(4);
    oneLine(r, new RegExp(`^gwctl: cannot list pods in namespace "tollgate-system" .*: pods is forbidden: User "system:serviceaccount:${NS}:nobody" cannot list resource "pods" .* \\(HTTP 403\\)$`));
  });

  it('a user who may read Gateways and list pods gets past RBAC: the next answer is that no pod serves the Gateway (exit 5)', async () => {
    const r = await gwctlAs('reader', ['config', 'all', 'gateway/public', '-n', NS]);
    expect(r.code).toBe(5);
    oneLine(r, /^gwctl: no gateway\/public pod in namespace "edge"/);
  });
});
