// GatewayPolicies that authenticate, translated as the controller does on every change: what
// the proxies get when a referenced Secret changes, disappears or was never there.
// - A policy that authenticates and is not accepted keeps its target closed (every request
//   refused), never open; an older valid policy on the target still wins; a policy that does
//   not authenticate leaves its target as before.
// - A converted policy is converted again only when what it read changed: the same objects give
//   the same PolicyIR object; a rotated key (a new Secret object) a new one with the new id.
// - Every snapshot of the authentication cases passes the schema the proxies check.
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { V1Secret } from '@kubernetes/client-node';
import type { PolicyIR, ProxySnapshot } from '@tollgate/api';
import { describe, expect, it } from 'vitest';
import { checkSnapshot } from '../src/snapshots/validate.js';
import { translate } from '../src/translate/index.js';
import type { GatewayPolicy } from '../src/types/gateway-api.js';
import { caseOptions, parseResources } from './support.js';

const dir = fileURLToPath(new URL('../testdata/', import.meta.url));
const read = (name: string) => readFileSync(`${dir}${name}.in.yaml`, 'utf8');
const b64 = (s: string) => Buffer.from(s).toString('base64');
const idOf = (key: string) => createHash('sha256').update(key).digest('hex').slice(0, 8);

function routePolicy(snapshot: ProxySnapshot | undefined, route: string): PolicyIR | null | undefined {
  for (const b of snapshot?.binds ?? []) for (const l of b.listeners) for (const r of l.routes) if (r.origin?.kind === 'HTTPRoute' && r.origin.name === route) return r.policy;
  return undefined;
}

function accepted(result: ReturnType<typeof translate>, policy: string) {
  return result.status.gatewayPolicies.get(`team/${policy}`)?.ancestors[0]?.conditions.find((c) => c.type === 'Accepted');
}

const options = caseOptions('');

describe('a policy that authenticates and is not accepted', () => {
  it('keeps its target closed: the route runs a rule that refuses every request, and says so', () => {
    const r = parseResources(read('policy-auth-basic-auth'), 'policy-auth-basic-auth');
    const out = translate(r, options);
    expect(accepted(out, 'missing')).toMatchObject({ status: 'False', reason: 'InvalidSecretRef' });
    const policy = routePolicy(out.snapshots.get('infra/gw'), 'missing');
    expect(policy).toMatchObject({
      origin: { kind: 'GatewayPolicy', namespace: 'team', name: 'missing' },
      apiKey: null,
      basicAuth: null,
      authorization: { rules: [{ name: 'policy-not-accepted', action: 'Deny', expression: 'true' }] },
    });
    const attached = out.status.gatewayPolicies.get('team/missing')!.ancestors[0]!.conditions.find((c) => c.type === 'Attached');
    expect(attached).toMatchObject({ status: 'False', reason: 'Pending', message: expect.stringContaining('every request of HTTPRoute team/missing is refused (403) until it is') as unknown });
  });

  it('an older valid policy on the same target wins; a policy that does not authenticate leaves its target open as before', () => {
    const r = parseResources(read('policy-auth-basic-auth'), 'policy-auth-basic-auth');
    const limit = (name: string, created: string, requests: number): GatewayPolicy => ({
      apiVersion: 'tollgate.dev/v1alpha1',
      kind: 'GatewayPolicy',
      metadata: { name, namespace: 'team', generation: 1, creationTimestamp: created },
      spec: { targetRefs: [{ group: 'gateway.networking.k8s.io', kind: 'HTTPRoute', name: 'missing' }], traffic: { rateLimit: { local: [{ requests, unit: 'Minutes' }] } } },
    });
    const older = translate({ ...r, gatewayPolicies: [...r.gatewayPolicies, limit('accepted-limit', '2025-01-01T00:00:00Z', 5)] }, options);
    expect(routePolicy(older.snapshots.get('infra/gw'), 'missing')).toMatchObject({ origin: { name: 'accepted-limit' }, authorization: null, localRateLimit: [{ requests: 5 }] });
    // A rate limit policy that is invalid (its own problem) is not applied: the route has none.
    const broken = limit('broken-limit', '2025-01-01T00:00:00Z', 5);
    const brokenSpec = broken.spec as unknown as { targetRefs: { name: string }[]; traffic: { rateLimit: { local: { requests: number; burst?: number; unit: string }[]; global?: unknown } } };
    brokenSpec.targetRefs[0]!.name = 'htpasswd';
    brokenSpec.traffic.rateLimit.global = { service: { host: 'rls:8081' }, domain: 'd', descriptors: [{ unit: 'Requests', entries: [{ name: 'k', expression: 'llm.model' }] }] };
    const open = translate({ ...r, gatewayPolicies: [broken] }, options);
    expect(accepted(open, 'broken-limit')).toMatchObject({ status: 'False', reason: 'Invalid' });
    expect(routePolicy(open.snapshots.get('infra/gw'), 'htpasswd')).toBeNull();
  });

  it('at a Gateway, its API keys and htpasswd users are empty too, so a route with its own authorization rules accepts no credential either', () => {
    const r = parseResources(read('policy-auth-basic-auth'), 'policy-auth-basic-auth');
    const gatewayWide: GatewayPolicy = {
      apiVersion: 'tollgate.dev/v1alpha1',
      kind: 'GatewayPolicy',
      metadata: { name: 'everyone', namespace: 'infra', generation: 1, creationTimestamp: '2026-01-01T00:00:00Z' },
      spec: {
        targetRefs: [{ group: 'gateway.networking.k8s.io', kind: 'Gateway', name: 'gw' }],
        traffic: { apiKey: { secretRefs: [{ name: 'absent' }] }, basicAuth: { htpasswd: { secretRef: { name: 'absent' } } } },
      },
    };
    const out = translate({ ...r, gatewayPolicies: [gatewayWide] }, options);
    expect(out.status.gatewayPolicies.get('infra/everyone')?.ancestors[0]?.conditions.find((c) => c.type === 'Accepted')).toMatchObject({ status: 'False', reason: 'InvalidSecretRef' });
    const listener = out.snapshots.get('infra/gw')!.binds[0]!.listeners[0]!;
    expect(listener.policy).toMatchObject({
      origin: { name: 'everyone', target: { kind: 'Gateway', name: 'gw' } },
      apiKey: { consumers: [] },
      basicAuth: { users: [] },
      jwt: null,
      extAuthz: null,
      authorization: { rules: [{ name: 'policy-not-accepted', action: 'Deny', expression: 'true' }] },
    });
    expect(checkSnapshot(out.snapshots.get('infra/gw')!)).toBeUndefined();
    // A route-level policy refused: its rule alone, which nothing below it replaces.
    const route = routePolicy(translate(r, options).snapshots.get('infra/gw'), 'missing');
    expect(route).toMatchObject({ apiKey: null, basicAuth: null, authorization: { rules: [{ name: 'policy-not-accepted' }] } });
  });
});

