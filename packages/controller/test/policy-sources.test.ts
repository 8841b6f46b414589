// The cluster's PolicySources (translate/policy-sources.ts) on the objects of the golden inputs,
// called as a kind's conversion calls them: a key of a Secret or ConfigMap, Secrets by name and
// by label, an outbound target by backendRef. What resolves, what is refused and with which
// status reason (RefNotPermitted, InvalidSecretRef, InvalidConfigMapRef, Invalid), and that no
// message shows a value, whatever the conversions do with what they read.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { V1Secret } from '@kubernetes/client-node';
import { MAX_SELECTED_SECRETS, type Problem, type SourceResult } from '@tollgate/api';
import { describe, expect, it } from 'vitest';
import { buildContext } from '../src/translate/context.js';
import { policyRefs } from '../src/translate/policy-refs.js';
import { checkReferences, ClusterPolicySources, MAX_REFERENCED_TEXT_BYTES, MAX_SELECTED_DATA_BYTES, refusalReason } from '../src/translate/policy-sources.js';
import type { Resources } from '../src/translate/types.js';
import type { GatewayPolicy } from '../src/types/gateway-api.js';
import { caseOptions, parseResources } from './support.js';

const dir = fileURLToPath(new URL('../testdata/', import.meta.url));

function load(name: string, change: (r: Resources & { secrets: V1Secret[] }) => void = () => undefined) {
  const text = readFileSync(`${dir}${name}.in.yaml`, 'utf8');
  const resources = parseResources(text, name) as Resources & { secrets: V1Secret[] };
  change(resources);
  const ctx = buildContext(resources, caseOptions(text));
  const policy = (n: string) => resources.gatewayPolicies.find((p) => p.metadata.name === n)!;
  const sources = (n: string) => new ClusterPolicySources(policy(n).metadata.namespace!, policyRefs(policy(n)), ctx);
  return { resources, ctx, policy, sources };
}

const b64 = (s: string | Buffer) => Buffer.from(s).toString('base64');
const secret = (name: string, namespace: string, data: Record<string, string>, labels?: Record<string, string>): V1Secret => ({
  apiVersion: 'v1',
  kind: 'Secret',
  metadata: { name, namespace, ...(labels ? { labels } : {}) },
  data,
});

function refused<T>(r: SourceResult<T>): { reason: string; problem: Problem } {
  if (r.ok) throw new Error(`expected a refusal, got ${JSON.stringify(r.value).slice(0, 200)}`);
  return r;
}
function value<T>(r: SourceResult<T>): T {
  if (!r.ok) throw new Error(`expected a value, got ${r.reason}: ${r.problem.path}: ${r.problem.message}`);
  return r.value;
}

const JWKS_AT = 'spec.traffic.jwt.providers[0].jwks.ref';
const HTPASSWD_AT = 'spec.traffic.basicAuth.htpasswd.secretRef';

