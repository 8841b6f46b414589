// API keys and an authorization service on the e2e node, installed as a user installs them: the
// chart (helm install, the controller as a pod with the chart's RBAC), one Gateway with two
// proxy pods shared by two teams, each team in its own namespace with its own route,
// GatewayPolicy and API key Secret, and mock-llm behind each; OPA with its Envoy plugin as a
// pod (the opa image, `bash images/build-images.sh opa`) deciding for a third route through an
// extAuthz policy (gRPC), its Service in another namespace opened by a ReferenceGrant.
// - Each team's key reaches the backend on its own route only; no key, or the other team's:
//   401.
// - A key revoked by editing its Secret is refused once every proxy pod has ACKed the snapshot
//   that drops it: read from the controller's /snapshots (the Gateway's snapshot and each
//   proxy's ACKed version), not after a timer; the new key is accepted.
// - A key Secret deleted: the policy is refused (InvalidSecretRef) and its route refuses every
//   request (403) rather than serving it without a key.
// - OPA allows the requests its Rego policy allows and the proxies refuse the others (403).
import { createHash } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { policyCondition, type PolicyStatus } from '../lib/conditions.js';
import { installChart } from '../lib/chart.js';
import { opaImage } from '../lib/node/images.js';
import { nodeAvailability } from '../lib/tools.js';
import { useNode } from '../lib/use-node.js';
import { kubectlOk, until } from './helm-install.lib.js';
import { mockLlm, opa } from './manifests.js';
import { everyProxyAcked, teamRoute, GATEWAY, GATEWAY_OBJECTS, GW_NS, PROXY } from './shared-gateway.lib.js';

const availability = nodeAvailability();
const AUTHZ = 'authz';
const TEAMS = ['team-a', 'team-b'] as const;
type Team = (typeof TEAMS)[number];

const keyOf = (team: Team, generation = 1) => `sk-${team}-e2e-${String(generation).padStart(4, '0')}`;
const idOf = (key: string) => createHash('sha256').update(key).digest('hex').slice(0, 8);
const b64 = (s: string) => Buffer.from(s).toString('base64');

/** A team's objects: its route (chosen by the x-route header), its API key Secret and the policy naming it. */
function teamObjects(team: Team): unknown[] {
  return [
    teamRoute(team),
    apiKeySecret(team, keyOf(team)),
    {
      apiVersion: 'tollgate.dev/v1alpha1',
      kind: 'GatewayPolicy',
      metadata: { name: 'api-keys', namespace: team },
      spec: { targetRefs: [{ group: 'gateway.networking.k8s.io', kind: 'HTTPRoute', name: 'chat' }], traffic: { apiKey: { secretRefs: [{ name: 'api-key' }] } } },
    },
  ];
}

function apiKeySecret(team: Team, key: string): unknown {
  return { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'api-key', namespace: team }, type: 'Opaque', data: { key: b64(key), consumer: b64(`${team}-app`), group: b64(team) } };
}

/** OPA's policy: allow a request that says so in a header. */
const REGO = `package envoy.authz

import rego.v1

default allow := false

# The proxies send the request's headers (lower case) in the CheckRequest.
allow if input.attributes.request.http.headers["x-opa-allow"] == "yes"
`;

