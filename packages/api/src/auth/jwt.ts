// jwt: bearer tokens signed by a provider's keys (RS*, PS*, ES*, EdDSA; never `none`, never an
// HMAC key made of a public key). Keys come from an inline JWKS, a Secret or ConfigMap key, a
// file, or a JWKS endpoint the proxy fetches through a backendRef (cluster) or host
// (standalone), cached, refreshed on an unknown `kid`, the last good set kept on failure.
import { Type, type Static, type TString } from '@sinclair/typebox';
import { Duration, Enum, HeaderName, HostPort } from '../schema/common.js';
import { BackendRef } from '../schema/outbound-ref.js';
import { Obj, Nullable, NonEmpty, Lit, Str } from '../schema/wire-parts.js';
import { FilePath, ObjectKeyRefSchema } from './refs.js';
import { MAX_JWKS_BYTES } from './jwks.js';

export const MAX_JWT_PROVIDERS = 8;
/** maxTokenLength default: a token with a few dozen claims is 1-2 KiB; Node reads at most 16 KiB of headers. */
export const DEFAULT_MAX_TOKEN_LENGTH = 8192;
export const MAX_TOKEN_LENGTH_LIMIT = 16_384;

/** A Duration within [min, max], said to the API server too (files get the same bounds from toJwtIR). */
const Within = (t: TString, min: string, max: string): TString => ({
  ...t,
  'x-kubernetes-validations': [{ rule: `duration(self) >= duration('${min}') && duration(self) <= duration('${max}')`, message: `must be from ${min} to ${max}` }],
});

/** Where a token is read: an apiKey-style location, plus a prefix for a header. */
const TokenLocation = Type.Object(
  {
    type: Enum(['Bearer', 'Header', 'Query', 'Cookie'], 'Bearer: the Authorization header\'s Bearer credential. Header: the header `name` (after `prefix`, when set). Query: the query parameter `name` (it shows in access logs of anything before the gateway; prefer a header). Cookie: the cookie `name`.'),
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 256, pattern: "^[A-Za-z0-9!#$%&'*+\\-.^_`|~]+$", description: 'Header, query parameter or cookie name; not with Bearer.', expected: 'a header, parameter or cookie name' })),
    prefix: Type.Optional(Type.String({ minLength: 1, maxLength: 64, pattern: '^[\\x21-\\x7e]+ ?$', description: 'Header only: text the value starts with, removed before the token is read (e.g. "Token "); a value without it holds no token.', expected: 'printable characters, optionally ending with one space' })),
  },
  {
    additionalProperties: false,
    description: 'Where the token is read from.',
    'x-kubernetes-validations': [
      { rule: "self.type == 'Bearer' ? !has(self.name) : has(self.name)", message: 'name is required with Header, Query and Cookie, and not allowed with Bearer' },
      { rule: "!has(self.prefix) || self.type == 'Header'", message: 'prefix is allowed with Header only' },
    ],
  },
);
export type TokenLocationConfig = { type: 'Bearer' | 'Header' | 'Query' | 'Cookie'; name?: string; prefix?: string };

/** A token location as the proxy reads it: header names lower-cased. */
export type TokenLocationIR =
  | { readonly type: 'Bearer' }
  | { readonly type: 'Header'; readonly name: string; readonly prefix: string | null }
  | { readonly type: 'Query'; readonly name: string }
  | { readonly type: 'Cookie'; readonly name: string };

/** TLS to a server the proxy fetches from (a JWKS server, an OpenID provider). */
export const RemoteTls = Type.Object(
  {
    caCertificateRef: Type.Optional(ObjectKeyRefSchema('the PEM CA bundle that signs the server\'s certificate', 'ca.crt')),
    caFile: Type.Optional(FilePath('the PEM CA bundle that signs the server\'s certificate')),
    hostname: Type.Optional(Type.String({ minLength: 1, maxLength: 253, pattern: '^[A-Za-z0-9]([-A-Za-z0-9.]*[A-Za-z0-9])?$', description: 'Name sent as SNI and checked against the server\'s certificate; default the host of the address.', expected: 'a DNS name' })),
  },
  { additionalProperties: false, description: 'Fetch over HTTPS; the system roots are used when no CA is given.' },
);

