// jwt policies from config to IR: which key sets are accepted (public asymmetric keys only,
// bounded), where they are read from (inline, file, Secret/ConfigMap key, remote address and
// CA), the defaults, and every refusal naming its field.
import { generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { issueTestCertificate } from '@tollgate/testkit';
import { decodeSnapshot, encodeSnapshot, parseJwks, standaloneToSnapshot, validateStandaloneConfig, type JwtConfig, type PolicySources, type Problem } from '../src/index.js';
import { toJwtIR } from '../src/auth/jwt-ir.js';
import { cfg, problems, route } from './support.js';

const jwk = (kind: 'rsa' | 'rsa1024' | 'ec' | 'k256' | 'ed' | 'ed448' | 'x25519', extra: Record<string, unknown> = {}) => {
  const pair =
    kind === 'rsa' || kind === 'rsa1024'
      ? generateKeyPairSync('rsa', { modulusLength: kind === 'rsa' ? 2048 : 1024 })
      : kind === 'ec' || kind === 'k256'
        ? generateKeyPairSync('ec', { namedCurve: kind === 'ec' ? 'P-256' : 'secp256k1' })
        : kind === 'ed'
          ? generateKeyPairSync('ed25519')
          : kind === 'ed448'
            ? generateKeyPairSync('ed448')
            : generateKeyPairSync('x25519');
  return { ...(pair.publicKey.export({ format: 'jwk' }) as Record<string, unknown>), ...extra };
};
const RSA = jwk('rsa', { kid: 'r1' });
const set = (...keys: unknown[]) => JSON.stringify({ keys });

const AT = 'spec.traffic.jwt';

/** Sources over in-memory files and objects: what a loader or the controller would return. */
function sources(mode: 'standalone' | 'cluster', files: Record<string, string> = {}): PolicySources & { reads: unknown[] } {
  const reads: unknown[] = [];
  return {
    mode,
    reads,
    text: (at, ref) => {
      reads.push(ref);
      const key = 'file' in ref ? ref.file : `${ref.kind}/${ref.namespace ?? 'ns'}/${ref.name}/${ref.key}`;
      const text = files[key];
      if (text === undefined) return { ok: false, reason: 'InvalidRef', problem: { path: at, message: `${key} not found` } };
      return { ok: true, value: { origin: 'file' in ref ? `file /cfg/${ref.file}` : `${ref.kind} ${ref.namespace ?? 'ns'}/${ref.name}`, text } };
    },
    secrets: (at) => ({ ok: false, reason: 'Invalid', problem: { path: at, message: 'no secrets' } }),
    outbound: (at, ref, role) =>
      ref.host !== undefined ? { ok: true, value: ref.host } : ref.backendRef ? { ok: true, value: `${ref.backendRef.name}.${ref.backendRef.namespace ?? 'ns'}.svc.cluster.local:${ref.backendRef.port}` } : { ok: false, reason: 'Invalid', problem: { path: at, message: `no ${role}` } },
  };
}

function convert(config: Record<string, unknown>, src: PolicySources = sources('standalone')) {
  const out: Problem[] = [];
  const ir = toJwtIR(config as unknown as JwtConfig, AT, src, out);
  return { ir, problems: out.map((p) => `${p.path}: ${p.message}`) };
}

const provider = (extra: Record<string, unknown> = {}) => ({ name: 'corp', jwks: { inline: set(RSA) }, ...extra });

describe('toJwtIR', () => {
  it('fills the defaults: Bearer, sub, 60s skew, Strict, 8192 characters, token removed', () => {
    const { ir, problems: p } = convert({ providers: [provider()] });
    expect(p).toEqual([]);
    expect(ir).toEqual({
      mode: 'Strict',
      maxTokenLength: 8192,
      providers: [{ name: 'corp', issuer: null, audiences: [], keys: { kind: 'static', origin: 'inline', jwks: set(RSA) }, clockSkewMs: 60_000, tokenFrom: [{ type: 'Bearer' }], consumerClaim: 'sub', groupClaim: null, claimsToHeaders: [], forwardToken: false }],
    });
  });

  it('lower-cases header names (locations and claim headers) and keeps the prefix', () => {
    const { ir } = convert({ providers: [provider({ tokenFrom: [{ type: 'Header', name: 'X-Token', prefix: 'JWT ' }, { type: 'Cookie', name: 'Session' }], claimsToHeaders: [{ claim: 'sub', header: 'X-User' }] })] });
    expect(ir!.providers[0]!.tokenFrom).toEqual([{ type: 'Header', name: 'x-token', prefix: 'JWT ' }, { type: 'Cookie', name: 'Session' }]);
    expect(ir!.providers[0]!.claimsToHeaders).toEqual([{ claim: 'sub', header: 'x-user' }]);
  });

  it.each([
    ['a symmetric (oct) key, naming its index', [RSA, { kty: 'oct', k: 'c2VjcmV0' }], 'keys[1] is a symmetric (oct) key: HMAC is not accepted'],
    ['a private key', [jwk('rsa', { d: 'AAAA' })], 'keys[0] holds private key material ("d")'],
    ['a 1024-bit RSA key', [jwk('rsa1024')], 'keys[0] is a 1024-bit RSA key; RSA keys of 2048 to 8192 bits are accepted'],
    ['an EC key on secp256k1', [jwk('k256')], 'keys[0] is an EC key on "secp256k1"'],
    ['an X25519 (encryption) key', [jwk('x25519')], 'keys[0] is an OKP key on "X25519"'],
    ['an Ed448 key (jose does not verify it)', [jwk('ed448')], 'keys[0] is an OKP key on "Ed448"'],
    ['a key whose alg does not fit it', [jwk('rsa', { alg: 'ES256' })], 'keys[0] has "alg": "ES256", which does not fit a RSA key'],
    ['an RSA key marked for HS256', [jwk('rsa', { alg: 'HS256' })], 'keys[0] has "alg": "HS256", which is never accepted'],
    ['a key that does not parse', [{ kty: 'EC', crv: 'P-256', x: 'AAAA', y: 'AAAA' }], 'keys[0] is not a valid EC public key'],
    ['an EC key without y', [{ kty: 'EC', crv: 'P-256', x: 'AAAA' }], 'keys[0] is an EC key without "x" and "y"'],
    ['a kid that is not a string', [{ ...RSA, kid: 5 }], 'keys[0] has a "kid" that is not a string'],
    ['only encryption keys', [jwk('rsa', { use: 'enc' })], 'the key set has no key that can verify signatures'],
    ['no keys', [], 'the key set has no keys'],
  ])('refuses an inline set with %s', (_what, keys, message) => {
    const { ir, problems: p } = convert({ providers: [provider({ jwks: { inline: set(...keys) } })] });
    expect(ir).toBeNull();
    expect(p).toEqual([expect.stringContaining(`${AT}.providers[0].jwks.inline: ${message}`)]);
  });

  it('refuses text that is not a JWKS document', () => {
    expect(convert({ providers: [provider({ jwks: { inline: 'nope' } })] }).problems[0]).toMatch(/jwks\.inline: the key set is not JSON .*; write a JWKS document/);
    expect(convert({ providers: [provider({ jwks: { inline: '{"kys":[]}' } })] }).problems[0]).toContain('jwks.inline: the key set has no "keys" array');
    const many = set(...Array.from({ length: 65 }, (_, i) => ({ ...RSA, kid: `k${i}` })));
    expect(convert({ providers: [provider({ jwks: { inline: many } })] }).problems[0]).toContain('the key set has 65 keys, more than the 64');
  });

  it('accepts RSA, EC and Ed25519 keys, and leaves out encryption keys beside them', () => {
    const r = parseJwks(set(RSA, jwk('ec', { kid: 'e' }), jwk('ed', { kid: 'o' }), jwk('rsa', { use: 'enc', alg: 'RSA-OAEP' })), 'strict');
    expect(r.ok && r.keys.map((k) => `${k.kty}:${k.crv}:${k.kid}`)).toEqual(['RSA:null:r1', 'EC:P-256:e', 'OKP:Ed25519:o']);
    expect(r.ok && r.ignored).toBe(1);
    // The verifier gets the public members only.
    expect(r.ok && Object.keys(r.keys[0]!.jwk).sort()).toEqual(['e', 'kty', 'n']);
  });

  it('a fetched set (lenient) leaves out keys of unsupported types, but still refuses symmetric and private keys', () => {
    const lenient = parseJwks(set(RSA, jwk('k256'), jwk('rsa1024')), 'lenient');
    expect(lenient.ok && lenient.keys.length).toBe(1);
    const oct = parseJwks(set(RSA, { kty: 'oct', k: 'c2VjcmV0' }), 'lenient');
    expect(!oct.ok && oct.problem).toContain('keys[1] is a symmetric (oct) key');
    expect(parseJwks(set(jwk('rsa', { d: 'x' })), 'lenient').ok).toBe(false);
  });

  it('reads a file (standalone) and a Secret or ConfigMap key (cluster), with the default key jwks.json', () => {
    const file = convert({ providers: [provider({ jwks: { file: 'keys.json' } })] }, sources('standalone', { 'keys.json': set(RSA) }));
    expect(file.ir!.providers[0]!.keys).toEqual({ kind: 'static', origin: 'file /cfg/keys.json', jwks: set(RSA) });
    const src = sources('cluster', { 'ConfigMap/ns/idp/jwks.json': set(RSA) });
    const ref = convert({ providers: [provider({ jwks: { ref: { kind: 'ConfigMap', name: 'idp' } } })] }, src);
    expect(ref.problems).toEqual([]);
    expect(src.reads).toEqual([{ kind: 'ConfigMap', name: 'idp', namespace: undefined, key: 'jwks.json' }]);
    expect(ref.ir!.providers[0]!.keys).toMatchObject({ kind: 'static', origin: 'ConfigMap ns/idp' });
  });

  it('names the source of a bad set read from a file', () => {
    const { problems: p } = convert({ providers: [provider({ jwks: { file: 'keys.json' } })] }, sources('standalone', { 'keys.json': set({ kty: 'oct', k: 'eA' }) }));
    expect(p).toEqual([expect.stringMatching(/^spec\.traffic\.jwt\.providers\[0\]\.jwks\.file: file \/cfg\/keys\.json: keys\[0\] is a symmetric \(oct\) key/)]);
  });

  it('refuses a set over 256 KiB', () => {
    const big = JSON.stringify({ keys: [RSA], pad: 'x'.repeat(262_144) });
    expect(convert({ providers: [provider({ jwks: { file: 'k' } })] }, sources('standalone', { k: big })).problems[0]).toMatch(/bytes, more than the 262144 a key set may have/);
  });

  it('refuses no key source, or two', () => {
    expect(convert({ providers: [provider({ jwks: {} })] }).problems).toEqual([`${AT}.providers[0].jwks: sets none of them; exactly one of inline, ref (cluster), file (standalone) or remote must be set`]);
    expect(convert({ providers: [provider({ jwks: { inline: set(RSA), file: 'x' } })] }).problems[0]).toContain('sets inline and file; exactly one');
  });

  describe('remote', () => {
    const ca = issueTestCertificate({ commonName: 'CA', ca: true }).cert;
    const remote = (r: Record<string, unknown>, files: Record<string, string> = { 'ca.pem': ca }) => convert({ providers: [provider({ jwks: { remote: { path: '/keys', ...r } } })] }, sources('standalone', files));

    it('resolves the address and reads the CA; defaults 5m cache, 5s timeout', () => {
      const { ir, problems: p } = remote({ host: 'idp.internal:8443', tls: { caFile: 'ca.pem' } });
      expect(p).toEqual([]);
      expect(ir!.providers[0]!.keys).toEqual({ kind: 'remote', address: 'idp.internal:8443', path: '/keys', tls: { ca, hostname: null }, cacheMs: 300_000, timeoutMs: 5_000 });
    });

    it('plain HTTP without tls; a backendRef in a cluster', () => {
      expect(remote({ host: '127.0.0.1:80' }).ir!.providers[0]!.keys).toMatchObject({ tls: null });
      const c = convert({ providers: [provider({ jwks: { remote: { path: '/k', backendRef: { name: 'idp', port: 80 } } } })] }, sources('cluster'));
      expect(c.ir!.providers[0]!.keys).toMatchObject({ address: 'idp.ns.svc.cluster.local:80' });
    });

    it.each([
      [{ host: 'a:1', cacheDuration: '5s' }, 'remote.cacheDuration: got "5s": must be from 10s to 24h'],
      [{ host: 'a:1', timeout: '2m' }, 'remote.timeout: got "2m": must be from 100ms to 60s'],
      [{ host: 'a:1', tls: { caFile: 'ca.pem', caCertificateRef: { name: 'x' } } }, 'remote.tls: sets both caFile and caCertificateRef'],
      [{ host: 'a:1', tls: { caFile: 'bad.pem' } }, 'remote.tls.caFile: file /cfg/bad.pem holds no PEM certificate'],
      [{ host: 'a:1', backendRef: { name: 'x', port: 1 } }, 'remote: exactly one of host (standalone) or backendRef (cluster) must be set'],
    ])('refuses %j', (r, message) => {
      const out = remote(r, { 'ca.pem': ca, 'bad.pem': 'not a certificate' });
      expect(out.ir).toBeNull();
      expect(out.problems).toEqual([expect.stringContaining(`${AT}.providers[0].jwks.${message}`)]);
    });
  });

  it('providers reading the same place each need their own issuer', () => {
    const two = (a: Record<string, unknown>, b: Record<string, unknown>) => convert({ providers: [provider({ name: 'a', ...a }), provider({ name: 'b', ...b })] }).problems;
    expect(two({}, {})).toEqual([
      `${AT}.providers[0].issuer: is required: providers a, b all read tokens from the Authorization Bearer credential, and a token's iss picks the provider that verifies it`,
      `${AT}.providers[1].issuer: is required: providers a, b all read tokens from the Authorization Bearer credential, and a token's iss picks the provider that verifies it`,
    ]);
    expect(two({ issuer: 'https://x' }, { issuer: 'https://x' })).toEqual([expect.stringContaining(`${AT}.providers[1].issuer: "https://x" is the issuer of providers[0] too`)]);
    expect(two({ issuer: 'https://x' }, { issuer: 'https://y' })).toEqual([]);
    expect(two({}, { tokenFrom: [{ type: 'Cookie', name: 's' }] })).toEqual([]);
    expect(two({ name: 'a' }, { name: 'a', tokenFrom: [{ type: 'Cookie', name: 's' }] })).toEqual([`${AT}.providers[1].name: "a" names providers[0] too; provider names are unique`]);
  });

  it.each([
    [{ tokenFrom: [{ type: 'Bearer', name: 'x' }] }, 'tokenFrom[0]: name is required with Header, Query and Cookie, and not allowed with Bearer'],
    [{ tokenFrom: [{ type: 'Cookie', name: 'x', prefix: 'a ' }] }, 'tokenFrom[0]: prefix is allowed with Header only'],
    [{ tokenFrom: [{ type: 'Header', name: 'X-A' }, { type: 'Header', name: 'x-a' }] }, 'tokenFrom[1]: reads the same place as an earlier entry (the x-a header)'],
    [{ claimsToHeaders: [{ claim: 'sub', header: 'Host' }] }, 'claimsToHeaders[0].header: "host" frames the request or belongs to one hop'],
    [{ claimsToHeaders: [{ claim: 'sub', header: 'x-a' }, { claim: 'email', header: 'X-A' }] }, 'claimsToHeaders[1].header: "x-a" is set by another claim of this provider too'],
    [{ clockSkew: '11m' }, 'clockSkew: got "11m": must be from 0s to 10m'],
  ])('refuses %j', (extra, message) => {
    const { ir, problems: p } = convert({ providers: [provider(extra)] });
    expect(ir).toBeNull();
    expect(p).toEqual([expect.stringContaining(`${AT}.providers[0].${message}`)]);
  });
});

describe('a standalone config with jwt', () => {
  const jwtRoute = (jwt: unknown) => cfg([route({ policies: { traffic: { jwt } } })]);

  it('validates the schema: maxTokenLength bounds, prefix pattern', () => {
    expect(problems(jwtRoute({ providers: [provider()], maxTokenLength: 100 }))).toEqual([expect.stringContaining('policies.traffic.jwt.maxTokenLength: got 100; expected a number >= 256')]);
    expect(problems(jwtRoute({ providers: [provider({ tokenFrom: [{ type: 'Header', name: 'x', prefix: 'a\nb' }] })] }))[0]).toContain('tokenFrom[0].prefix');
  });

  it('refuses cluster references in a file, naming the field', () => {
    expect(problems(jwtRoute({ providers: [provider({ jwks: { ref: { name: 'keys' } } })] }))).toEqual([
      'binds[0].listeners[0].routes[0].policies.traffic.jwt.providers[0].jwks.ref: is not available in a standalone config: a standalone proxy reads no Secrets or ConfigMaps; use file: <path> or inline',
    ]);
  });

  it('travels the snapshot stream unchanged (static and remote key sets, every location)', () => {
    const ca = issueTestCertificate({ commonName: 'CA', ca: true }).cert;
    const src = sources('standalone', { 'ca.pem': ca });
    // Provider a reads four kinds of places; provider b the default Bearer.
    const tokenFrom = [{ type: 'Header', name: 'X-T', prefix: 'JWT ' }, { type: 'Header', name: 'x-u' }, { type: 'Cookie', name: 'c' }, { type: 'Query', name: 'q' }];
    const config = jwtRoute({ mode: 'Optional', maxTokenLength: 4096, providers: [provider({ issuer: 'https://a', tokenFrom, claimsToHeaders: [{ claim: 'sub', header: 'x-sub' }] }), { name: 'b', issuer: 'https://b', jwks: { remote: { host: 'idp:443', path: '/k', tls: { caFile: 'ca.pem', hostname: 'idp.example' } } } }] });
    const snap = standaloneToSnapshot(validateStandaloneConfig(config), { kind: 'file', path: '/x' }, undefined, src);
    expect(decodeSnapshot(encodeSnapshot(snap))).toEqual(snap);
  });

  it('converts into the snapshot of the route, or throws naming the field', () => {
    const snap = standaloneToSnapshot(validateStandaloneConfig(jwtRoute({ providers: [provider()] })), { kind: 'file', path: '/x' });
    expect(snap.binds[0]!.listeners[0]!.routes[0]!.policy!.jwt!.providers[0]!.name).toBe('corp');
    expect(() => standaloneToSnapshot(validateStandaloneConfig(jwtRoute({ providers: [provider({ jwks: { inline: set({ kty: 'oct', k: 'eA' }) } })] })), { kind: 'file', path: '/x' })).toThrow(
      /binds\[0\]\.listeners\[0\]\.routes\[0\]\.policies\.traffic\.jwt\.providers\[0\]\.jwks\.inline: keys\[0\] is a symmetric/,
    );
  });
});