/** What OPA's route needs besides OPA: a grant to its Service for GatewayPolicies of team-a, the route and the policy. */
function opaRouteObjects(): unknown[] {
  return [
    {
      apiVersion: 'gateway.networking.k8s.io/v1beta1',
      kind: 'ReferenceGrant',
      metadata: { name: 'opa-for-team-a', namespace: AUTHZ },
      spec: { from: [{ group: 'tollgate.dev', kind: 'GatewayPolicy', namespace: 'team-a' }], to: [{ group: '', kind: 'Service', name: 'opa' }] },
    },
    {
      apiVersion: 'gateway.networking.k8s.io/v1',
      kind: 'HTTPRoute',
      metadata: { name: 'decided', namespace: 'team-a' },
      spec: {
        parentRefs: [{ name: GATEWAY, namespace: GW_NS }],
        rules: [{ matches: [{ path: { type: 'PathPrefix', value: '/v1' }, headers: [{ name: 'x-route', value: 'decided' }] }], backendRefs: [{ name: 'mock-llm', port: 8080 }] }],
      },
    },
    {
      apiVersion: 'tollgate.dev/v1alpha1',
      kind: 'GatewayPolicy',
      metadata: { name: 'opa-decides', namespace: 'team-a' },
      spec: {
        targetRefs: [{ group: 'gateway.networking.k8s.io', kind: 'HTTPRoute', name: 'decided' }],
        // 5 s: the first decision opens the channel to OPA's pod and OPA prepares its policy; on
        // the CI node, shared with the other suites, that took over 1 s once (the answer was the
        // FailClosed 403, which is right for a timeout but is not what this test is about).
        traffic: { extAuthz: { service: { backendRef: { name: 'opa', namespace: AUTHZ, port: 9191 } }, protocol: 'GRPC', failureMode: 'FailClosed', timeout: '5s' } },
      },
    },
  ];
}

interface RoutePolicy {
  apiKey: { consumers: { id: string }[] } | null;
  authorization: { rules: { name: string }[] } | null;
}

