// What the trace's effectivePolicy and /config_dump show of the authentication kinds: a
// summary that never holds a credential (a digest, a password hash) nor grows with the
// consumers. The policies are the IR of a real config with each kind's IR set on it, as the
// kinds' conversions make it; the proxies' own traces of them are in auth-operator.test.ts.
import { Secret, standaloneToSnapshot, validateStandaloneConfig, type ApiKeyIR, type BasicAuthIR, type JwtIR, type PolicyIR, type ProxySnapshot } from '@tollgate/api';
import { describe, expect, it } from 'vitest';
import { configDump } from '../src/admin/config-dump.js';
import { MAX_LISTED_ENTRIES } from '../src/auth/summary.js';
import { effectivePolicy } from '../src/trace/effective-policy.js';
import { CoolDowns } from '../src/upstream/cool-downs.js';

const DIGEST = 'f'.repeat(64);
const HASH = '$2y$10$abcdefghijklmnopqrstuuQ1rN9b9pDqS0m7Jm8o7N3xv1u7gyXr6';
const JWKS = JSON.stringify({ keys: [{ kty: 'RSA', kid: 'k1', n: 'n'.repeat(342), e: 'AQAB' }] });
const CA = '-----BEGIN CERTIFICATE-----\nMIIB' + 'A'.repeat(600) + '\n-----END CERTIFICATE-----\n';

function apiKey(n: number): ApiKeyIR {
  return {
    keyFrom: [{ type: 'Bearer' }, { type: 'Header', name: 'x-api-key' }],
    consumers: Array.from({ length: n }, (_, i) => ({ digest: new Secret(DIGEST), id: i.toString(16).padStart(8, '0'), consumer: `consumer-${i}`, group: i % 2 ? 'team-a' : null, labels: { tier: 'gold' } })),
  };
}

const basicAuth = (n: number): BasicAuthIR => ({ realm: 'ops', origin: 'file /etc/tollgate/htpasswd', users: Array.from({ length: n }, (_, i) => ({ user: `user-${i}`, scheme: 'bcrypt' as const, hash: new Secret(HASH) })) });

const jwt: JwtIR = {
  mode: 'Strict',
  maxTokenLength: 8192,
  providers: [
    { name: 'inline', issuer: 'https://issuer.example', audiences: ['api'], keys: { kind: 'static', origin: 'inline', jwks: JWKS }, clockSkewMs: 60_000, tokenFrom: [{ type: 'Bearer' }], consumerClaim: 'sub', groupClaim: 'team', claimsToHeaders: [{ claim: 'sub', header: 'x-user' }], forwardToken: false },
    { name: 'remote', issuer: null, audiences: [], keys: { kind: 'remote', address: 'idp.example:443', path: '/jwks.json', tls: { ca: CA, hostname: 'idp.example' }, cacheMs: 300_000, timeoutMs: 5_000 }, clockSkewMs: 0, tokenFrom: [{ type: 'Cookie', name: 'token' }], consumerClaim: 'sub', groupClaim: null, claimsToHeaders: [], forwardToken: true },
  ],
};

/** A real config's snapshot, one route with authorization rules; `auth` sets other kinds on the route's policy. */
function snapshot(auth: Partial<Record<'apiKey' | 'basicAuth' | 'jwt', unknown>>): ProxySnapshot {
  const cfg = validateStandaloneConfig({
    binds: [{ port: 3000, listeners: [{ name: 'main', protocol: 'HTTP', routes: [{ name: 'r', policies: { traffic: { authorization: { rules: [{ name: 'team', action: 'Allow', expression: 'consumer.group == "team-a"' }] } } }, backends: [{ host: '127.0.0.1:9000' }] }] }] }],
  });
  const snap = standaloneToSnapshot(cfg, { kind: 'file', path: '/config.yaml' });
  Object.assign(snap.binds[0]!.listeners[0]!.routes[0]!.policy as PolicyIR, auth);
  return snap;
}

const dump = (snap: ProxySnapshot) =>
  configDump(snap, 0, { endpoints: new Map(), coolDowns: new CoolDowns({ defaultMs: 1, maxMs: 1 }, () => 0) }, {
    requestHeadersTimeoutMs: 1,
    requestBodyIdleTimeoutMs: 1,
    backendBodyIdleTimeoutMs: 1,
    requestBodyTimeoutMs: 1,
    keepAliveTimeoutMs: 1,
    maxRequestBodyBytes: 1,
    maxBufferedRequestBytes: 1,
    maxConnectionsPerBind: 1,
    maxWebSocketConnections: 1,
    websocketIdleTimeoutMs: 1,
    tlsClientHelloTimeoutMs: 1,
    tlsIdleTimeoutMs: 1,
    maxTraceSessions: 1,
    maxTokensChargedPerResponse: 1,
    maxRateLimitKeys: 1,
    consumerMetricsTopN: 1,
    http2: { maxConcurrentStreams: 1, maxHeaderListBytes: 1, alpnProtocols: [] },
    basicAuth: { workers: 1, maxQueue: 1, cacheEntries: 1 },
    retries: { retryBudgetPercent: 1, retryBudgetMinConcurrency: 1, maxRetryBodyBytes: 1, coolDownMs: 1, maxCoolDownMs: 1 },
    workers: 1,
  });

