// The harness itself: a real, versioned API server with RBAC, the Gateway API CRDs, and a
// teardown that leaves no process and no file behind.
import { existsSync, readFileSync } from 'node:fs';
import { get as httpsGet, type RequestOptions } from 'node:https';
import { afterAll, describe, expect, it } from 'vitest';
import { startCluster, type Cluster } from './lib/cluster.js';
import { run } from './lib/exec.js';
import { VERSIONS, e2eAvailability } from './lib/tools.js';

const availability = e2eAvailability();

describe.skipIf(!availability.run)('e2e cluster harness', () => {
  let cluster: Cluster | undefined;
  afterAll(async () => cluster?.stop(), 60_000);

  it('starts kube-apiserver and etcd and reports the pinned version', async () => {
    cluster = await startCluster();
    const v = JSON.parse(await run(cluster.tools.kubectl, ['version', '-o', 'json'], { env: cluster.env })) as {
      serverVersion: { gitVersion: string; major: string; minor: string; gitTreeState: string };
      clientVersion: { gitVersion: string };
    };
    expect(v.serverVersion).toMatchObject({ gitVersion: VERSIONS.kubernetes, major: '1', minor: VERSIONS.kubernetes.split('.')[1], gitTreeState: 'clean' });
    expect(v.clientVersion.gitVersion).toBe(VERSIONS.kubernetes);
    expect(cluster.server).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
  }, 180_000);

  it('has the Gateway API CRDs established', async () => {
    const out = await run(cluster!.tools.kubectl, ['get', 'crd', '-o', 'jsonpath={range .items[*]}{.metadata.name}{"\\n"}{end}'], { env: cluster!.env });
    for (const kind of ['gatewayclasses', 'gateways', 'httproutes', 'referencegrants', 'grpcroutes']) {
      expect(out).toContain(`${kind}.gateway.networking.k8s.io`);
    }
    const versions = await run(cluster!.tools.kubectl, ['get', 'crd', 'gateways.gateway.networking.k8s.io', '-o', 'jsonpath={.metadata.annotations.gateway\\.networking\\.k8s\\.io/bundle-version}'], { env: cluster!.env });
    expect(versions).toBe(VERSIONS.gatewayApi);
  });

  it('authenticates with the admin client certificate and authorizes with RBAC', async () => {
    const c = cluster!;
    expect((await run(c.tools.kubectl, ['auth', 'whoami', '-o', 'jsonpath={.status.userInfo.username}'], { env: c.env })).trim()).toBe('tollgate-e2e-admin');
    const nobody = await c.kubectl(['auth', 'can-i', 'list', 'secrets', '--as', 'nobody']);
    expect(nobody.stdout.trim()).toBe('no');
    // The same request over TLS without checking the server's certificate: with the admin client
    // certificate it is served (the server is up and answering), without one it is refused.
    const user = (JSON.parse(readFileSync(c.kubeconfig, 'utf8')) as { users: { user: Record<string, string> }[] }).users[0]!.user;
    const status = (opts: RequestOptions) =>
      new Promise<number | Error>((resolve) => {
        httpsGet(`${c.server}/api`, { rejectUnauthorized: false, timeout: 5_000, ...opts }, (res) => {
          res.resume();
          resolve(res.statusCode!);
        }).on('error', resolve);
      });
    expect(await status({ cert: readFileSync(user['client-certificate']!), key: readFileSync(user['client-key']!) })).toBe(200);
    expect([401, 403]).toContain(await status({}));
  });

  it('accepts a Pod without a ServiceAccount token (ServiceAccount admission is off)', async () => {
    const pod = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p', namespace: 'default' }, spec: { containers: [{ name: 'c', image: 'example.invalid/c' }] } };
    const out = await run(cluster!.tools.kubectl, ['create', '-f', '-', '-o', 'jsonpath={.spec.volumes}'], { env: cluster!.env, input: JSON.stringify(pod) });
    expect(out).toBe('');
  });

  it('stop() ends both processes and removes the directory', async () => {
    const c = cluster!;
    cluster = undefined;
    await c.stop();
    expect(existsSync(c.dir)).toBe(false);
    const r = await c.kubectl(['get', 'ns', '--request-timeout=2s']);
    expect(r.code).not.toBe(0);
  }, 60_000);
});