describe('text(): a key of a Secret or ConfigMap', () => {
  it('reads a ConfigMap key of the policy’s namespace', () => {
    const { sources } = load('policy-auth-jwt');
    const r = value(sources('jwks-configmap').text(JWKS_AT, { kind: 'ConfigMap', name: 'jwks' }));
    expect(r.origin).toBe('ConfigMap team/jwks key jwks.json');
    expect(JSON.parse(r.text)).toMatchObject({ keys: [{ kid: 'team-a-1', kty: 'EC' }] });
  });

  it('reads a Secret key, the named one or the only one', () => {
    const { sources } = load('policy-auth-basic-auth');
    const named = value(sources('htpasswd').text(HTPASSWD_AT, { name: 'htpasswd', key: '.htpasswd' }));
    expect(named).toEqual({ origin: 'Secret team/htpasswd key .htpasswd', text: expect.stringMatching(/^alice:\$6\$tollgate0\$.*\nbob:\$apr1\$/) as unknown });
    expect(value(sources('htpasswd').text(HTPASSWD_AT, { name: 'htpasswd' })).text).toBe(named.text);
  });

  it('refuses a key the object lacks, a missing Secret and a missing ConfigMap, naming the field and the keys it has', () => {
    const { sources } = load('policy-auth-basic-auth');
    expect(refused(sources('wrong-key').text(HTPASSWD_AT, { name: 'htpasswd', key: 'users' }))).toEqual({
      ok: false,
      reason: 'InvalidSecretRef',
      problem: { path: `${HTPASSWD_AT}.key`, message: 'Secret team/htpasswd has no key "users" (its keys: ".htpasswd")' },
    });
    expect(refused(sources('missing').text(HTPASSWD_AT, { name: 'absent' }))).toMatchObject({ reason: 'InvalidSecretRef', problem: { path: HTPASSWD_AT, message: 'Secret team/absent does not exist; create it or fix the name' } });
    const jwt = load('policy-auth-jwt');
    expect(refused(jwt.sources('jwks-missing-configmap').text(JWKS_AT, { kind: 'ConfigMap', name: 'absent', key: 'jwks.json' }))).toMatchObject({
      reason: 'InvalidConfigMapRef',
      problem: { path: JWKS_AT, message: 'ConfigMap team/absent does not exist; create it or fix the name' },
    });
  });

  it('reads another namespace only with a ReferenceGrant there for GatewayPolicies of the policy’s namespace and that kind', () => {
    const { sources } = load('policy-auth-cross-namespace');
    expect(value(sources('granted-configmap').text(JWKS_AT, { kind: 'ConfigMap', name: 'jwks', namespace: 'idp' })).origin).toBe('ConfigMap idp/jwks key jwks.json');
    // The grant in keys is for one Secret; a ConfigMap there is not granted.
    expect(refused(sources('wrong-kind').text(JWKS_AT, { kind: 'ConfigMap', name: 'jwks', namespace: 'keys' }))).toEqual({
      ok: false,
      reason: 'RefNotPermitted',
      problem: { path: JWKS_AT, message: 'ConfigMap keys/jwks is in another namespace; a ReferenceGrant in keys must allow GatewayPolicies of team to refer to it' },
    });
    // A grant to HTTPRoutes does not let a GatewayPolicy in.
    expect(refused(sources('routes-only').text(HTPASSWD_AT, { name: 'htpasswd', namespace: 'shared' })).reason).toBe('RefNotPermitted');
    // Without a grant the data is not read, even when the Secret is in the context.
    const noGrants = load('policy-auth-cross-namespace', (r) => ((r as unknown as { referenceGrants: unknown[] }).referenceGrants = []));
    expect(refused(noGrants.sources('granted-configmap').text(JWKS_AT, { kind: 'ConfigMap', name: 'jwks', namespace: 'idp' })).reason).toBe('RefNotPermitted');
  });

  it('refuses a file, and an object no reference field of the policy names', () => {
    const { sources } = load('policy-auth-basic-auth');
    expect(refused(sources('htpasswd').text(HTPASSWD_AT, { file: '/etc/passwd' }))).toMatchObject({ reason: 'Invalid', problem: { path: `${HTPASSWD_AT}.file` } });
    // The Secret exists and is in the policy's namespace, but the policy does not name it.
    const other = load('policy-auth-basic-auth', (r) => r.secrets.push(secret('unnamed', 'team', { k: b64('v') })));
    expect(refused(other.sources('htpasswd').text(HTPASSWD_AT, { name: 'unnamed', key: 'k' }))).toMatchObject({ reason: 'Invalid', problem: { message: expect.stringContaining('Secret team/unnamed is not named by a reference field of the policy') as unknown } });
  });

  it('refuses text that is not UTF-8 or larger than the bound, and a key to choose among several, without showing a value', () => {
    const big = 'x'.repeat(MAX_REFERENCED_TEXT_BYTES + 1);
    const { sources } = load('policy-auth-basic-auth', (r) => {
      r.secrets.splice(0, r.secrets.length, secret('htpasswd', 'team', { '.htpasswd': b64(Buffer.from([0x61, 0x3a, 0xff, 0xfe])), big: b64(big), other: b64('hunter2') }));
    });
    expect(refused(sources('htpasswd').text(HTPASSWD_AT, { name: 'htpasswd', key: '.htpasswd' }))).toEqual({
      ok: false,
      reason: 'InvalidSecretRef',
      problem: { path: HTPASSWD_AT, message: 'Secret team/htpasswd key ".htpasswd" is not UTF-8 text' },
    });
    expect(refused(sources('htpasswd').text(HTPASSWD_AT, { name: 'htpasswd', key: 'big' })).problem.message).toBe(
      `Secret team/htpasswd key "big" holds ${MAX_REFERENCED_TEXT_BYTES + 1} bytes, more than the ${MAX_REFERENCED_TEXT_BYTES} a reference may read`,
    );
    const several = refused(sources('htpasswd').text(HTPASSWD_AT, { name: 'htpasswd' }));
    expect(several).toMatchObject({ reason: 'InvalidSecretRef', problem: { path: `${HTPASSWD_AT}.key`, message: 'names no key and Secret team/htpasswd has several (its keys: ".htpasswd", "big", "other"); set key' } });
    expect(JSON.stringify(several)).not.toContain('hunter2');
  });
});

