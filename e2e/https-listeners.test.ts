// HTTPS listeners on a real kube-apiserver: the chart installed with helm, the controller out
// of cluster with the chart ServiceAccount's token (so the chart's RBAC for Secrets is what is
// tested), Secrets and Gateways applied with kubectl, listener status read as a user does.
// A valid kubernetes.io/tls Secret resolves; a missing one, an Opaque one and one in another
// namespace without a ReferenceGrant do not, each with its reason; creating what was missing
// resolves the listener without touching the Gateway. The key never shows in the controller's
// log or its /snapshots view.
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { issueTestCertificate } from '../packages/testkit/src/index.js';
import { ControllerProcess, serviceAccountKubeconfig, waitForObject } from './controller-process.js';
import { run } from './lib/exec.js';
import { REPO_ROOT, e2eAvailability } from './lib/tools.js';
import { useCluster } from './lib/use-cluster.js';

const availability = e2eAvailability();
const CHART = join(REPO_ROOT, 'charts/tollgate');
const NS = 'tollgate-system';
const APPS = 'tls-apps';
const CERTS = 'tls-certs';

interface Condition {
  type: string;
  status: string;
  reason: string;
  message: string;
}
interface GatewayStatus {
  status?: { listeners?: { name: string; conditions: Condition[] }[] };
}

const listenerCond = (gw: GatewayStatus, listener: string, type: string) => gw.status?.listeners?.find((l) => l.name === listener)?.conditions.find((c) => c.type === type);

const pair = issueTestCertificate({ commonName: 'a.example.com', names: ['a.example.com'] });
const b64 = (s: string) => Buffer.from(s).toString('base64');
const secret = (name: string, namespace: string, type = 'kubernetes.io/tls') => `
apiVersion: v1
kind: Secret
metadata: { name: ${name}, namespace: ${namespace} }
type: ${type}
data:
  tls.crt: ${b64(pair.cert)}
  tls.key: ${b64(pair.key)}
`;

const GATEWAY = `
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: { name: secure, namespace: ${APPS} }
spec:
  gatewayClassName: tollgate
  listeners:
  - name: good
    protocol: HTTPS
    port: 443
    hostname: a.example.com
    tls: { certificateRefs: [ { name: good } ] }
  - name: missing
    protocol: HTTPS
    port: 443
    hostname: missing.example.com
    tls: { certificateRefs: [ { name: later } ] }
  - name: opaque
    protocol: HTTPS
    port: 443
    hostname: opaque.example.com
    tls: { certificateRefs: [ { name: opaque } ] }
  - name: cross
    protocol: HTTPS
    port: 443
    hostname: cross.example.com
    tls: { certificateRefs: [ { name: shared, namespace: ${CERTS} } ] }
`;

const GRANT = `
apiVersion: gateway.networking.k8s.io/v1beta1
kind: ReferenceGrant
metadata: { name: gateways-of-apps, namespace: ${CERTS} }
spec:
  from: [ { group: gateway.networking.k8s.io, kind: Gateway, namespace: ${APPS} } ]
  to: [ { group: '', kind: Secret } ]
`;

describe.skipIf(!availability.run)('HTTPS listeners on kube-apiserver', () => {
  const cluster = useCluster({ tollgateCrds: false });
  const kubectl = (args: string[], input?: string) => run(cluster.current.tools.kubectl, args, { env: cluster.current.env, input });
  const apply = (yaml: string) => kubectl(['apply', '-f', '-'], yaml);
  const watchGateway = (predicate: (gw: GatewayStatus) => boolean) => waitForObject<GatewayStatus>(cluster.current, 'gateway', 'secure', APPS, predicate);
  let controller: ControllerProcess;

  beforeAll(async () => {
    await run(cluster.current.tools.helm, ['install', 'tollgate', CHART, '-n', NS, '--create-namespace'], { env: cluster.current.env });
    await kubectl(['create', 'namespace', APPS]);
    await kubectl(['create', 'namespace', CERTS]);
    const kubeconfig = await serviceAccountKubeconfig(cluster.current, NS, 'tollgate-controller', join(mkdtempSync(join(tmpdir(), 'tg-tls-')), 'kubeconfig'));
    controller = await ControllerProcess.start('controller-tls', cluster.current, kubeconfig);
    await controller.synced();
  }, 120_000);

  afterAll(async () => {
    await controller?.stop('SIGKILL');
  });

  it('resolves a kubernetes.io/tls Secret and names each bad reference', async () => {
    await apply([secret('good', APPS), secret('opaque', APPS, 'Opaque'), secret('shared', CERTS)].join('---\n'));
    await apply(GATEWAY);
    const gw = await watchGateway((g) => (g.status?.listeners?.length ?? 0) === 4 && listenerCond(g, 'good', 'ResolvedRefs')?.status === 'True');
    expect(listenerCond(gw, 'good', 'Accepted')).toMatchObject({ status: 'True', reason: 'Accepted' });
    expect(listenerCond(gw, 'missing', 'ResolvedRefs')).toMatchObject({
      status: 'False',
      reason: 'InvalidCertificateRef',
      message: `tls.certificateRefs[0] refers to Secret ${APPS}/later, which does not exist`,
    });
    expect(listenerCond(gw, 'missing', 'Programmed')).toMatchObject({ status: 'False', reason: 'Invalid' });
    expect(listenerCond(gw, 'opaque', 'ResolvedRefs')).toMatchObject({ status: 'False', reason: 'InvalidCertificateRef' });
    expect(listenerCond(gw, 'opaque', 'ResolvedRefs')!.message).toContain(`Secret ${APPS}/opaque is of type Opaque; certificates come from Secrets of type kubernetes.io/tls`);
    expect(listenerCond(gw, 'cross', 'ResolvedRefs')).toMatchObject({ status: 'False', reason: 'RefNotPermitted' });
    expect(listenerCond(gw, 'cross', 'ResolvedRefs')!.message).toContain(`a ReferenceGrant in ${CERTS} must allow Gateways of ${APPS}`);
  });

  it('resolves a reference once its Secret is created, and a cross-namespace one once a ReferenceGrant allows it', async () => {
    await apply(secret('later', APPS));
    await watchGateway((g) => listenerCond(g, 'missing', 'ResolvedRefs')?.status === 'True');
    await apply(GRANT);
    const gw = await watchGateway((g) => listenerCond(g, 'cross', 'ResolvedRefs')?.status === 'True');
    expect(listenerCond(gw, 'cross', 'ResolvedRefs')).toMatchObject({ reason: 'ResolvedRefs' });
    // Deleting the Secret takes the listener's certificate away again.
    await kubectl(['delete', 'secret', 'later', '-n', APPS]);
    await watchGateway((g) => listenerCond(g, 'missing', 'ResolvedRefs')?.reason === 'InvalidCertificateRef');
  });

  it('never shows the key in its log or its /snapshots view', async () => {
    const view = await (await fetch(`http://${controller.admin}/snapshots`)).text();
    expect(view).toContain('-----BEGIN CERTIFICATE-----');
    expect(view).toContain('[redacted]');
    const keyBody = pair.key.split('\n').slice(1, 3).join('');
    for (const text of [view, readFileSync(join(cluster.current.dir, 'controller-tls.log'), 'utf8')]) {
      expect(text).not.toContain('PRIVATE KEY');
      expect(text).not.toContain(keyBody);
      expect(text).not.toContain(b64(pair.key).slice(0, 40));
    }
  });
});
