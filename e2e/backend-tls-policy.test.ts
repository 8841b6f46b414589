// BackendTLSPolicy and the Gateway's backend client certificate on a real kube-apiserver: the
// chart installed with helm and the controller out of cluster with the chart ServiceAccount's
// token (so the chart's RBAC for BackendTLSPolicies, their status and the ConfigMaps they name
// is what is tested); objects applied with kubectl, status read as a user does. A policy whose
// CA ConfigMap is missing is not accepted, and is once the ConfigMap is created; a newer policy
// on the same target is Conflicted; the Gateway's ResolvedRefs follows its client certificate
// Secret; the client key never shows in the controller's log or its /snapshots view.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { issueTestCertificate } from '../packages/testkit/src/index.js';
import { installChart, startAsChart, waitForObject, type ControllerProcess } from './controller-process.js';
import { type Condition, type GatewayStatus, policyCondition, type PolicyStatus } from './lib/conditions.js';
import { run } from './lib/exec.js';
import { e2eAvailability } from './lib/tools.js';
import { useCluster } from './lib/use-cluster.js';

const availability = e2eAvailability();
const APPS = 'btls-apps';

type Ancestors = PolicyStatus & { metadata: { generation: number } };

const ca = issueTestCertificate({ commonName: 'backend-ca', ca: true });
const client = issueTestCertificate({ commonName: 'tollgate-proxy', issuer: ca });
const b64 = (s: string) => Buffer.from(s).toString('base64');

// Each policy here has one ancestor, the Gateway gw.
const ancestorCond = (p: Ancestors, type: string): (Condition & { observedGeneration?: number }) | undefined => policyCondition(p, type);
const gatewayCond = (g: GatewayStatus, type: string) => g.status?.conditions?.find((c) => c.type === type);

const OBJECTS = `
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: { name: gw, namespace: ${APPS} }
spec:
  gatewayClassName: tollgate
  listeners: [ { name: http, protocol: HTTP, port: 80 } ]
  tls: { backend: { clientCertificateRef: { group: '', kind: Secret, name: proxy-client } } }
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: { name: chat, namespace: ${APPS} }
spec:
  parentRefs: [ { name: gw } ]
  rules: [ { backendRefs: [ { name: llm, port: 443 } ] } ]
---
apiVersion: v1
kind: Service
metadata: { name: llm, namespace: ${APPS} }
spec:
  ports: [ { name: https, port: 443, targetPort: 8443 } ]
---
apiVersion: gateway.networking.k8s.io/v1
kind: BackendTLSPolicy
metadata: { name: llm-tls, namespace: ${APPS} }
spec:
  targetRefs: [ { group: '', kind: Service, name: llm, sectionName: https } ]
  validation:
    caCertificateRefs: [ { group: '', kind: ConfigMap, name: llm-ca } ]
    hostname: llm.internal
`;

const NEWER = `
apiVersion: gateway.networking.k8s.io/v1
kind: BackendTLSPolicy
metadata: { name: llm-tls-newer, namespace: ${APPS} }
spec:
  targetRefs: [ { group: '', kind: Service, name: llm, sectionName: https } ]
  validation: { wellKnownCACertificates: System, hostname: other.internal }
`;

const CA_CONFIGMAP = `
apiVersion: v1
kind: ConfigMap
metadata: { name: llm-ca, namespace: ${APPS} }
data:
  ca.crt: |
${ca.cert.trim().split('\n').map((l) => `    ${l}`).join('\n')}
`;

const CLIENT_SECRET = `
apiVersion: v1
kind: Secret
metadata: { name: proxy-client, namespace: ${APPS} }
type: kubernetes.io/tls
data:
  tls.crt: ${b64(client.cert)}
  tls.key: ${b64(client.key)}
`;