const RemoteJwks = Type.Object(
  {
    backendRef: Type.Optional(BackendRef),
    host: Type.Optional(HostPort('Address of the JWKS server; standalone config only (in a cluster use backendRef).')),
    path: Type.String({ minLength: 1, maxLength: 1024, pattern: '^/[^\\x00-\\x20\\x7f]*$', description: 'Path (and query) of the JWKS document, e.g. /.well-known/jwks.json.', expected: 'a path starting with /' }),
    tls: Type.Optional(RemoteTls),
    cacheDuration: Type.Optional(Within(Duration('How long a fetched key set is used before it is fetched again (meanwhile a token with an unknown kid fetches it at most every 10s); default 5m, 10s to 24h.'), '10s', '24h')),
    timeout: Type.Optional(Within(Duration('Time allowed for one fetch, from connecting to the last byte; default 5s, 100ms to 60s.'), '100ms', '60s')),
  },
  {
    additionalProperties: false,
    description: 'A JWKS endpoint fetched by the proxy.',
    'x-kubernetes-validations': [{ rule: 'has(self.host) != has(self.backendRef)', message: 'exactly one of host or backendRef must be set' }],
  },
);

export const JwtProvider = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 63, pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$', description: 'Name of the provider, shown in traces and metrics.', expected: 'lower-case letters, digits and "-"' }),
    issuer: Type.Optional(Type.String({ minLength: 1, maxLength: 1024, description: 'Required `iss` claim.' })),
    audiences: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 1024, description: 'An accepted audience.' }), { minItems: 1, maxItems: 16, description: 'The token\'s `aud` must contain one of these.' })),
    jwks: Type.Object(
      {
        inline: Type.Optional(Type.String({ minLength: 2, maxLength: MAX_JWKS_BYTES, description: 'The JWKS document as JSON text.' })),
        ref: Type.Optional(ObjectKeyRefSchema('the JWKS document', 'jwks.json')),
        file: Type.Optional(FilePath('the JWKS document')),
        remote: Type.Optional(RemoteJwks),
      },
      {
        additionalProperties: false,
        description: 'Where the verification keys are: exactly one of inline, ref (cluster), file (standalone) or remote.',
        'x-kubernetes-validations': [{ rule: '[has(self.inline), has(self.ref), has(self.file), has(self.remote)].filter(x, x).size() == 1', message: 'exactly one of inline, ref, file or remote must be set' }],
      },
    ),
    clockSkew: Type.Optional(Within(Duration('Allowed difference between the proxy\'s clock and the issuer\'s for exp and nbf; default 60s, at most 10m.', { allowZero: true }), '0s', '10m')),
    tokenFrom: Type.Optional(Type.Array(TokenLocation, { minItems: 1, maxItems: 4, description: 'Where the token may be (a request carrying tokens in two of them is refused); default Authorization Bearer.' })),
    consumerClaim: Type.Optional(Type.String({ minLength: 1, maxLength: 256, description: 'Claim naming the consumer; default sub.' })),
    groupClaim: Type.Optional(Type.String({ minLength: 1, maxLength: 256, description: 'Claim naming the consumer\'s group; none by default.' })),
    claimsToHeaders: Type.Optional(
      Type.Array(
        Type.Object(
          { claim: Type.String({ minLength: 1, maxLength: 256, description: 'Claim name (top level).' }), header: HeaderName('Request header set to the claim\'s value (a string, or JSON for other values).') },
          { additionalProperties: false, description: 'A claim copied to a request header.' },
        ),
        { maxItems: 16, description: 'Claims copied to upstream request headers; a client\'s own header of that name is replaced.' },
      ),
    ),
    forwardToken: Type.Optional(Type.Boolean({ description: 'Keep the token in the forwarded request; default false (removed).' })),
  },
  { additionalProperties: false, description: 'An issuer of tokens and how to verify them.' },
);