/** The route's policy as config_dump shows it, and its effectivePolicy as the trace does. */
function shown(snap: ProxySnapshot) {
  const listener = snap.binds[0]!.listeners[0]!;
  const text = JSON.stringify(dump(snap));
  const policy = (JSON.parse(text) as { policies: { policy: Record<string, unknown> }[] }).policies[0]!.policy;
  const trace = effectivePolicy(listener, listener.routes[0]!);
  return { text, policy, trace, traceText: JSON.stringify(trace) };
}

describe('apiKey', () => {
  it('100,000 keys show as a count: config_dump stays small, no digest anywhere', () => {
    const { text, policy, trace, traceText } = shown(snapshot({ apiKey: apiKey(100_000) }));
    expect(policy.apiKey).toEqual({ keyFrom: [{ type: 'Bearer' }, { type: 'Header', name: 'x-api-key' }], consumers: 100_000 });
    expect(trace.apiKey).toEqual([{ source: 'route', config: policy.apiKey }]);
    expect(text.length).toBeLessThan(4096);
    expect(traceText.length).toBeLessThan(2048);
    for (const t of [text, traceText]) {
      expect(t).not.toContain(DIGEST);
      expect(t).not.toContain('consumer-99999');
    }
  });

  it(`up to ${MAX_LISTED_ENTRIES} keys are listed by id, consumer and group (never the digest)`, () => {
    const { text, policy } = shown(snapshot({ apiKey: apiKey(MAX_LISTED_ENTRIES) }));
    const listed = (policy.apiKey as { keys: unknown[] }).keys;
    expect(listed).toHaveLength(MAX_LISTED_ENTRIES);
    expect(listed[1]).toEqual({ id: '00000001', consumer: 'consumer-1', group: 'team-a' });
    expect(text).not.toContain(DIGEST);
    expect((shown(snapshot({ apiKey: apiKey(MAX_LISTED_ENTRIES + 1) })).policy.apiKey as { keys?: unknown }).keys).toBeUndefined();
  });
});

describe('basicAuth', () => {
  it(`lists up to ${MAX_LISTED_ENTRIES} users by name and scheme, never a hash`, () => {
    const { text, policy } = shown(snapshot({ basicAuth: basicAuth(2) }));
    expect(policy.basicAuth).toEqual({ realm: 'ops', origin: 'file /etc/tollgate/htpasswd', users: 2, entries: [{ user: 'user-0', scheme: 'bcrypt' }, { user: 'user-1', scheme: 'bcrypt' }] });
    expect(text).not.toContain('$2y$');
  });

  it('100,000 users show as the realm, where they came from and how many; never a hash or a user list', () => {
    const { text, policy, traceText } = shown(snapshot({ basicAuth: basicAuth(100_000) }));
    expect(policy.basicAuth).toEqual({ realm: 'ops', origin: 'file /etc/tollgate/htpasswd', users: 100_000 });
    for (const t of [text, traceText]) {
      expect(t).not.toContain('$2y$');
      expect(t).not.toContain('user-1');
    }
  });
});

describe('jwt', () => {
  it('shows the providers without key material: the origin of a key set, the address of a remote one', () => {
    const { text, policy, traceText } = shown(snapshot({ jwt }));
    expect(policy.jwt).toMatchObject({ mode: 'Strict', maxTokenLength: 8192 });
    const providers = (policy.jwt as { providers: { name: string; keys: unknown }[] }).providers;
    expect(providers.map((p) => p.keys)).toEqual([
      { kind: 'static', origin: 'inline' },
      { kind: 'remote', address: 'idp.example:443', path: '/jwks.json', tls: { hostname: 'idp.example', customCa: true }, cacheMs: 300_000, timeoutMs: 5_000 },
    ]);
    expect(providers[0]).toMatchObject({ name: 'inline', issuer: 'https://issuer.example', audiences: ['api'], consumerClaim: 'sub', groupClaim: 'team' });
    for (const t of [text, traceText]) {
      expect(t).not.toContain('nnnnnnnn');
      expect(t).not.toContain('BEGIN CERTIFICATE');
    }
  });
});

describe('authorization', () => {
  it('shows its rules as written', () => {
    const { policy, trace } = shown(snapshot({}));
    expect(policy.authorization).toEqual({ rules: [{ name: 'team', action: 'Allow', expression: 'consumer.group == "team-a"' }] });
    expect(trace.authorization).toEqual([{ source: 'route', config: policy.authorization }]);
  });
});
