// OidcConfig to OidcIR: the client secret and the session key read through the policy's
// sources (a Secret key in a cluster, a file standalone) and carried as Secret values from
// here on, the provider's address resolved, and what the schema cannot say checked here.
import { Secret } from '../secret.js';
import { joinPath, show, type Problem } from '../validation-error.js';
import { DEFAULT_CLOCK_SKEW_MS, MAX_CLOCK_SKEW_MS, durationMs, remoteTls } from './jwt-ir.js';
import {
  DEFAULT_COOKIE_NAME,
  DEFAULT_LOGOUT_PATH,
  DEFAULT_MAX_COOKIE_CHUNKS,
  DEFAULT_OIDC_SCOPES,
  DEFAULT_PROVIDER_TIMEOUT_MS,
  DEFAULT_REDIRECT_PATH,
  DEFAULT_SESSION_MS,
  MAX_SESSION_MS,
  MIN_SESSION_MS,
  SESSION_KEY_BYTES,
  type OidcConfig,
  type OidcIR,
} from './oidc.js';
import type { PolicySources } from './sources.js';

export type { OidcIR };

type SecretSourceConfig = NonNullable<OidcConfig['clientSecret']>;

export function toOidcIR(config: OidcConfig, at: string, sources: PolicySources, problems: Problem[]): OidcIR | null {
  const before = problems.length;
  const p = config.provider;
  const providerAt = joinPath(at, 'provider');
  let address: string | null = null;
  if ((p.host === undefined) === (p.backendRef === undefined)) problems.push({ path: providerAt, message: 'exactly one of host (standalone) or backendRef (cluster) must be set' });
  else {
    const r = sources.outbound(providerAt, { host: p.host, backendRef: p.backendRef }, 'OpenID provider', 'FailClosed');
    if (r.ok) address = r.value;
    else problems.push(r.problem);
  }
  const tls = p.tls ? remoteTls(p.tls, joinPath(providerAt, 'tls'), sources, problems) : null;
  const timeoutMs = durationMs(p.timeout, DEFAULT_PROVIDER_TIMEOUT_MS, { min: 100, max: 60_000, text: '100ms to 60s' }, joinPath(providerAt, 'timeout'), problems);
  const clockSkewMs = durationMs(config.clockSkew, DEFAULT_CLOCK_SKEW_MS, { min: 0, max: MAX_CLOCK_SKEW_MS, text: '0s to 10m' }, joinPath(at, 'clockSkew'), problems);
  const maxAgeMs = durationMs(config.cookie?.maxAge, DEFAULT_SESSION_MS, { min: MIN_SESSION_MS, max: MAX_SESSION_MS, text: '1m to 720h' }, joinPath(joinPath(at, 'cookie'), 'maxAge'), problems);
  const clientSecret = config.clientSecret ? readSecret(config.clientSecret, joinPath(at, 'clientSecret'), 'client-secret', sources, problems) : null;
  const keyText = readSecret(config.sessionKey, joinPath(at, 'sessionKey'), 'session-key', sources, problems);
  const sessionKey = keyText ? sessionKeyOf(keyText, joinPath(at, 'sessionKey'), problems) : null;
  const scopes = config.scopes ?? [...DEFAULT_OIDC_SCOPES];
  if (!scopes.includes('openid')) problems.push({ path: joinPath(at, 'scopes'), message: `got ${show(scopes.join(' '))}: must include openid (without it the provider issues no ID token)` });
  const redirectPath = config.redirectPath ?? DEFAULT_REDIRECT_PATH;
  const logoutPath = config.logoutPath ?? DEFAULT_LOGOUT_PATH;
  if (redirectPath === logoutPath) problems.push({ path: joinPath(at, 'logoutPath'), message: `${show(logoutPath)} is the redirectPath too; the callback and the logout need paths of their own` });
  if (problems.length > before || address === null || timeoutMs === null || clockSkewMs === null || maxAgeMs === null || !sessionKey) return null;
  return {
    issuer: config.issuer,
    provider: { address, tls, timeoutMs },
    clientId: config.clientId,
    clientSecret,
    sessionKey,
    scopes,
    audiences: config.audiences ?? [config.clientId],
    redirectPath,
    logoutPath,
    postLogoutPath: config.postLogoutPath ?? '/',
    cookie: { name: config.cookie?.name ?? DEFAULT_COOKIE_NAME, maxAgeMs, maxChunks: config.cookie?.maxChunks ?? DEFAULT_MAX_COOKIE_CHUNKS },
    consumerClaim: config.consumerClaim ?? 'sub',
    groupClaim: config.groupClaim ?? null,
    clockSkewMs,
  };
}

/** The text of a Secret key or a file, kept as a Secret; surrounding whitespace (a file's newline) dropped. */
function readSecret(src: SecretSourceConfig, at: string, defaultKey: string, sources: PolicySources, problems: Problem[]): Secret | null {
  if ((src.ref === undefined) === (src.file === undefined)) {
    problems.push({ path: at, message: 'exactly one of ref (cluster) or file (standalone) must be set' });
    return null;
  }
  const ref = src.ref;
  const refAt = ref ? joinPath(at, 'ref') : joinPath(at, 'file');
  if (ref && (ref.kind ?? 'Secret') !== 'Secret') {
    problems.push({ path: joinPath(refAt, 'kind'), message: 'must be Secret: a credential is never kept in a ConfigMap' });
    return null;
  }
  const r = ref ? sources.text(refAt, { kind: 'Secret', name: ref.name, namespace: ref.namespace, key: ref.key ?? defaultKey }) : sources.text(refAt, { file: src.file! });
  if (!r.ok) {
    problems.push(r.problem);
    return null;
  }
  const text = r.value.text.trim();
  if (!text) {
    problems.push({ path: refAt, message: `${r.value.origin} is empty` });
    return null;
  }
  return new Secret(text);
}

/** The session key as base64 of its 32 bytes; the key itself is never quoted in a message. */
function sessionKeyOf(text: Secret, at: string, problems: Problem[]): Secret | null {
  const t = text.reveal();
  const bytes = /^[0-9a-fA-F]{64}$/.test(t) ? Buffer.from(t, 'hex') : /^[A-Za-z0-9+/_-]+={0,2}$/.test(t) ? Buffer.from(t, 'base64') : null;
  if (!bytes || bytes.length !== SESSION_KEY_BYTES) {
    problems.push({ path: at, message: `is not a ${SESSION_KEY_BYTES}-byte key: write 32 random bytes as base64 or 64 hex digits (e.g. openssl rand -base64 32)` });
    return null;
  }
  return new Secret(bytes.toString('base64'));
}
