// oidc: browser login for routes a person opens. The proxy runs the OpenID Connect
// authorization code flow with PKCE (S256), state and nonce against one provider, keeps the
// session in an encrypted and authenticated cookie (AES-256-GCM), refreshes it with the refresh
// token when the ID token expires, and makes the ID token's claims the consumer's, as jwt does.
// The provider is reached at a configured address (a backendRef in a cluster, a host
// standalone), never at an address a discovery document names.
import { Type, type Static, type TString } from '@sinclair/typebox';
import type { Secret } from '../secret.js';
import { Duration, HostPort } from '../schema/common.js';
import { BackendRef } from '../schema/outbound-ref.js';
import { NonEmpty, Nullable, Obj, WireSecret } from '../schema/wire-parts.js';
import { RemoteTls } from './jwt.js';
import { FilePath, ObjectKeyRefSchema } from './refs.js';

export const DEFAULT_OIDC_SCOPES = ['openid', 'profile', 'email'] as const;
export const DEFAULT_REDIRECT_PATH = '/oauth2/callback';
export const DEFAULT_LOGOUT_PATH = '/oauth2/logout';
export const DEFAULT_COOKIE_NAME = 'tollgate-oidc';
export const DEFAULT_SESSION_MS = 86_400_000;
export const MIN_SESSION_MS = 60_000;
export const MAX_SESSION_MS = 30 * 86_400_000;
export const DEFAULT_PROVIDER_TIMEOUT_MS = 5_000;
export const DEFAULT_MAX_COOKIE_CHUNKS = 4;
export const MAX_COOKIE_CHUNKS_LIMIT = 8;
/** Bytes of one cookie's value: browsers keep 4096 bytes of name, value and attributes. */
export const COOKIE_CHUNK_BYTES = 3800;
/** The session key: 32 bytes (AES-256), written as base64 or 64 hex digits. */
export const SESSION_KEY_BYTES = 32;

const Path = (description: string): TString =>
  Type.String({ minLength: 1, maxLength: 256, pattern: '^/[A-Za-z0-9._~!$&\'()*+,;=:@%/-]*$', description, expected: 'a path starting with / (no query)' });

const Within = (t: TString, min: string, max: string): TString => ({
  ...t,
  'x-kubernetes-validations': [{ rule: `duration(self) >= duration('${min}') && duration(self) <= duration('${max}')`, message: `must be from ${min} to ${max}` }],
});

const SecretSource = (what: string, defaultKey: string) =>
  Type.Object(
    { ref: Type.Optional(ObjectKeyRefSchema(what, defaultKey)), file: Type.Optional(FilePath(what)) },
    {
      additionalProperties: false,
      description: `Where ${what} is: ref (a Secret key, cluster) or file (standalone).`,
      'x-kubernetes-validations': [{ rule: 'has(self.ref) != has(self.file)', message: 'exactly one of ref or file must be set' }],
    },
  );

