// The Backend resource on a real kube-apiserver, as a user meets it: the chart installed with
// helm (its CRDs and RBAC), the controller binary with the chart ServiceAccount's token,
// objects applied with kubectl, status read back, and the snapshot a proxy receives read
// through the proxy's own stream client.
// - The CRD refuses what the schema and its CEL rules refuse, naming the field.
// - A Backend whose key Secret does not exist: Accepted False, InvalidSecretRef, naming the
//   field; created, the Backend is accepted and a route to it resolves.
// - A route to a Backend of another namespace: ResolvedRefs False, RefNotPermitted, until a
//   ReferenceGrant there allows HTTPRoutes of the route's namespace.
// - The key reaches the connected proxy in the snapshot, and a rotated Secret reaches it without
//   a restart; the key is in no status, no controller log line and no admin /snapshots answer.
// Waits are on watches of the objects, the controller's log and the stream, not on timers.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectStreamClient, type StreamedSnapshot } from './lib/stream-client.js';
import { installChart, startAsChart, waitForObject, type ControllerProcess } from './controller-process.js';
import type { Condition } from './lib/conditions.js';
import { exec, run } from './lib/exec.js';
import { e2eAvailability } from './lib/tools.js';
import { useCluster } from './lib/use-cluster.js';

const availability = e2eAvailability();
const INFRA = 'infra';
const TEAM = 'team';
const PROVIDERS = 'providers';
const KEY_V1 = 'sk-e2e-backend-key-v1-0123456789';
const KEY_V2 = 'sk-e2e-backend-key-v2-9876543210';

const b64 = (s: string) => Buffer.from(s).toString('base64');

const BASE = `
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: { name: gw, namespace: ${INFRA} }
spec:
  gatewayClassName: tollgate
  listeners:
  - { name: http, protocol: HTTP, port: 8080, allowedRoutes: { namespaces: { from: All } } }
---
apiVersion: tollgate.dev/v1alpha1
kind: Backend
metadata: { name: openai, namespace: ${TEAM} }
spec:
  hostname: api.openai.com
  port: 443
  tls: {}
  provider: { type: OpenAI, apiKeySecretRef: { name: openai-key } }
---
apiVersion: tollgate.dev/v1alpha1
kind: Backend
metadata: { name: shared, namespace: ${PROVIDERS} }
spec:
  hostname: llm.example.net
  port: 8000
  provider: { type: OpenAICompatible }
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: { name: chat, namespace: ${TEAM} }
spec:
  parentRefs: [ { name: gw, namespace: ${INFRA} } ]
  hostnames: [ chat.example.com ]
  rules:
  - backendRefs: [ { group: tollgate.dev, kind: Backend, name: openai } ]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: { name: shared, namespace: ${TEAM} }
spec:
  parentRefs: [ { name: gw, namespace: ${INFRA} } ]
  hostnames: [ shared.example.com ]
  rules:
  - backendRefs: [ { group: tollgate.dev, kind: Backend, name: shared, namespace: ${PROVIDERS} } ]
`;

const GRANT = `
apiVersion: gateway.networking.k8s.io/v1beta1
kind: ReferenceGrant
metadata: { name: team-routes, namespace: ${PROVIDERS} }
spec:
  from: [ { group: gateway.networking.k8s.io, kind: HTTPRoute, namespace: ${TEAM} } ]
  to: [ { group: tollgate.dev, kind: Backend } ]
`;

const keySecret = (key: string) => JSON.stringify({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'openai-key', namespace: TEAM }, type: 'Opaque', data: { apiKey: b64(key) } });

type ProxySnapshot = StreamedSnapshot;
interface BackendObject {
  status?: { conditions?: Condition[] };
}
interface RouteObject {
  status?: { parents?: { conditions: Condition[] }[] };
}
const accepted = (b: BackendObject) => b.status?.conditions?.find((c) => c.type === 'Accepted');
const resolvedRefs = (r: RouteObject) => r.status?.parents?.[0]?.conditions.find((c) => c.type === 'ResolvedRefs');

/** The provider key of the first backend of a route, as the stream carried it (revealed: the proxy sends it upstream). */
function wireKey(s: ProxySnapshot, route: string): string | undefined {
  for (const b of s.binds) for (const l of b.listeners) for (const r of l.routes) {
    if (r.origin.kind !== 'HTTPRoute' || r.origin.name !== route) continue;
    const backend = r.backends[0];
    if (backend?.kind === 'external') return backend.provider?.apiKey?.value.reveal();
  }
  return undefined;
}

