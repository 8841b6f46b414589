// JwtConfig to JwtIR: each provider's key set read through the policy's sources (inline, a
// file, a Secret or ConfigMap key, or the address of a JWKS server and its CA) and checked
// here, so a bad key set is a problem naming the field, before any proxy sees it.
import { caBundleProblem } from '../certificate.js';
import { checkDuration } from '../duration.js';
import { joinPath, show, type Problem } from '../validation-error.js';
import { parseJwks } from './jwks.js';
import { DEFAULT_MAX_TOKEN_LENGTH, type JwtConfig, type JwtIR, type JwtKeysIR, type JwtProviderIR, type TokenLocationConfig, type TokenLocationIR } from './jwt.js';
import type { PolicySources } from './sources.js';

export type { JwtIR };

type ProviderConfig = JwtConfig['providers'][number];
type JwksConfig = ProviderConfig['jwks'];
type RemoteConfig = NonNullable<JwksConfig['remote']>;

export const DEFAULT_JWKS_CACHE_MS = 300_000;
export const MIN_JWKS_CACHE_MS = 10_000;
export const MAX_JWKS_CACHE_MS = 86_400_000;
export const DEFAULT_JWKS_TIMEOUT_MS = 5_000;
export const MIN_JWKS_TIMEOUT_MS = 100;
export const MAX_JWKS_TIMEOUT_MS = 60_000;
export const DEFAULT_CLOCK_SKEW_MS = 60_000;
export const MAX_CLOCK_SKEW_MS = 600_000;

/** Headers a claim may not be copied to: they frame the message or belong to one hop. */
const RESERVED_HEADERS: ReadonlySet<string> = new Set(['host', 'content-length', 'transfer-encoding', 'connection', 'keep-alive', 'proxy-connection', 'te', 'trailer', 'upgrade', 'expect']);

export function toJwtIR(config: JwtConfig, at: string, sources: PolicySources, problems: Problem[]): JwtIR | null {
  const before = problems.length;
  const providersAt = joinPath(at, 'providers');
  const providers = config.providers.map((p, i) => toProvider(p, joinPath(providersAt, i), sources, problems));
  checkProviders(config.providers, providersAt, problems);
  if (problems.length > before) return null;
  return { providers: providers as JwtProviderIR[], mode: config.mode ?? 'Strict', maxTokenLength: config.maxTokenLength ?? DEFAULT_MAX_TOKEN_LENGTH };
}

function toProvider(p: ProviderConfig, at: string, sources: PolicySources, problems: Problem[]): JwtProviderIR | null {
  const keys = toKeys(p.jwks, joinPath(at, 'jwks'), sources, problems);
  const tokenFrom = toLocations(p.tokenFrom, joinPath(at, 'tokenFrom'), problems);
  const clockSkewMs = durationMs(p.clockSkew, DEFAULT_CLOCK_SKEW_MS, { min: 0, max: MAX_CLOCK_SKEW_MS, text: '0s to 10m' }, joinPath(at, 'clockSkew'), problems);
  const claimsToHeaders = (p.claimsToHeaders ?? []).map((c) => ({ claim: c.claim, header: c.header.toLowerCase() }));
  const seen = new Set<string>();
  claimsToHeaders.forEach((c, i) => {
    const cat = joinPath(joinPath(joinPath(at, 'claimsToHeaders'), i), 'header');
    if (RESERVED_HEADERS.has(c.header)) problems.push({ path: cat, message: `${show(c.header)} frames the request or belongs to one hop; choose another header (e.g. x-jwt-${c.claim.toLowerCase().replace(/[^a-z0-9-]/g, '-')})` });
    else if (seen.has(c.header)) problems.push({ path: cat, message: `${show(c.header)} is set by another claim of this provider too; each header gets one claim` });
    seen.add(c.header);
  });
  if (!keys || !tokenFrom || clockSkewMs === null) return null;
  return {
    name: p.name,
    issuer: p.issuer ?? null,
    audiences: p.audiences ?? [],
    keys,
    clockSkewMs,
    tokenFrom,
    consumerClaim: p.consumerClaim ?? 'sub',
    groupClaim: p.groupClaim ?? null,
    claimsToHeaders,
    forwardToken: p.forwardToken ?? false,
  };
}

