// The fault-injecting proxy (e2e/lib/fault-proxy.ts) itself: it reads requests as the API
// server does (verb, resource, subresource, namespace, name), passes them through to the real
// kube-apiserver (kubectl, over HTTP/1.1, and a watch that streams), answers the ones its rules
// pick with the status asked for or a reset, and counts what it did.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serviceAccountKubeconfig } from './controller-process.js';
import { exec } from './lib/exec.js';
import { faultProxyFor, requestInfo, type FaultProxy } from './lib/fault-proxy.js';
import { e2eAvailability } from './lib/tools.js';
import { useCluster } from './lib/use-cluster.js';

describe('requestInfo', () => {
  it.each([
    ['GET', '/api/v1/namespaces', { verb: 'list', apiGroup: '', resource: 'namespaces' }],
    ['GET', '/api/v1/namespaces/apps', { verb: 'get', resource: 'namespaces', name: 'apps' }],
    ['PUT', '/api/v1/namespaces/apps/status', { verb: 'update', resource: 'namespaces', name: 'apps', subresource: 'status' }],
    ['GET', '/api/v1/namespaces/apps/services?watch=true&resourceVersion=5', { verb: 'watch', resource: 'services', namespace: 'apps' }],
    ['GET', '/apis/gateway.networking.k8s.io/v1/gatewayclasses?watch=1', { verb: 'watch', apiGroup: 'gateway.networking.k8s.io', resource: 'gatewayclasses' }],
    ['PUT', '/apis/gateway.networking.k8s.io/v1/namespaces/apps/gateways/gw/status', { verb: 'update', resource: 'gateways', namespace: 'apps', name: 'gw', subresource: 'status' }],
    ['POST', '/apis/authentication.k8s.io/v1/tokenreviews', { verb: 'create', resource: 'tokenreviews' }],
    ['DELETE', '/api/v1/namespaces/apps/pods', { verb: 'deletecollection', resource: 'pods', namespace: 'apps' }],
    ['PATCH', '/apis/apps/v1/namespaces/apps/deployments/d', { verb: 'patch', apiGroup: 'apps', resource: 'deployments', name: 'd' }],
    ['GET', '/readyz', { verb: 'other' }],
  ] as const)('%s %s', (method, url, want) => {
    const info = requestInfo(method, url);
    expect(info).toMatchObject(want);
    expect(info.resource).toBe((want as { resource?: string }).resource);
  });
});

describe.skipIf(!e2eAvailability().run)('fault proxy in front of kube-apiserver', () => {
  const cluster = useCluster({ gatewayApi: false, tollgateCrds: false });
  let proxy: FaultProxy;
  let kubeconfig: string;
  const kubectl = (args: string[]) => exec(cluster.current.tools.kubectl, ['--kubeconfig', kubeconfig, ...args], { env: { ...cluster.current.env, KUBECONFIG: kubeconfig } });

  beforeAll(async () => {
    // A client certificate ends at the proxy's TLS: clients authenticate with a token.
    const dir = mkdtempSync(join(tmpdir(), 'tg-fault-'));
    const admin = (args: string[]) => exec(cluster.current.tools.kubectl, args, { env: cluster.current.env });
    await admin(['create', 'serviceaccount', 'faulty', '-n', 'default']);
    await admin(['create', 'clusterrolebinding', 'faulty', '--clusterrole=cluster-admin', '--serviceaccount=default:faulty']);
    const direct = await serviceAccountKubeconfig(cluster.current, 'default', 'faulty', join(dir, 'direct'));
    proxy = await faultProxyFor(cluster.current);
    kubeconfig = proxy.kubeconfig(direct, join(dir, 'kubeconfig'));
  });
  afterAll(async () => {
    await proxy?.close();
  });

  it('passes requests through, and answers the ones its rules pick with a status or a reset, counting each', async () => {
    const through = await kubectl(['get', 'namespace', 'default', '-o', 'name']);
    expect(through.stdout.trim()).toBe('namespace/default');
    expect(proxy.count({ verb: 'get', resource: 'namespaces', name: 'default' }, 'passed')).toBe(1);

    const busy = proxy.rule({ match: { verb: 'get', resource: 'namespaces' }, fault: { kind: 'status', code: 429, retryAfterSeconds: 0 }, times: 20 });
    const r429 = await kubectl(['get', 'namespace', 'default', '--request-timeout=5s']);
    expect(r429.code).not.toBe(0);
    expect(busy.injected).toBeGreaterThanOrEqual(1);
    proxy.clearRules();

    const down = proxy.rule({ match: { verb: 'list', resource: 'namespaces' }, fault: { kind: 'status', code: 503, message: 'the API server is shutting down' }, times: 1 });
    const r503 = await kubectl(['get', 'namespaces']);
    expect(r503.stderr).toContain('the API server is shutting down');
    expect(down.injected).toBe(1);
    expect(down.done).toBe(true);

    const reset = proxy.rule({ match: { verb: 'list', resource: 'namespaces' }, fault: { kind: 'reset' }, times: 1 });
    // kubectl may retry a reset connection itself; either way the reset happened once.
    await kubectl(['get', 'namespaces', '--request-timeout=5s']);
    expect(reset.injected).toBe(1);
    expect(proxy.count({ verb: 'list', resource: 'namespaces' }, 'reset')).toBe(1);
  });

  it('streams a watch through, and cuts one after its headers when asked', async () => {
    const watch = () => {
      const child = spawn(cluster.current.tools.kubectl, ['--kubeconfig', kubeconfig, 'get', 'namespaces', '--watch', '-o', 'name', '--request-timeout=0'], { env: { ...cluster.current.env, KUBECONFIG: kubeconfig } });
      const lines: string[] = [];
      createInterface({ input: child.stdout }).on('line', (l) => lines.push(l));
      return { child, lines };
    };
    // A watch streams: a namespace created after it started arrives through the proxy.
    const w = watch();
    await expect.poll(() => w.lines.includes('namespace/default'), { timeout: 20_000 }).toBe(true);
    await exec(cluster.current.tools.kubectl, ['create', 'namespace', 'later'], { env: cluster.current.env });
    await expect.poll(() => w.lines.includes('namespace/later'), { timeout: 20_000 }).toBe(true);
    expect(proxy.count({ verb: 'watch', resource: 'namespaces' }, 'passed')).toBe(1);
    w.child.kill('SIGKILL');
    const cut = proxy.rule({ match: { verb: ['list', 'watch'], resource: 'namespaces' }, fault: { kind: 'reset', when: 'headers' }, times: 1 });
    const w2 = watch();
    await new Promise((resolve) => w2.child.once('exit', resolve));
    expect(cut.injected).toBe(1);
    expect(proxy.count({ resource: 'namespaces' }, 'cut after headers')).toBe(1);
  });
});