export const JwtConfig = Type.Object(
  {
    providers: Type.Array(JwtProvider, { minItems: 1, maxItems: MAX_JWT_PROVIDERS, description: 'A token is accepted when a provider whose location holds it verifies it.' }),
    mode: Type.Optional(Type.Unsafe<'Strict' | 'Optional'>({ type: 'string', enum: ['Strict', 'Optional'], description: 'Strict (the default): a request without a valid token is refused. Optional: a request without any token passes without a consumer; an invalid token is still refused.' })),
    maxTokenLength: Type.Optional(Type.Integer({ minimum: 256, maximum: MAX_TOKEN_LENGTH_LIMIT, description: `Longest token read, in characters; a longer one is refused (401) before it is decoded. Default ${DEFAULT_MAX_TOKEN_LENGTH}.` })),
  },
  { additionalProperties: false, description: 'Callers must present a JSON Web Token of one of the providers.' },
);
export type JwtConfig = Static<typeof JwtConfig>;

export type JwtKeysIR =
  /** The JWKS document, already checked: what the controller or loader read. */
  | { readonly kind: 'static'; readonly origin: string; readonly jwks: string }
  | {
      readonly kind: 'remote';
      /** `<host>:<port>`. */
      readonly address: string;
      readonly path: string;
      /** null: plain HTTP. */
      readonly tls: { readonly ca: string | null; readonly hostname: string | null } | null;
      readonly cacheMs: number;
      readonly timeoutMs: number;
    };

export interface JwtProviderIR {
  readonly name: string;
  readonly issuer: string | null;
  readonly audiences: readonly string[];
  readonly keys: JwtKeysIR;
  readonly clockSkewMs: number;
  readonly tokenFrom: readonly TokenLocationIR[];
  readonly consumerClaim: string;
  readonly groupClaim: string | null;
  readonly claimsToHeaders: readonly { readonly claim: string; readonly header: string }[];
  readonly forwardToken: boolean;
}

export interface JwtIR {
  readonly providers: readonly JwtProviderIR[];
  readonly mode: 'Strict' | 'Optional';
  readonly maxTokenLength: number;
}

const LocationWire = Type.Union([
  Obj({ type: Lit('Bearer') }, 'Authorization: Bearer.'),
  Obj({ type: Lit('Header'), name: NonEmpty('Header name, lower case.', 256), prefix: Nullable(Str('Prefix of the value.', 64)) }, 'A header.'),
  Obj({ type: Lit('Query'), name: NonEmpty('Query parameter.', 256) }, 'A query parameter.'),
  Obj({ type: Lit('Cookie'), name: NonEmpty('Cookie.', 256) }, 'A cookie.'),
]);

const Keys = Type.Union([
  Obj({ kind: Lit('static'), origin: NonEmpty('Where the keys came from.', 600), jwks: NonEmpty('JWKS JSON.', MAX_JWKS_BYTES) }, 'A key set.'),
  Obj(
    {
      kind: Lit('remote'),
      address: NonEmpty('`<host>:<port>`.', 400),
      path: NonEmpty('Path.', 1024),
      tls: Nullable(Obj({ ca: Nullable(NonEmpty('PEM CA bundle.', 1_048_576)), hostname: Nullable(NonEmpty('SNI name.', 253)) }, 'TLS.')),
      cacheMs: Type.Integer({ minimum: 1 }),
      timeoutMs: Type.Integer({ minimum: 1 }),
    },
    'A JWKS endpoint.',
  ),
]);

export const JwtWire = Obj(
  {
    providers: Type.Array(
      Obj(
        {
          name: NonEmpty('Provider.', 63),
          issuer: Nullable(NonEmpty('Issuer.', 1024)),
          audiences: Type.Array(NonEmpty('Audience.', 1024), { maxItems: 16 }),
          keys: Keys,
          clockSkewMs: Type.Integer({ minimum: 0 }),
          tokenFrom: Type.Array(LocationWire, { minItems: 1, maxItems: 4 }),
          consumerClaim: NonEmpty('Claim.', 256),
          groupClaim: Nullable(NonEmpty('Claim.', 256)),
          claimsToHeaders: Type.Array(Obj({ claim: NonEmpty('Claim.', 256), header: NonEmpty('Header, lower case.', 256) }, 'A claim to copy.'), { maxItems: 16 }),
          forwardToken: Type.Boolean(),
        },
        'A provider.',
      ),
      { minItems: 1, maxItems: MAX_JWT_PROVIDERS },
    ),
    mode: Type.Union([Lit('Strict'), Lit('Optional')]),
    maxTokenLength: Type.Integer({ minimum: 1, maximum: MAX_TOKEN_LENGTH_LIMIT }),
  },
  'JWT authentication.',
);

