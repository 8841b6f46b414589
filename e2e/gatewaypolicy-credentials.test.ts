// The Secrets a tenant's GatewayPolicy names, on a real kube-apiserver, as a user meets them:
// the chart installed with helm, the controller binary with the chart ServiceAccount's token
// (so the chart's RBAC is what reads the Secrets), objects applied with kubectl, status read
// back, and the snapshot a proxy receives read through the proxy's own stream client.
// - A Secret that does not exist: Accepted False, InvalidSecretRef, naming the field; created,
//   it is read whole (the controller's cache metrics) and the reason moves on.
// - A Secret of another namespace: RefNotPermitted, and not read, until a ReferenceGrant there
//   allows GatewayPolicies of the policy's namespace; then it is read.
// - A Secret a secretSelector chooses is read when it is created with the label, and dropped
//   when relabelled: no restart, no edit of the policy.
// - With the apiKey conversion: a key rotated by editing its Secret reaches the connected proxy
//   (its digest id changes) without a restart; the Secret deleted refuses the policy and the
//   proxy's route refuses every request.
// Waits are on watches of the objects, the controller's log and the stream, not on timers.
import { createHash } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectStreamClient, routePolicy, type StreamedSnapshot } from './lib/stream-client.js';
import { installChart, startAsChart, waitForObject, type ControllerProcess } from './controller-process.js';
import { policyCondition, type PolicyStatus } from './lib/conditions.js';
import { run } from './lib/exec.js';
import { e2eAvailability } from './lib/tools.js';
import { useCluster } from './lib/use-cluster.js';

const availability = e2eAvailability();
const INFRA = 'infra';
const TEAM = 'team';
const KEYS = 'keys';
const LABEL = 'tollgate.dev/api-key';

const b64 = (s: string) => Buffer.from(s).toString('base64');
const idOf = (key: string) => createHash('sha256').update(key).digest('hex').slice(0, 8);

const BASE = `
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: { name: gw, namespace: ${INFRA} }
spec:
  gatewayClassName: tollgate
  listeners:
  - { name: http, protocol: HTTP, port: 8080, allowedRoutes: { namespaces: { from: All } } }
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: { name: chat, namespace: ${TEAM} }
spec:
  parentRefs: [ { name: gw, namespace: ${INFRA} } ]
  hostnames: [ chat.example.com ]
  rules:
  - backendRefs: [ { name: llm, port: 8000 } ]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: { name: labelled, namespace: ${TEAM} }
spec:
  parentRefs: [ { name: gw, namespace: ${INFRA} } ]
  hostnames: [ labelled.example.com ]
  rules:
  - backendRefs: [ { name: llm, port: 8000 } ]
`;

const keysPolicy = (refs: string) => `
apiVersion: tollgate.dev/v1alpha1
kind: GatewayPolicy
metadata: { name: keys, namespace: ${TEAM} }
spec:
  targetRefs: [ { group: gateway.networking.k8s.io, kind: HTTPRoute, name: chat } ]
  traffic:
    apiKey:
      secretRefs: ${refs}
`;

const BY_LABEL = `
apiVersion: tollgate.dev/v1alpha1
kind: GatewayPolicy
metadata: { name: by-label, namespace: ${TEAM} }
spec:
  targetRefs: [ { group: gateway.networking.k8s.io, kind: HTTPRoute, name: labelled } ]
  traffic:
    apiKey:
      secretSelector: { matchLabels: { ${LABEL}: team-c } }
`;

const keySecret = (name: string, namespace: string, key: string, labels: Record<string, string> = {}) =>
  JSON.stringify({ apiVersion: 'v1', kind: 'Secret', metadata: { name, namespace, labels }, type: 'Opaque', data: { key: b64(key), consumer: b64(name) } });

const GRANT = `
apiVersion: gateway.networking.k8s.io/v1beta1
kind: ReferenceGrant
metadata: { name: team-keys, namespace: ${KEYS} }
spec:
  from: [ { group: tollgate.dev, kind: GatewayPolicy, namespace: ${TEAM} } ]
  to: [ { group: '', kind: Secret, name: team-b } ]
`;

/** A snapshot as the proxy's source hands it on (the types of the build the proxy runs). */
type ProxySnapshot = StreamedSnapshot;