function toKeys(jwks: JwksConfig, at: string, sources: PolicySources, problems: Problem[]): JwtKeysIR | null {
  const set = (['inline', 'ref', 'file', 'remote'] as const).filter((k) => jwks[k] !== undefined);
  if (set.length !== 1) {
    problems.push({ path: at, message: `${set.length ? `sets ${set.join(' and ')}` : 'sets none of them'}; exactly one of inline, ref (cluster), file (standalone) or remote must be set` });
    return null;
  }
  if (jwks.inline !== undefined) return staticKeys(jwks.inline, 'inline', joinPath(at, 'inline'), problems);
  if (jwks.file !== undefined) {
    const r = sources.text(at, { file: jwks.file });
    if (!r.ok) return fail(problems, r.problem);
    return staticKeys(r.value.text, r.value.origin, joinPath(at, 'file'), problems);
  }
  if (jwks.ref !== undefined) {
    const ref = jwks.ref;
    const refAt = joinPath(at, 'ref');
    const r = sources.text(refAt, { kind: ref.kind ?? 'Secret', name: ref.name, namespace: ref.namespace, key: ref.key ?? 'jwks.json' });
    if (!r.ok) return fail(problems, r.problem);
    return staticKeys(r.value.text, r.value.origin, refAt, problems);
  }
  return remoteKeys(jwks.remote!, joinPath(at, 'remote'), sources, problems);
}

function staticKeys(text: string, origin: string, at: string, problems: Problem[]): JwtKeysIR | null {
  const r = parseJwks(text, 'strict');
  if (!r.ok) return fail(problems, { path: at, message: `${origin === 'inline' ? '' : `${origin}: `}${r.problem}` });
  return { kind: 'static', origin, jwks: text };
}

function remoteKeys(remote: RemoteConfig, at: string, sources: PolicySources, problems: Problem[]): JwtKeysIR | null {
  if ((remote.host === undefined) === (remote.backendRef === undefined)) return fail(problems, { path: at, message: 'exactly one of host (standalone) or backendRef (cluster) must be set' });
  const before = problems.length;
  const address = sources.outbound(at, { host: remote.host, backendRef: remote.backendRef }, 'JWKS server', 'FailClosed');
  if (!address.ok) problems.push(address.problem);
  const cacheMs = durationMs(remote.cacheDuration, DEFAULT_JWKS_CACHE_MS, { min: MIN_JWKS_CACHE_MS, max: MAX_JWKS_CACHE_MS, text: '10s to 24h' }, joinPath(at, 'cacheDuration'), problems);
  const timeoutMs = durationMs(remote.timeout, DEFAULT_JWKS_TIMEOUT_MS, { min: MIN_JWKS_TIMEOUT_MS, max: MAX_JWKS_TIMEOUT_MS, text: '100ms to 60s' }, joinPath(at, 'timeout'), problems);
  const tls = remote.tls ? remoteTls(remote.tls, joinPath(at, 'tls'), sources, problems) : null;
  if (problems.length > before || !address.ok || cacheMs === null || timeoutMs === null) return null;
  return { kind: 'remote', address: address.value, path: remote.path, tls, cacheMs, timeoutMs };
}

/** A remote server's TLS settings (the JWKS server's, an OpenID provider's) with its CA read through `sources`. */
export function remoteTls(tls: NonNullable<RemoteConfig['tls']>, at: string, sources: PolicySources, problems: Problem[]): { ca: string | null; hostname: string | null } | null {
  if (tls.caFile !== undefined && tls.caCertificateRef !== undefined) return fail(problems, { path: at, message: 'sets both caFile and caCertificateRef; set one (caFile standalone, caCertificateRef in a cluster), or neither for the system roots' });
  let ca: string | null = null;
  if (tls.caFile !== undefined || tls.caCertificateRef !== undefined) {
    const ref = tls.caCertificateRef;
    const refAt = ref ? joinPath(at, 'caCertificateRef') : joinPath(at, 'caFile');
    const r = ref ? sources.text(refAt, { kind: ref.kind ?? 'Secret', name: ref.name, namespace: ref.namespace, key: ref.key ?? 'ca.crt' }) : sources.text(at, { file: tls.caFile! });
    if (!r.ok) return fail(problems, r.problem);
    const problem = caBundleProblem(r.value.text);
    if (problem) return fail(problems, { path: refAt, message: `${r.value.origin} ${problem}` });
    ca = r.value.text;
  }
  return { ca, hostname: tls.hostname ?? null };
}