describe('every snapshot of the golden cases', () => {
  const cases = readdirSync(dir).filter((f) => f.endsWith('.in.yaml')).map((f) => f.slice(0, -'.in.yaml'.length));
  it.each(cases)('%s passes the schema the proxies check', (name) => {
    const text = read(name);
    for (const [gw, s] of translate(parseResources(text, name), caseOptions(text)).snapshots) expect(checkSnapshot(s), gw).toBeUndefined();
  });
});

// Needs the apiKey conversion (toApiKeyIR reading its Secrets through sources.secrets()).
describe('the conversion, again only when what it read changed (apiKey conversion)', () => {
  it('the same objects give the same PolicyIR object; a rotated key a new one with the new id; a deleted Secret closes the route', () => {
    const r = parseResources(read('policy-auth-api-keys'), 'policy-auth-api-keys');
    const first = translate(r, options);
    expect(accepted(first, 'named')).toMatchObject({ status: 'True', reason: 'Accepted' });
    const before = routePolicy(first.snapshots.get('infra/gw'), 'named')!;
    expect(before.apiKey?.consumers.map((c) => [c.consumer, c.id])).toEqual([
      ['alice', idOf('sk-team-a-alice-0001')],
      ['key-bob', idOf('sk-team-a-bob-0002')],
    ]);
    expect(routePolicy(translate(r, options).snapshots.get('infra/gw'), 'named')).toBe(before);

    const secrets = r.secrets as V1Secret[];
    const alice = secrets.findIndex((s) => s.metadata?.name === 'key-alice');
    const rotated = [...secrets];
    rotated[alice] = { ...secrets[alice]!, data: { ...secrets[alice]!.data, key: b64('sk-team-a-alice-0099') } };
    const after = routePolicy(translate({ ...r, secrets: rotated }, options).snapshots.get('infra/gw'), 'named')!;
    expect(after).not.toBe(before);
    expect(after.apiKey?.consumers.map((c) => c.id)).toEqual([idOf('sk-team-a-alice-0099'), idOf('sk-team-a-bob-0002')]);
    // Another policy's route, whose Secrets did not change, keeps its object.
    expect(routePolicy(translate({ ...r, secrets: rotated }, options).snapshots.get('infra/gw'), 'selected')).toBe(routePolicy(first.snapshots.get('infra/gw'), 'selected'));

    const deleted = translate({ ...r, secrets: secrets.filter((_, i) => i !== alice) }, options);
    expect(accepted(deleted, 'named')).toMatchObject({ status: 'False', reason: 'InvalidSecretRef', message: 'spec.traffic.apiKey.secretRefs[0]: Secret team/key-alice does not exist; create it or fix the name' });
    expect(routePolicy(deleted.snapshots.get('infra/gw'), 'named')?.authorization?.rules[0]?.name).toBe('policy-not-accepted');
  });

  it('a Secret without the data key refuses its policy with InvalidSecretRef, naming the Secret and no key', () => {
    const out = translate(parseResources(read('policy-auth-api-keys'), 'policy-auth-api-keys'), options);
    const c = accepted(out, 'without-key')!;
    expect(c).toMatchObject({ status: 'False', reason: 'InvalidSecretRef' });
    expect(c.message).toContain('team/no-key');
    expect(c.message).not.toMatch(/sk-team-a/);
  });
});