describe('secrets(): Secrets by name and by label', () => {
  it('reads the named Secrets, decoded, in order', () => {
    const { sources } = load('policy-auth-api-keys');
    const r = value(sources('named').secrets('spec.traffic.apiKey.secretRefs', [{ name: 'key-alice' }, { name: 'key-bob' }], null));
    expect(r).toEqual([
      { origin: 'Secret team/key-alice', name: 'key-alice', data: { consumer: 'alice', group: 'team-a', key: 'sk-team-a-alice-0001' } },
      { origin: 'Secret team/key-bob', name: 'key-bob', data: { key: 'sk-team-a-bob-0002', labels: '{"tier":"gold"}' } },
    ]);
  });

  it('chooses by label in the policy’s namespace only, by name; a Secret both named and chosen once', () => {
    const { sources } = load('policy-auth-api-keys');
    const selector = { 'tollgate.dev/api-key': 'team-a' };
    const chosen = value(sources('selected').secrets('spec.traffic.apiKey.secretSelector', [], selector));
    // key-erin has another value, key-frank is in another namespace.
    expect(chosen.map((s) => s.origin)).toEqual(['Secret team/key-carol', 'Secret team/key-dave']);
    expect(chosen[1]!.data).toEqual({ consumer: 'dave', key: 'sk-team-a-dave-0004' });
    // A policy naming one and selecting it too (a hand-made policy: the schema allows both).
    const both = load('policy-auth-api-keys', (r) => {
      const p = r.gatewayPolicies.find((x) => x.metadata.name === 'selected')! as { spec: { traffic: { apiKey: Record<string, unknown> } } };
      p.spec.traffic.apiKey.secretRefs = [{ name: 'key-dave' }];
    });
    expect(value(both.sources('selected').secrets('spec.traffic.apiKey.secretRefs', [{ name: 'key-dave' }], selector)).map((s) => s.name)).toEqual(['key-dave', 'key-carol']);
  });

  it('refuses a selector the policy does not hold, one that chooses too many, and a Secret of another namespace without a grant', () => {
    const { sources } = load('policy-auth-api-keys');
    expect(refused(sources('selected').secrets('spec.traffic.apiKey.secretSelector', [], { 'tollgate.dev/api-key': 'team-b' }))).toMatchObject({ reason: 'Invalid', problem: { path: 'spec.traffic.apiKey.secretSelector' } });
    const many = load('policy-auth-api-keys', (r) => {
      for (let i = 0; i < MAX_SELECTED_SECRETS; i++) r.secrets.push(secret(`bulk-${String(i).padStart(4, '0')}`, 'team', { key: b64(`k${i}`) }, { 'tollgate.dev/api-key': 'team-a' }));
    });
    expect(refused(many.sources('selected').secrets('spec.traffic.apiKey.secretSelector', [], { 'tollgate.dev/api-key': 'team-a' }))).toEqual({
      ok: false,
      reason: 'InvalidSecretRef',
      problem: {
        path: 'spec.traffic.apiKey.secretSelector',
        message: `chooses more than ${MAX_SELECTED_SECRETS} Secrets of team, the most one selector may choose; give them a narrower label, or split them between policies`,
      },
    });
    const cross = load('policy-auth-cross-namespace');
    expect(value(cross.sources('granted').secrets('spec.traffic.apiKey.secretRefs', [{ name: 'team-a-key', namespace: 'keys' }], null))[0]!.origin).toBe('Secret keys/team-a-key');
    expect(refused(cross.sources('other-name').secrets('spec.traffic.apiKey.secretRefs', [{ name: 'team-b-key', namespace: 'keys' }], null))).toMatchObject({
      reason: 'RefNotPermitted',
      problem: { path: 'spec.traffic.apiKey.secretRefs[0]' },
    });
  });

  it('refuses data that is not UTF-8, and more data together than the bound, naming the Secret and key only', () => {
    const { sources } = load('policy-auth-api-keys', (r) => {
      const alice = r.secrets.find((s) => s.metadata?.name === 'key-alice')!;
      alice.data = { ...alice.data, avatar: b64(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0xff])) };
    });
    expect(refused(sources('named').secrets('spec.traffic.apiKey.secretRefs', [{ name: 'key-alice' }], null))).toEqual({
      ok: false,
      reason: 'InvalidSecretRef',
      problem: { path: 'spec.traffic.apiKey.secretRefs[0]', message: 'Secret team/key-alice key "avatar" is not UTF-8 text' },
    });
    const chunk = 'y'.repeat(1024 * 1024 - 1);
    const count = Math.ceil(MAX_SELECTED_DATA_BYTES / chunk.length) + 1;
    const heavy = load('policy-auth-api-keys', (r) => {
      for (let i = 0; i < count; i++) r.secrets.push(secret(`heavy-${String(i).padStart(2, '0')}`, 'team', { key: b64(chunk) }, { 'tollgate.dev/api-key': 'team-a' }));
    });
    const r = refused(heavy.sources('selected').secrets('spec.traffic.apiKey.secretSelector', [], { 'tollgate.dev/api-key': 'team-a' }));
    expect(r.reason).toBe('InvalidSecretRef');
    expect(r.problem.message).toMatch(new RegExp(`^the Secrets chosen hold more than ${MAX_SELECTED_DATA_BYTES} bytes of data together \\(at Secret team/heavy-\\d+\\)`));
  });
});