export const OidcConfig = Type.Object(
  {
    issuer: Type.String({ minLength: 1, maxLength: 1024, pattern: '^https?://[^\\s/?#]+(/[^\\s?#]*)?$', description: 'The provider\'s issuer URL, exactly as its ID tokens\' `iss` and its discovery document say it; discovery is read from <issuer>/.well-known/openid-configuration.', expected: 'an http(s) URL without query or fragment' }),
    provider: Type.Object(
      {
        backendRef: Type.Optional(BackendRef),
        host: Type.Optional(HostPort('Address of the provider; standalone config only (in a cluster use backendRef).')),
        tls: Type.Optional(RemoteTls),
        timeout: Type.Optional(Within(Duration('Time allowed for one call to the provider (discovery, token, JWKS), from connecting to the last byte; default 5s, 100ms to 60s.'), '100ms', '60s')),
      },
      {
        additionalProperties: false,
        description: 'Where the proxy reaches the provider (discovery, token endpoint, JWKS); the endpoints of the discovery document give their paths, and must be on the issuer\'s origin.',
        'x-kubernetes-validations': [{ rule: 'has(self.host) != has(self.backendRef)', message: 'exactly one of host or backendRef must be set' }],
      },
    ),
    clientId: Type.String({ minLength: 1, maxLength: 256, pattern: '^[\\x21-\\x7e]+$', description: 'The client ID registered at the provider.', expected: 'printable characters without spaces' }),
    clientSecret: Type.Optional(SecretSource('the client secret', 'client-secret')),
    sessionKey: SecretSource('the session cookie\'s key: 32 bytes as base64 or 64 hex digits (e.g. `openssl rand -base64 32`)', 'session-key'),
    scopes: Type.Optional(
      Type.Array(Type.String({ minLength: 1, maxLength: 128, pattern: '^[\\x21\\x23-\\x5b\\x5d-\\x7e]+$', description: 'A scope.', expected: 'a scope token' }), {
        minItems: 1,
        maxItems: 16,
        description: 'Scopes asked for; must include openid. Default openid, profile, email; add offline_access for a refresh token.',
      }),
    ),
    audiences: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 1024, description: 'An accepted audience.' }), { minItems: 1, maxItems: 16, description: 'The ID token\'s `aud` must contain one of these; default the clientId.' })),
    redirectPath: Type.Optional(Path(`Path of the callback the provider sends the browser back to (register <scheme>://<host><redirectPath> at the provider); default ${DEFAULT_REDIRECT_PATH}. Answered by the proxy, never forwarded.`)),
    logoutPath: Type.Optional(Path(`Path that ends the session (clears the cookie, then redirects to the provider's end_session_endpoint when it has one, else to postLogoutPath); default ${DEFAULT_LOGOUT_PATH}. Answered by the proxy.`)),
    postLogoutPath: Type.Optional(Path('Where the browser goes after logout (the provider\'s end_session_endpoint is given <scheme>://<host><postLogoutPath>); default /.')),
    cookie: Type.Optional(
      Type.Object(
        {
          name: Type.Optional(Type.String({ minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9_-]+$', description: `Name of the session cookie (chunks are <name>.1, <name>.2, ...; the login state cookie is <name>.state); default ${DEFAULT_COOKIE_NAME}.`, expected: 'letters, digits, "-" and "_"' })),
          maxAge: Type.Optional(Within(Duration('Longest a session lasts from login, refreshes included; default 24h, 1m to 720h.'), '1m', '720h')),
          maxChunks: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_COOKIE_CHUNKS_LIMIT, description: `Most cookies a session is split into (each at most ${COOKIE_CHUNK_BYTES} bytes); a larger session is refused at login. Default ${DEFAULT_MAX_COOKIE_CHUNKS}.` })),
        },
        { additionalProperties: false, description: 'The session cookie (always Secure, HttpOnly, SameSite=Lax, Path=/).' },
      ),
    ),
    consumerClaim: Type.Optional(Type.String({ minLength: 1, maxLength: 256, description: 'Claim naming the consumer; default sub.' })),
    groupClaim: Type.Optional(Type.String({ minLength: 1, maxLength: 256, description: 'Claim naming the consumer\'s group; none by default.' })),
    clockSkew: Type.Optional(Within(Duration('Allowed difference between the proxy\'s clock and the provider\'s for exp and nbf; default 60s, at most 10m.', { allowZero: true }), '0s', '10m')),
  },
  { additionalProperties: false, description: 'People log in at an OpenID Connect provider in their browser; the session is an encrypted cookie.' },
);
export type OidcConfig = Static<typeof OidcConfig>;

export interface OidcIR {
  readonly issuer: string;
  readonly provider: {
    /** `<host>:<port>`. */
    readonly address: string;
    readonly tls: { readonly ca: string | null; readonly hostname: string | null } | null;
    readonly timeoutMs: number;
  };
  readonly clientId: string;
  readonly clientSecret: Secret | null;
  /** 32 bytes, base64. */
  readonly sessionKey: Secret;
  readonly scopes: readonly string[];
  readonly audiences: readonly string[];
  readonly redirectPath: string;
  readonly logoutPath: string;
  readonly postLogoutPath: string;
  readonly cookie: { readonly name: string; readonly maxAgeMs: number; readonly maxChunks: number };
  readonly consumerClaim: string;
  readonly groupClaim: string | null;
  readonly clockSkewMs: number;
}

export const OidcWire = Obj(
  {
    issuer: NonEmpty('Issuer.', 1024),
    provider: Obj(
      {
        address: NonEmpty('`<host>:<port>`.', 400),
        tls: Nullable(Obj({ ca: Nullable(NonEmpty('PEM CA bundle.', 1_048_576)), hostname: Nullable(NonEmpty('SNI name.', 253)) }, 'TLS.')),
        timeoutMs: Type.Integer({ minimum: 1 }),
      },
      'The provider.',
    ),
    clientId: NonEmpty('Client ID.', 256),
    clientSecret: Nullable(WireSecret),
    sessionKey: WireSecret,
    scopes: Type.Array(NonEmpty('Scope.', 128), { minItems: 1, maxItems: 16 }),
    audiences: Type.Array(NonEmpty('Audience.', 1024), { minItems: 1, maxItems: 16 }),
    redirectPath: NonEmpty('Path.', 256),
    logoutPath: NonEmpty('Path.', 256),
    postLogoutPath: NonEmpty('Path.', 256),
    cookie: Obj({ name: NonEmpty('Name.', 64), maxAgeMs: Type.Integer({ minimum: 1 }), maxChunks: Type.Integer({ minimum: 1, maximum: MAX_COOKIE_CHUNKS_LIMIT }) }, 'Cookie.'),
    consumerClaim: NonEmpty('Claim.', 256),
    groupClaim: Nullable(NonEmpty('Claim.', 256)),
    clockSkewMs: Type.Integer({ minimum: 0 }),
  },
  'OpenID Connect login.',
);