describe.skipIf(!availability.run)('API keys and OPA on the e2e node', () => {
  const node = useNode();
  const k = (...args: string[]) => kubectlOk(node.current, args);
  const apply = (objects: readonly unknown[]) => kubectlOk(node.current, ['apply', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'List', items: objects }));
  const json = async <T>(...args: string[]) => JSON.parse(await k(...args, '-o', 'json')) as T;
  let address = '';

  /** A chat completion through the Gateway's ClusterIP to the route `route`, with `headers`. */
  async function chat(route: string, headers: Record<string, string> = {}): Promise<{ status: number; body: string }> {
    const res = await fetch(`http://${address}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-route': route, ...headers },
      body: JSON.stringify({ model: 'mock-gpt', messages: [{ role: 'user', content: 'hello' }] }),
      signal: AbortSignal.timeout(10_000),
    });
    return { status: res.status, body: await res.text() };
  }
  const bearer = (key: string) => ({ authorization: `Bearer ${key}` });

  const acked = (team: Team, what: string, holds: (policy: RoutePolicy | null | undefined) => boolean) => everyProxyAcked<RoutePolicy>(node.current, team, what, holds);
  const holdsKeys = (ids: readonly string[]) => (policy: RoutePolicy | null | undefined) => JSON.stringify(policy?.apiKey?.consumers.map((c) => c.id) ?? []) === JSON.stringify(ids);

  beforeAll(async () => {
    await node.current.importImage(opaImage());
    await installChart(node.current);
    for (const ns of [GW_NS, ...TEAMS, AUTHZ]) await k('create', 'namespace', ns);
    await apply(GATEWAY_OBJECTS);
    for (const team of TEAMS) {
      await kubectlOk(node.current, ['apply', '-f', '-'], mockLlm(team, 1));
      await apply(teamObjects(team));
    }
    await kubectlOk(node.current, ['apply', '-f', '-'], opa(AUTHZ, REGO));
    await apply(opaRouteObjects());
    await k('wait', '--for=condition=Programmed', `gateway/${GATEWAY}`, '-n', GW_NS, '--timeout=180s');
    await k('rollout', 'status', '-n', GW_NS, `deployment/${PROXY}`, '--timeout=180s');
    await k('rollout', 'status', '-n', AUTHZ, 'deployment/opa', '--timeout=120s');
    for (const team of TEAMS) await k('rollout', 'status', '-n', team, 'deployment/mock-llm', '--timeout=120s');
    address = (await k('get', 'gateway', GATEWAY, '-n', GW_NS, '-o', 'jsonpath={.status.addresses[0].value}')).trim();
    for (const [ns, name] of [...TEAMS.map((t) => [t, 'api-keys']), ['team-a', 'opa-decides']] as const) {
      await until(`GatewayPolicy ${ns}/${name} Accepted`, async () => {
        const accepted = policyCondition(await json<PolicyStatus>('get', 'gatewaypolicy', name, '-n', ns), 'Accepted');
        if (accepted?.status === 'False') throw new Error(`${ns}/${name}: ${accepted.reason}: ${accepted.message}`);
        return accepted?.status === 'True' ? true : undefined;
      }, 60_000);
    }
    await acked('team-a', "holds team-a's key", holdsKeys([idOf(keyOf('team-a'))]));
    // kube-proxy follows the endpoints a moment after the pods are Ready.
    await until(`${address} answers`, async () => ((await chat('team-a', bearer(keyOf('team-a')))).status === 200 ? true : undefined), 60_000);
  }, 20 * 60_000);

  it("each team's key reaches the backend on its own route, and neither the other's nor none does", async () => {
    for (const team of TEAMS) {
      const ok = await chat(team, bearer(keyOf(team)));
      expect(ok.status, ok.body).toBe(200);
      expect(ok.body).toContain('"choices"');
      const other = TEAMS.find((t) => t !== team)!;
      expect((await chat(team, bearer(keyOf(other)))).status).toBe(401);
      expect((await chat(team)).status).toBe(401);
    }
  });

  it('a key revoked by editing its Secret is refused once every proxy ACKed the snapshot that drops it', async () => {
    const revoked = keyOf('team-a', 1);
    const rotated = keyOf('team-a', 2);
    await apply([apiKeySecret('team-a', rotated)]);
    const version = await acked('team-a', 'holds the rotated key only', holdsKeys([idOf(rotated)]));
    console.info(`[auth-api-keys] the revoked key's snapshot ${version} ACKed by both proxy pods`);
    // Through the Service: both proxy pods answer in turn; every answer refuses the old key.
    const statuses = await Promise.all(Array.from({ length: 20 }, () => chat('team-a', bearer(revoked)).then((r) => r.status)));
    expect(new Set(statuses)).toEqual(new Set([401]));
    expect((await chat('team-a', bearer(rotated))).status).toBe(200);
    // The other team is not affected.
    expect((await chat('team-b', bearer(keyOf('team-b')))).status).toBe(200);
  });

  it('a key Secret deleted: the policy is refused (InvalidSecretRef) and its route refuses every request, not none', async () => {
    await k('delete', 'secret', 'api-key', '-n', 'team-b');
    await acked('team-b', 'refuses every request', (policy) => policy?.apiKey === null && policy.authorization?.rules[0]?.name === 'policy-not-accepted');
    const accepted = policyCondition(await json<PolicyStatus>('get', 'gatewaypolicy', 'api-keys', '-n', 'team-b'), 'Accepted');
    expect(accepted).toMatchObject({ status: 'False', reason: 'InvalidSecretRef', message: 'spec.traffic.apiKey.secretRefs[0]: Secret team-b/api-key does not exist; create it or fix the name' });
    const statuses = await Promise.all([chat('team-b', bearer(keyOf('team-b'))), chat('team-b')].map((r) => r.then((x) => x.status)));
    expect(statuses).toEqual([403, 403]);
    expect((await chat('team-a', bearer(keyOf('team-a', 2)))).status).toBe(200);
  });

  it('OPA, as a pod, decides for its route over the external authorization protocol', async () => {
    const allowed = await chat('decided', { 'x-opa-allow': 'yes' });
    expect(allowed.status, allowed.body).toBe(200);
    expect(allowed.body).toContain('"choices"');
    const refused = await chat('decided', { 'x-opa-allow': 'no' });
    expect(refused.status, refused.body).toBe(403);
    expect((await chat('decided')).status).toBe(403);
  });
});