describe('outbound(): a Service by backendRef', () => {
  it('resolves to the Service’s cluster name and reports its readiness; another namespace needs a grant', () => {
    const { sources } = load('policy-auth-ext-authz');
    const s = sources('opa');
    expect(value(s.outbound('spec.traffic.extAuthz.service', { backendRef: { name: 'opa', port: 9191 } }, 'external authorization service', 'FailClosed'))).toBe('opa.team.svc.cluster.local:9191');
    expect(s.resolved).toEqual([
      { role: 'external authorization service', target: { address: 'opa.team.svc.cluster.local:9191', object: 'Service team/opa', readyEndpoints: 1 }, failureMode: 'FailClosed', openWithout: 'the external authorization service', rateLimit: false },
    ]);
    expect(refused(sources('opa-other-namespace').outbound('spec.traffic.extAuthz.service', { backendRef: { name: 'opa', namespace: 'authz', port: 9191 } }, 'external authorization service', 'FailClosed'))).toMatchObject({
      reason: 'RefNotPermitted',
      problem: { path: 'spec.traffic.extAuthz.service.backendRef' },
    });
    expect(value(sources('opa-granted').outbound('spec.traffic.extAuthz.service', { backendRef: { name: 'opa-shared', namespace: 'authz', port: 9191 } }, 'external authorization service', 'FailOpen'))).toBe('opa-shared.authz.svc.cluster.local:9191');
    expect(refused(sources('opa').outbound('spec.traffic.extAuthz.service', { host: '10.0.0.1:9191' }, 'external authorization service', 'FailClosed'))).toMatchObject({ reason: 'Invalid', problem: { path: 'spec.traffic.extAuthz.service.host' } });
  });
});