describe.skipIf(!availability.run)('BackendTLSPolicy on kube-apiserver', () => {
  const cluster = useCluster({ tollgateCrds: false });
  const kubectl = (args: string[], input?: string) => run(cluster.current.tools.kubectl, args, { env: cluster.current.env, input });
  const apply = (yaml: string) => kubectl(['apply', '-f', '-'], yaml);
  const watchPolicy = (name: string, predicate: (p: Ancestors) => boolean) => waitForObject<Ancestors>(cluster.current, 'backendtlspolicy', name, APPS, predicate);
  const watchGateway = (predicate: (g: GatewayStatus) => boolean) => waitForObject<GatewayStatus>(cluster.current, 'gateway', 'gw', APPS, predicate);
  let controller: ControllerProcess;

  beforeAll(async () => {
    await installChart(cluster.current, [APPS]);
    controller = await startAsChart(cluster.current, 'controller-btls');
  }, 120_000);

  afterAll(async () => {
    await controller?.stop('SIGKILL');
  });

  it('a policy whose CA ConfigMap is missing is not accepted, with the reason on its Gateway ancestor', async () => {
    await apply(OBJECTS);
    const p = await watchPolicy('llm-tls', (x) => ancestorCond(x, 'Accepted') !== undefined);
    expect(ancestorCond(p, 'Accepted')).toMatchObject({ status: 'False', reason: 'NoValidCACertificate', observedGeneration: p.metadata.generation });
    expect(ancestorCond(p, 'ResolvedRefs')).toMatchObject({
      status: 'False',
      reason: 'InvalidCACertificateRef',
      message: `spec.validation.caCertificateRefs[0] refers to ConfigMap ${APPS}/llm-ca, which does not exist`,
    });
  });

  it('is accepted once the ConfigMap exists; a newer policy on the same target is Conflicted', async () => {
    await apply(CA_CONFIGMAP);
    const p = await watchPolicy('llm-tls', (x) => ancestorCond(x, 'Accepted')?.status === 'True');
    expect(ancestorCond(p, 'ResolvedRefs')).toMatchObject({ status: 'True', reason: 'ResolvedRefs' });
    await apply(NEWER);
    const newer = await watchPolicy('llm-tls-newer', (x) => ancestorCond(x, 'Accepted') !== undefined);
    expect(ancestorCond(newer, 'Accepted')).toMatchObject({ status: 'False', reason: 'Conflicted' });
    expect(ancestorCond(newer, 'Accepted')!.message).toContain(`${APPS}/llm-tls`);
  });

  it("the Gateway's ResolvedRefs follows its backend client certificate", async () => {
    const missing = await watchGateway((g) => gatewayCond(g, 'ResolvedRefs')?.reason === 'InvalidClientCertificateRef');
    expect(gatewayCond(missing, 'ResolvedRefs')!.message).toBe(`spec.tls.backend.clientCertificateRef refers to Secret ${APPS}/proxy-client, which does not exist`);
    await apply(CLIENT_SECRET);
    const gw = await watchGateway((g) => gatewayCond(g, 'ResolvedRefs')?.status === 'True');
    expect(gatewayCond(gw, 'ResolvedRefs')).toMatchObject({ reason: 'ResolvedRefs' });
  });

  it("puts the CA and the client certificate in the Gateway's snapshot, never the key in its log or /snapshots view", async () => {
    const view = await (await fetch(`http://${controller.admin}/snapshots`)).text();
    expect(view).toContain('llm.internal');
    expect(view).toContain(ca.cert.split('\n')[1]!);
    expect(view).toContain(client.cert.split('\n')[1]!);
    const keyBody = client.key.split('\n').slice(1, 3).join('');
    for (const text of [view, readFileSync(join(cluster.current.dir, 'controller-btls.log'), 'utf8')]) {
      expect(text).not.toContain('PRIVATE KEY');
      expect(text).not.toContain(keyBody);
      expect(text).not.toContain(b64(client.key).slice(0, 40));
    }
  });
});
