// What the trace's effectivePolicy and /config_dump show of an authentication kind: its
// settings, never a credential and never a list that grows with the consumers. A policy of
// 100,000 API keys shows as a count (and the keys' ids, consumers and groups only while they
// are few), an htpasswd file as its origin and a count of users (their names and hash schemes
// while they are few), a JWT provider without its key material (the origin of a static key
// set, the address of a remote one).
import { AUTH_KINDS, type ApiKeyIR, type AuthKind, type AuthorizationIR, type AuthPolicyIR, type BasicAuthIR, type ExtAuthzIR, type JwtIR, type JwtKeysIR, type OidcIR } from '@tollgate/api';

/** Keys of an apiKey policy (id, consumer, group) and users of a basicAuth one (user, scheme) listed one by one up to this many. */
export const MAX_LISTED_ENTRIES = 16;

function apiKey(ir: ApiKeyIR) {
  const n = ir.consumers.length;
  return {
    keyFrom: ir.keyFrom,
    consumers: n,
    ...(n <= MAX_LISTED_ENTRIES ? { keys: ir.consumers.map((c) => ({ id: c.id, consumer: c.consumer, group: c.group })) } : {}),
  };
}

function basicAuth(ir: BasicAuthIR) {
  const n = ir.users.length;
  return { realm: ir.realm, origin: ir.origin, users: n, ...(n <= MAX_LISTED_ENTRIES ? { entries: ir.users.map((u) => ({ user: u.user, scheme: u.scheme })) } : {}) };
}

function jwtKeys(keys: JwtKeysIR) {
  if (keys.kind === 'static') return { kind: keys.kind, origin: keys.origin };
  return {
    kind: keys.kind,
    address: keys.address,
    path: keys.path,
    tls: keys.tls ? { hostname: keys.tls.hostname, customCa: keys.tls.ca !== null } : null,
    cacheMs: keys.cacheMs,
    timeoutMs: keys.timeoutMs,
  };
}

function jwt(ir: JwtIR) {
  return {
    mode: ir.mode,
    maxTokenLength: ir.maxTokenLength,
    providers: ir.providers.map((p) => ({
      name: p.name,
      issuer: p.issuer,
      audiences: p.audiences,
      keys: jwtKeys(p.keys),
      clockSkewMs: p.clockSkewMs,
      tokenFrom: p.tokenFrom,
      consumerClaim: p.consumerClaim,
      groupClaim: p.groupClaim,
      claimsToHeaders: p.claimsToHeaders,
      forwardToken: p.forwardToken,
    })),
  };
}

/** oidc: the settings; of the client secret whether there is one, of the session key nothing. */
function oidc(ir: OidcIR) {
  const { clientSecret, sessionKey: _key, provider, ...rest } = ir;
  return { ...rest, provider: { address: provider.address, tls: provider.tls ? { hostname: provider.tls.hostname, customCa: provider.tls.ca !== null } : null, timeoutMs: provider.timeoutMs }, clientSecret: clientSecret ? '[redacted]' : null };
}

const authorization = (ir: AuthorizationIR) => ({ rules: ir.rules });
const extAuthz = (ir: ExtAuthzIR) => ir;

const SUMMARIES: { readonly [K in AuthKind]: (ir: NonNullable<AuthPolicyIR[K]>) => unknown } = { apiKey, basicAuth, jwt, oidc, authorization, extAuthz };

/** An authentication kind's IR as traces and config dumps show it. */
export function summarizeAuth<K extends AuthKind>(kind: K, ir: NonNullable<AuthPolicyIR[K]>): unknown {
  return (SUMMARIES[kind] as (ir: NonNullable<AuthPolicyIR[K]>) => unknown)(ir);
}

/** A policy with each authentication kind it sets summarized (the other keys as they are). */
export function withAuthSummarized<P extends AuthPolicyIR>(policy: P): Omit<P, AuthKind> & { readonly [K in AuthKind]: unknown } {
  const out: Record<string, unknown> = { ...(policy as object) };
  for (const kind of AUTH_KINDS) {
    const ir = policy[kind];
    if (ir) out[kind] = summarizeAuth(kind, ir);
  }
  return out as Omit<P, AuthKind> & { readonly [K in AuthKind]: unknown };
}