describe('the status reason of what a conversion reports', () => {
  it('a refusal keeps its reason; a problem found in what a read returned takes the reference’s; any other is Invalid', () => {
    const { sources } = load('policy-auth-basic-auth');
    const s = sources('htpasswd');
    value(s.text(HTPASSWD_AT, { name: 'htpasswd' }));
    expect(s.reasonOf({ path: `${HTPASSWD_AT}`, message: 'line 2: {SHA} hashes are refused' })).toBe('InvalidSecretRef');
    expect(s.reasonOf({ path: 'spec.traffic.basicAuth.realm', message: 'x' })).toBe('Invalid');
    // A sibling path that merely starts alike is not under the read.
    expect(s.reasonOf({ path: `${HTPASSWD_AT}Extra`, message: 'x' })).toBe('Invalid');
    const failed = refused(s.text(HTPASSWD_AT, { name: 'htpasswd', key: 'nope' }));
    expect(s.reasonOf(failed.problem)).toBe('InvalidSecretRef');
    const cross = load('policy-auth-cross-namespace').sources('wrong-kind');
    const denied = refused(cross.text(JWKS_AT, { kind: 'ConfigMap', name: 'jwks', namespace: 'keys' }));
    expect(cross.reasonOf(denied.problem)).toBe('RefNotPermitted');
    expect(cross.reasonOf({ ...denied.problem })).toBe('RefNotPermitted');
  });

  it('checkReferences finds every broken reference of a policy; the policy’s reason prefers a missing object to a missing grant', () => {
    const { ctx, policy } = load('policy-auth-cross-namespace');
    const check = (n: string) => checkReferences('team', policyRefs(policy(n)), ctx);
    expect(check('granted')).toEqual([]);
    expect(check('granted-configmap')).toEqual([]);
    const both = check('missing-and-not-permitted');
    expect(both.map((f) => [f.problem.path, f.reason])).toEqual([
      ['spec.traffic.apiKey.secretRefs[0]', 'RefNotPermitted'],
      ['spec.traffic.apiKey.secretRefs[1]', 'InvalidSecretRef'],
    ]);
    expect(refusalReason(both)).toBe('InvalidSecretRef');
    expect(refusalReason(check('other-name'))).toBe('RefNotPermitted');
    expect(refusalReason([...both, { problem: { path: 'spec.traffic', message: 'x' }, reason: 'Invalid' }])).toBe('Invalid');
    const jwt = load('policy-auth-jwt');
    const p = (n: string) => checkReferences('team', policyRefs(jwt.policy(n)), jwt.ctx);
    expect(p('jwks-configmap')).toEqual([]);
    expect(p('jwks-remote')).toEqual([]);
    expect(p('jwks-missing-configmap').map((f) => f.reason)).toEqual(['InvalidConfigMapRef']);
    expect(p('jwks-missing-service')).toEqual([
      { ok: false, reason: 'Invalid', problem: { path: 'spec.traffic.jwt.providers[0].jwks.remote.backendRef', message: 'Service team/absent does not exist; create it or fix the name' } },
    ]);
  });

  it('the references of a policy are found by field name, wherever the kind puts them', () => {
    const p = { metadata: { name: 'p', namespace: 'team' }, spec: { targetRefs: [], traffic: { jwt: { providers: [{ name: 'a', jwks: { remote: { backendRef: { name: 'idp', port: 443 }, path: '/', tls: { caCertificateRef: { kind: 'ConfigMap', name: 'ca', namespace: 'pki' } } } } }] }, apiKey: { secretRefs: [{ name: 'k' }], secretSelector: { matchLabels: { a: 'b' } } } } } } as unknown as GatewayPolicy;
    expect(policyRefs(p)).toEqual({
      objects: [
        { at: 'spec.traffic.apiKey.secretRefs[0]', kind: 'Secret', namespace: 'team', name: 'k', key: null },
        { at: 'spec.traffic.jwt.providers[0].jwks.remote.tls.caCertificateRef', kind: 'ConfigMap', namespace: 'pki', name: 'ca', key: null },
      ],
      selectors: [{ at: 'spec.traffic.apiKey.secretSelector', matchLabels: { a: 'b' } }],
      outbound: [{ at: 'spec.traffic.jwt.providers[0].jwks.remote', field: { backendRef: { name: 'idp', port: 443 }, path: '/', tls: { caCertificateRef: { kind: 'ConfigMap', name: 'ca', namespace: 'pki' } } } }],
    });
  });
});