describe.skipIf(!availability.run)('the Backend resource', () => {
  const cluster = useCluster({ tollgateCrds: false });
  const kubectl = (args: string[], input?: string) => run(cluster.current.tools.kubectl, args, { env: cluster.current.env, input });
  const apply = (doc: string) => kubectl(['apply', '-f', '-'], doc);
  const dir = mkdtempSync(join(tmpdir(), 'tg-backend-'));
  const backendWhen = (name: string, ns: string, holds: (b: BackendObject) => boolean) => waitForObject<BackendObject>(cluster.current, 'backends.tollgate.dev', name, ns, holds);
  const routeWhen = (name: string, holds: (r: RouteObject) => boolean) => waitForObject<RouteObject>(cluster.current, 'httproutes', name, TEAM, holds);
  let controller: ControllerProcess;

  beforeAll(async () => {
    await installChart(cluster.current, [INFRA, TEAM, PROVIDERS]);
    controller = await startAsChart(cluster.current, 'controller', ['--snapshot-tls-names=127.0.0.1']);
  }, 120_000);

  afterAll(async () => {
    await controller?.stop('SIGKILL');
  });

  it('the CRD refuses a bad Backend, naming the field', { timeout: 60_000 }, async () => {
    const refused = async (spec: string) => {
      const r = await exec(cluster.current.tools.kubectl, ['apply', '-f', '-'], { env: cluster.current.env, input: `apiVersion: tollgate.dev/v1alpha1\nkind: Backend\nmetadata: { name: bad, namespace: ${TEAM} }\nspec: ${spec}\n` });
      expect(r.code).not.toBe(0);
      return r.stderr;
    };
    expect(await refused('{ hostname: api.openai.com, port: 443, provider: { type: OpenAI, deployment: gpt } }')).toContain('deployment is for type AzureOpenAI only');
    expect(await refused('{ hostname: x.openai.azure.com, port: 443, provider: { type: AzureOpenAI } }')).toContain('type AzureOpenAI needs deployment');
    expect(await refused('{ hostname: api.openai.com, port: 443, provider: { type: Gemini } }')).toContain('spec.provider.type');
    expect(await refused('{ hostname: "bad host!", port: 443 }')).toContain('spec.hostname');
    expect(await refused('{ hostname: api.openai.com, port: 70000 }')).toContain('spec.port');
    expect(await refused('{ hostname: api.openai.com, port: 443, tls: { subjectAltNames: [ { type: URI, hostname: a.example.com } ] } }')).toContain('type Hostname takes hostname, type URI takes uri');
  });

  it('a Backend whose key Secret is missing is not accepted (InvalidSecretRef); created, it is, and the route resolves', { timeout: 90_000 }, async () => {
    await apply(BASE);
    const b = await backendWhen('openai', TEAM, (x) => accepted(x)?.reason === 'InvalidSecretRef');
    expect(accepted(b)).toMatchObject({ status: 'False', message: `spec.provider.apiKeySecretRef: Secret ${TEAM}/openai-key does not exist; create it or fix the name` });
    const r = await routeWhen('chat', (x) => resolvedRefs(x)?.status === 'False');
    expect(resolvedRefs(r)?.message).toContain(`Backend ${TEAM}/openai is not accepted`);
    await kubectl(['create', '-f', '-'], keySecret(KEY_V1));
    await backendWhen('openai', TEAM, (x) => accepted(x)?.status === 'True');
    await routeWhen('chat', (x) => resolvedRefs(x)?.status === 'True');
  });

  it('a route to a Backend of another namespace resolves only once a ReferenceGrant there allows it', { timeout: 90_000 }, async () => {
    const r = await routeWhen('shared', (x) => resolvedRefs(x)?.reason === 'RefNotPermitted');
    expect(resolvedRefs(r)?.message).toBe(`spec.rules[0].backendRefs[0]: Backend ${PROVIDERS}/shared is in another namespace; a ReferenceGrant in ${PROVIDERS} must allow HTTPRoutes of ${TEAM}`);
    await apply(GRANT);
    await routeWhen('shared', (x) => resolvedRefs(x)?.status === 'True');
  });

  it('the key reaches a connected proxy, a rotated Secret too without a restart; no status, log or admin answer holds it', { timeout: 120_000 }, async () => {
    const client = await connectStreamClient(cluster.current, controller, INFRA, 'gw', dir);
    const { source } = client;
    const receive = (holds: (s: ProxySnapshot) => boolean) => client.receive(holds);
    try {
      const before = await receive((s) => wireKey(s, 'chat') === KEY_V1);
      // In memory the key is a Secret: what a dump or log would print of the snapshot is redacted.
      expect(JSON.stringify(before)).not.toContain(KEY_V1);
      await apply(keySecret(KEY_V2));
      const rotated = await receive((s) => wireKey(s, 'chat') === KEY_V2);
      expect(rotated.version).not.toBe(before.version);
      expect(source.state()).toMatchObject({ stream: 'connected', connects: 1 });
    } finally {
      source.stop();
    }
    const dumps = await (await fetch(`http://${controller.admin}/snapshots`)).text();
    expect(dumps).toContain('api.openai.com');
    expect(dumps).not.toContain(KEY_V1);
    expect(dumps).not.toContain(KEY_V2);
    const status = await kubectl(['get', 'backends.tollgate.dev,httproutes', '-A', '-o', 'json']);
    expect(status).not.toContain(KEY_V2);
    expect(JSON.stringify(controller.lines)).not.toContain(KEY_V1);
  });
});