function toLocations(list: readonly TokenLocationConfig[] | undefined, at: string, problems: Problem[]): TokenLocationIR[] | null {
  if (!list) return [{ type: 'Bearer' }];
  const out: TokenLocationIR[] = [];
  const keys = new Set<string>();
  let ok = true;
  list.forEach((l, i) => {
    const lat = joinPath(at, i);
    const bad = (message: string) => {
      problems.push({ path: lat, message });
      ok = false;
    };
    if ((l.type === 'Bearer') !== (l.name === undefined)) return bad('name is required with Header, Query and Cookie, and not allowed with Bearer');
    if (l.prefix !== undefined && l.type !== 'Header') return bad('prefix is allowed with Header only');
    const loc = toLocation(l);
    const key = locationKey(loc);
    if (keys.has(key)) return bad(`reads the same place as an earlier entry (${describeTokenLocation(loc)}); list each place once`);
    keys.add(key);
    out.push(loc);
  });
  return ok ? out : null;
}

function toLocation(l: TokenLocationConfig): TokenLocationIR {
  if (l.type === 'Bearer') return { type: 'Bearer' };
  if (l.type === 'Header') return { type: 'Header', name: l.name!.toLowerCase(), prefix: l.prefix ?? null };
  return { type: l.type, name: l.name! };
}

/** Equal for two locations a token could be read from at once. */
export function locationKey(l: TokenLocationIR): string {
  if (l.type === 'Bearer') return 'bearer';
  if (l.type === 'Header') return `header:${l.name}:${l.prefix ?? ''}`;
  return `${l.type.toLowerCase()}:${l.name}`;
}

function describeTokenLocation(l: TokenLocationIR): string {
  if (l.type === 'Bearer') return 'the Authorization Bearer credential';
  if (l.type === 'Header') return `the ${l.name} header${l.prefix ? ` after "${l.prefix}"` : ''}`;
  return l.type === 'Query' ? `the query parameter ${l.name}` : `the cookie ${l.name}`;
}

/**
 * Provider names are unique; providers that read the same place each name an issuer of their
 * own, since the token's `iss` is what picks among them.
 */
function checkProviders(providers: readonly ProviderConfig[], at: string, problems: Problem[]): void {
  const names = new Map<string, number>();
  const readers = new Map<string, { readonly where: string; readonly list: number[] }>();
  providers.forEach((p, i) => {
    const prior = names.get(p.name);
    if (prior !== undefined) problems.push({ path: joinPath(joinPath(at, i), 'name'), message: `${show(p.name)} names providers[${prior}] too; provider names are unique` });
    names.set(p.name, i);
    for (const l of p.tokenFrom ?? [{ type: 'Bearer' as const }]) {
      if ((l.type === 'Bearer') !== (l.name === undefined)) continue; // reported by toLocations
      const loc = toLocation(l);
      const key = locationKey(loc);
      const r = readers.get(key) ?? { where: describeTokenLocation(loc), list: [] };
      if (!r.list.includes(i)) r.list.push(i);
      readers.set(key, r);
    }
  });
  const reported = new Set<number>();
  for (const { where: place, list } of readers.values()) {
    if (list.length < 2) continue;
    const issuers = new Map<string, number>();
    for (const i of list) {
      const p = providers[i]!;
      if (reported.has(i)) continue;
      const where = `providers ${list.map((j) => providers[j]!.name).join(', ')} all read tokens from ${place}`;
      if (p.issuer === undefined) {
        problems.push({ path: joinPath(joinPath(at, i), 'issuer'), message: `is required: ${where}, and a token's iss picks the provider that verifies it` });
        reported.add(i);
      } else if (issuers.has(p.issuer)) {
        problems.push({ path: joinPath(joinPath(at, i), 'issuer'), message: `${show(p.issuer)} is the issuer of providers[${issuers.get(p.issuer)}] too: ${where}, so their issuers must differ` });
        reported.add(i);
      } else issuers.set(p.issuer, i);
    }
  }
}

export function durationMs(text: string | undefined, fallback: number, range: { min: number; max: number; text: string }, at: string, problems: Problem[]): number | null {
  if (text === undefined) return fallback;
  const r = checkDuration(text, { allowZero: range.min === 0 });
  if (!r.ok) return fail(problems, { path: at, message: `got ${show(text)}: ${r.problem}` });
  if (r.value < range.min || r.value > range.max) return fail(problems, { path: at, message: `got ${show(text)}: must be from ${range.text}` });
  return r.value;
}

function fail(problems: Problem[], p: Problem): null {
  problems.push(p);
  return null;
}