describe.skipIf(!availability.run)("the Secrets of a tenant's GatewayPolicy", () => {
  const cluster = useCluster({ tollgateCrds: false });
  const kubectl = (args: string[], input?: string) => run(cluster.current.tools.kubectl, args, { env: cluster.current.env, input });
  const apply = (doc: string) => kubectl(['apply', '-f', '-'], doc);
  const dir = mkdtempSync(join(tmpdir(), 'tg-credentials-'));
  const policyWhen = (name: string, holds: (p: PolicyStatus) => boolean) => waitForObject<PolicyStatus>(cluster.current, 'gatewaypolicies.tollgate.dev', name, TEAM, holds);
  let controller: ControllerProcess;
  /** Secrets the controller holds whole (not their metadata). */
  const heldWhole = () => controller.metric('tollgate_controller_cached_objects', { kind: 'Secret', form: 'full' });

  beforeAll(async () => {
    await installChart(cluster.current, [INFRA, TEAM, KEYS]);
    controller = await startAsChart(cluster.current, 'controller', ['--snapshot-tls-names=127.0.0.1']);
    await apply(BASE);
  }, 120_000);

  afterAll(async () => {
    await controller?.stop('SIGKILL');
  });

  it('a Secret that does not exist refuses the policy (InvalidSecretRef, naming the field); created, it is read whole', { timeout: 90_000 }, async () => {
    await apply(keysPolicy(`[ { name: team-a } ]`));
    const p = await policyWhen('keys', (x) => policyCondition(x, 'Accepted')?.reason === 'InvalidSecretRef');
    expect(policyCondition(p, 'Accepted')).toMatchObject({ status: 'False', message: `spec.traffic.apiKey.secretRefs[0]: Secret ${TEAM}/team-a does not exist; create it or fix the name` });
    expect(policyCondition(p, 'Attached')?.message).toContain(`every request of HTTPRoute ${TEAM}/chat is refused (403) until it is`);
    expect(await heldWhole()).toBe(0);
    await kubectl(['create', '-f', '-'], keySecret('team-a', TEAM, 'sk-team-a-v1'));
    // The reconcile waits for the first read of a Secret it wants: a new reason means it was read.
    await policyWhen('keys', (x) => policyCondition(x, 'Accepted') !== undefined && policyCondition(x, 'Accepted')?.reason !== 'InvalidSecretRef');
    expect(await heldWhole()).toBe(1);
  });

  it('a Secret of another namespace is refused and not read (RefNotPermitted) until a ReferenceGrant there allows it', { timeout: 90_000 }, async () => {
    await kubectl(['create', '-f', '-'], keySecret('team-b', KEYS, 'sk-team-b-v1'));
    await apply(keysPolicy(`[ { name: team-a }, { name: team-b, namespace: ${KEYS} } ]`));
    const p = await policyWhen('keys', (x) => policyCondition(x, 'Accepted')?.reason === 'RefNotPermitted');
    expect(policyCondition(p, 'Accepted')?.message).toBe(
      `spec.traffic.apiKey.secretRefs[1]: Secret ${KEYS}/team-b is in another namespace; a ReferenceGrant in ${KEYS} must allow GatewayPolicies of ${TEAM} to refer to it`,
    );
    expect(await heldWhole()).toBe(1);
    await apply(GRANT);
    await policyWhen('keys', (x) => policyCondition(x, 'Accepted') !== undefined && policyCondition(x, 'Accepted')?.reason !== 'RefNotPermitted');
    expect(await heldWhole()).toBe(2);
  });

  it('a Secret a selector chooses is read once created with the label, and dropped once relabelled', { timeout: 90_000 }, async () => {
    await apply(BY_LABEL);
    await policyWhen('by-label', (x) => policyCondition(x, 'Accepted') !== undefined);
    expect(await heldWhole()).toBe(2);
    await kubectl(['create', '-f', '-'], keySecret('carol', TEAM, 'sk-team-c-carol', { [LABEL]: 'team-c' }));
    // The policy's status need not change (one more consumer is no new reason): what the controller holds shows the read.
    await expect.poll(heldWhole, { timeout: 30_000 }).toBe(3);
    await kubectl(['label', 'secret', 'carol', '-n', TEAM, `${LABEL}=team-d`, '--overwrite']);
    await expect.poll(heldWhole, { timeout: 30_000 }).toBe(2);
  });

  // Needs the apiKey conversion (toApiKeyIR reading its Secrets through sources.secrets()).
  it('with the apiKey conversion: a rotated key reaches a connected proxy without a restart; the Secret deleted closes the route', { timeout: 120_000 }, async () => {
    await policyWhen('keys', (x) => policyCondition(x, 'Accepted')?.status === 'True');
    const client = await connectStreamClient(cluster.current, controller, INFRA, 'gw', dir);
    const { source } = client;
    const receive = (holds: (s: ProxySnapshot) => boolean) => client.receive(holds);
    try {
      const ids = (s: ProxySnapshot) => routePolicy(s, 'chat')?.apiKey?.consumers.map((c) => c.id) ?? [];
      const before = await receive((s) => ids(s).includes(idOf('sk-team-a-v1')));
      expect(ids(before)).toEqual([idOf('sk-team-a-v1'), idOf('sk-team-b-v1')]);

      await apply(keySecret('team-a', TEAM, 'sk-team-a-v2'));
      const rotated = await receive((s) => ids(s).includes(idOf('sk-team-a-v2')));
      expect(ids(rotated)).toEqual([idOf('sk-team-a-v2'), idOf('sk-team-b-v1')]);
      expect(rotated.version).not.toBe(before.version);
      // The digest travels wrapped; the key itself never does.
      expect(JSON.stringify(rotated)).not.toContain('sk-team-a');

      await kubectl(['delete', 'secret', 'team-a', '-n', TEAM]);
      const p = await policyWhen('keys', (x) => policyCondition(x, 'Accepted')?.reason === 'InvalidSecretRef');
      expect(policyCondition(p, 'Accepted')?.message).toBe(`spec.traffic.apiKey.secretRefs[0]: Secret ${TEAM}/team-a does not exist; create it or fix the name`);
      const closed = await receive((s) => routePolicy(s, 'chat')?.authorization?.rules[0]?.name === 'policy-not-accepted');
      expect(routePolicy(closed, 'chat')?.apiKey).toBeNull();
      // One connection throughout: nothing was restarted.
      expect(source.state()).toMatchObject({ stream: 'connected', connects: 1 });
    } finally {
      source.stop();
    }
  });
});
