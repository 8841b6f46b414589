// The ProxySnapshot on the wire: a JSON Schema (TypeBox) of the form toWire() produces and
// fromWire() accepts. It is the in-memory IR of ./snapshot.ts with one difference: a Secret
// travels as `{ "secret": "<value>" }` (the in-memory Secret serialises as "[redacted]").
// A compile-time check at the end keeps this schema and the IR types from drifting apart.
import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { EvaluationLimitsSchema } from './limits.js';
import { LOCAL_RATE_LIMIT_UNITS, MAX_KEY_NAME_LENGTH, MAX_SENT_DOMAIN_LENGTH, RATE_LIMIT_UNITS } from './schema/traffic-policy.js';
import { LIMIT_NAME_PATTERN, MAX_KEY_VALUE_LENGTH, MAX_OVERRIDE_LIMIT, MAX_LIMIT_NAME_LENGTH, MAX_RATE_LIMIT_OVERRIDES } from './schema/budget-overrides.js';
import type { Secret } from './secret.js';
import type { ProxySnapshot } from './snapshot.js';
import { PROVIDER_TYPES } from './provider/presets.js';
import { MAX_CA_BUNDLE_BYTES } from './certificate.js';
import { CLIENT_VALIDATION_MODES, MAX_CA_CERTIFICATE_REFS, MAX_CA_ORIGIN_LENGTH } from './client-validation.js';
import { Lit, NonEmpty, Nullable, Obj, Str, WireSecret } from './schema/wire-parts.js';
import { ApiKeyWire } from './auth/api-key.js';
import { AuthorizationWire } from './auth/authorization.js';
import { TransformationWire } from './transformation/transformation.js';
import { BasicAuthWire } from './auth/basic-auth.js';
import { ExtAuthzWire } from './auth/ext-authz.js';
import { JwtWire } from './auth/jwt.js';
import { OidcWire } from './auth/oidc.js';
import { RetryWire } from './resilience/retry.js';
import { MAX_PRIORITY } from './resilience/failover.js';
import { corsWireFields, CorsWire } from './traffic/cors.js';
import { CsrfWire } from './traffic/csrf.js';
import { DirectResponseWire } from './traffic/direct-response.js';
import { ExtProcWire } from './traffic/ext-proc.js';

export { WireSecret };

const Port = (description: string) => Type.Integer({ minimum: 0, maximum: 65535, description });

const Source = Type.Union([
  Obj({ kind: Lit('file'), path: NonEmpty('Config file the snapshot was read from.') }, 'Read from a standalone config file.'),
  Obj({ kind: Lit('controller'), gateway: NonEmpty('`<namespace>/<name>` of the Gateway.', 317) }, 'Sent by the controller for one Gateway.'),
]);

const PathMatch = Obj(
  { type: Type.Union([Lit('Exact'), Lit('PathPrefix'), Lit('RegularExpression')]), value: NonEmpty('Path, prefix or regular expression.', 1024) },
  'Path match.',
);
const ValueMatch = Obj(
  { type: Type.Union([Lit('Exact'), Lit('RegularExpression')]), name: NonEmpty('Header (lower case) or query parameter name.', 256), value: Str('Value.') },
  'Header or query parameter match.',
);
const RouteMatch = Obj(
  {
    path: PathMatch,
    method: Nullable(NonEmpty('HTTP method.', 16)),
    headers: Type.Array(ValueMatch, { maxItems: 16 }),
    queryParams: Type.Array(ValueMatch, { maxItems: 16 }),
  },
  'One way a request matches the route.',
);

const HeaderValue = Obj({ name: NonEmpty('Header name, lower case.', 256), value: Type.Union([Str('Header value.'), WireSecret]) }, 'A header to set or add.');
const headerModifier = {
  set: Type.Array(HeaderValue, { maxItems: 16 }),
  add: Type.Array(HeaderValue, { maxItems: 16 }),
  remove: Type.Array(NonEmpty('Header name, lower case.', 256), { maxItems: 16 }),
};
const PathModifier = Type.Union([
  Obj({ type: Lit('ReplaceFullPath'), value: Str('New path.', 1024) }, 'Replace the whole path.'),
  Obj({ type: Lit('ReplacePrefixMatch'), value: Str('New prefix.', 1024) }, 'Replace the matched prefix.'),
]);
const RequestHeaderFilter = Obj({ type: Lit('RequestHeaderModifier'), ...headerModifier }, 'Changes request headers.');
const ResponseHeaderFilter = Obj({ type: Lit('ResponseHeaderModifier'), ...headerModifier }, 'Changes response headers.');
const RedirectFilter = Obj(
  {
    type: Lit('RequestRedirect'),
    scheme: Nullable(Type.Union([Lit('http'), Lit('https')])),
    hostname: Nullable(NonEmpty('Hostname of the Location.', 253)),
    path: Nullable(PathModifier),
    port: Nullable(Type.Integer({ minimum: 1, maximum: 65535 })),
    statusCode: Type.Union([Lit(301), Lit(302), Lit(303), Lit(307), Lit(308)]),
  },
  'Answers with a redirect.',
);
const RewriteFilter = Obj({ type: Lit('URLRewrite'), hostname: Nullable(NonEmpty('Host header sent upstream.', 253)), path: Nullable(PathModifier) }, 'Rewrites the request.');
/** What a backendRef may carry: run only for the requests sent to that backend. */
const BackendFilter = Type.Union([RequestHeaderFilter, ResponseHeaderFilter, RewriteFilter, RedirectFilter]);
const Weight = Type.Integer({ minimum: 0, maximum: 1_000_000, description: 'Share of requests; 0 sends none.' });
const Priority = Type.Optional(Type.Integer({ minimum: 0, maximum: MAX_PRIORITY, description: 'Failover order, 0 first.' }));
const Endpoint = Obj({ address: NonEmpty('IP address.', 64), port: Type.Integer({ minimum: 1, maximum: 65535 }) }, 'A ready endpoint of a Service.');
const ServiceEndpoints = Obj(
  { name: NonEmpty('`<service>.<namespace>.svc.cluster.local:<port>`, as its backends name it.', 400), endpoints: Type.Array(Endpoint, { maxItems: 100_000 }) },
  'The ready endpoints of a Service port.',
);
const Provider = Obj(
  {
    type: Type.Union(PROVIDER_TYPES.map((t) => Lit(t))),
    basePath: Str('Replaces the client\'s API root /v1.', 1024),
    apiKey: Nullable(Obj({ origin: NonEmpty('Where the key was read.', 4400), value: WireSecret }, 'The provider key.')),
    apiVersion: Nullable(NonEmpty('Azure api-version.', 64)),
  },
  'The LLM provider behind a backend: the API it speaks, its path and key.',
);
const CertificateOrigin = Type.Union([
  Obj({ kind: Lit('Secret'), namespace: NonEmpty('Namespace.', 63), name: NonEmpty('Name.', 253) }, 'A Secret of type kubernetes.io/tls.'),
  Obj(
    { kind: Lit('config'), path: Str('JSON path in the standalone config.', 1024), certFile: NonEmpty('Certificate file.'), keyFile: NonEmpty('Key file.') },
    'Files of the standalone config.',
  ),
]);
const Certificate = Obj(
  {
    origin: CertificateOrigin,
    certificate: NonEmpty('PEM certificate chain, leaf first.', 1_048_576),
    key: Obj({ secret: NonEmpty('PEM private key, in clear: the snapshot stream is the one place it travels.', 65536) }, 'The private key.'),
  },
  'A certificate and its key.',
);
const SubjectAltName = Type.Union([
  Obj({ type: Lit('Hostname'), hostname: NonEmpty('DNS name.', 253) }, 'A DNS name.'),
  Obj({ type: Lit('URI'), uri: NonEmpty('URI.', 253) }, 'A URI name.'),
]);
const BackendTls = Obj(
  {
    caCertificates: Nullable(NonEmpty('PEM bundle of trusted CAs.', 1_048_576)),
    hostname: NonEmpty('SNI and the name checked.', 253),
    subjectAltNames: Type.Array(SubjectAltName, { maxItems: 16 }),
    clientCertificate: Nullable(Certificate),
    minVersion: Type.Union([Lit('TLSv1.2'), Lit('TLSv1.3')]),
  },
  'TLS to the backend.',
);
const BackendFilters = Type.Array(BackendFilter, { maxItems: 16 });
const BackendProtocol = Type.Union([Lit('h2c'), Lit('h2')], { description: 'h2c: HTTP/2 over cleartext with prior knowledge (never with tls); h2: HTTP/2 over TLS by ALPN (only with tls); absent: HTTP/1.1.' });
const Backend = Type.Union([
  Obj(
    {
      kind: Lit('static'),
      name: NonEmpty('`<host>:<port>`.', 300),
      host: NonEmpty('Host.', 253),
      port: Type.Integer({ minimum: 1, maximum: 65535 }),
      weight: Weight,
      priority: Priority,
      provider: Type.Optional(Provider),
      tls: Type.Optional(BackendTls),
      protocol: Type.Optional(BackendProtocol),
    },
    'A fixed address.',
  ),
  Obj(
    {
      kind: Lit('external'),
      name: NonEmpty('`<namespace>/<name>` of the Backend.', 320),
      namespace: NonEmpty('Namespace of the Backend.', 63),
      hostname: NonEmpty('Host name or address.', 253),
      port: Type.Integer({ minimum: 1, maximum: 65535 }),
      weight: Weight,
      priority: Priority,
      tls: Type.Optional(BackendTls),
      provider: Type.Optional(Provider),
      filters: Type.Optional(BackendFilters),
      protocol: Type.Optional(BackendProtocol),
    },
    'A Backend resource: a host name resolved by the proxy.',
  ),
  Obj(
    {
      kind: Lit('service'),
      name: NonEmpty('`<service>.<namespace>.svc.cluster.local:<port>`.', 400),
      namespace: NonEmpty('Namespace of the Service.', 63),
      service: NonEmpty('Name of the Service.', 253),
      port: Type.Integer({ minimum: 1, maximum: 65535, description: 'Service port.' }),
      weight: Weight,
      priority: Priority,
      filters: Type.Optional(BackendFilters),
      tls: Type.Optional(BackendTls),
      protocol: Type.Optional(BackendProtocol),
    },
    'A Service port; its ready endpoints are the entry of its name in the snapshot\'s endpoints.',
  ),
  Obj({ kind: Lit('invalid'), name: NonEmpty('The reference as written.', 600), weight: Weight, priority: Priority, reason: NonEmpty('Why it could not be resolved.', 1024) }, 'An unresolved reference.'),
]);

const Filter = Type.Union([
  RequestHeaderFilter,
  ResponseHeaderFilter,
  RedirectFilter,
  RewriteFilter,
  Obj({ type: Lit('CORS'), ...corsWireFields }, 'The Gateway API CORS filter.'),
  Obj(
    {
      type: Lit('RequestMirror'),
      backend: Backend,
      numerator: Type.Integer({ minimum: 0, maximum: 1_000_000, description: 'Share of the requests mirrored: numerator / denominator.' }),
      denominator: Type.Integer({ minimum: 1, maximum: 1_000_000 }),
    },
    'Sends a copy of a share of the requests to another backend; its answer is discarded.',
  ),
]);

const PolicyTarget = Obj(
  {
    kind: Type.Union([Lit('Gateway'), Lit('HTTPRoute'), Lit('GRPCRoute')]),
    namespace: NonEmpty('Namespace.', 63),
    name: NonEmpty('Name.', 253),
    sectionName: Nullable(NonEmpty('Listener or rule name.', 253)),
  },
  'What a GatewayPolicy targets.',
);
const ConfigOrigin = Obj({ kind: Lit('config'), path: Str('JSON path in the standalone config.', 1024) }, 'From the standalone config.');
const RouteOrigin = Type.Union([
  Obj({ kind: Type.Union([Lit('HTTPRoute'), Lit('GRPCRoute')]), namespace: NonEmpty('Namespace.', 63), name: NonEmpty('Name.', 253), rule: Type.Integer({ minimum: 0, maximum: 63 }) }, 'A rule of an HTTPRoute or a GRPCRoute.'),
  ConfigOrigin,
]);
const PolicyOrigin = Type.Union([
  Obj({ kind: Lit('GatewayPolicy'), namespace: NonEmpty('Namespace.', 63), name: NonEmpty('Name.', 253), target: PolicyTarget }, 'A GatewayPolicy.'),
  ConfigOrigin,
]);

const Unit = Type.Union(RATE_LIMIT_UNITS.map((u) => Lit(u)));
const LocalUnit = Type.Union(LOCAL_RATE_LIMIT_UNITS.map((u) => Lit(u)));
const KeyName = NonEmpty('Claim or header name.', MAX_KEY_NAME_LENGTH);
const Key = Type.Union([
  Obj({ type: Lit('Consumer') }, 'Per consumer.'),
  Obj({ type: Lit('ConsumerGroup') }, 'Per consumer group.'),
  Obj({ type: Lit('Claim'), name: KeyName }, 'Per value of a JWT claim.'),
  Obj({ type: Lit('Header'), name: KeyName }, 'Per value of a header (lower case).'),
  Obj({ type: Lit('ClientCertificate') }, 'Per verified client certificate subject.'),
  Obj({ type: Lit('Expression'), expression: NonEmpty('CEL expression.', 1024) }, 'Per value of a CEL expression.'),
]);
const OverrideKey = Type.String({ maxLength: MAX_KEY_VALUE_LENGTH });
const Overrides = <T extends TSchema>(item: T) => Type.Optional(Type.Array(item, { minItems: 1, maxItems: MAX_RATE_LIMIT_OVERRIDES }));
const LimitNameWire = Type.Optional(Type.String({ minLength: 1, maxLength: MAX_LIMIT_NAME_LENGTH, pattern: LIMIT_NAME_PATTERN }));
const LocalRateLimit = Type.Union([
  Obj(
    {
      kind: Lit('requests'),
      requests: Type.Integer({ minimum: 1 }),
      burst: Type.Integer({ minimum: 0 }),
      unit: LocalUnit,
      by: Type.Optional(Key),
      overrides: Overrides(Obj({ key: OverrideKey, requests: Type.Integer({ minimum: 1 }), burst: Type.Integer({ minimum: 0 }) }, 'Budget of one key.')),
      name: LimitNameWire,
    },
    'Requests per unit.',
  ),
  Obj(
    {
      kind: Lit('tokens'),
      tokens: Type.Integer({ minimum: 1 }),
      unit: LocalUnit,
      by: Type.Optional(Key),
      overrides: Overrides(Obj({ key: OverrideKey, tokens: Type.Integer({ minimum: 1 }) }, 'Budget of one key.')),
      name: LimitNameWire,
    },
    'LLM tokens per unit.',
  ),
]);
const GlobalRateLimit = Obj(
  {
    service: NonEmpty('`<host>:<port>` of the rate limit service.', 400),
    domain: NonEmpty('Domain as sent: a GatewayPolicy\'s is prefixed with its namespace.', MAX_SENT_DOMAIN_LENGTH),
    descriptors: Type.Array(
      Obj(
        {
          entries: Type.Array(Obj({ name: NonEmpty('Key.', 253), expression: NonEmpty('CEL expression.') }, 'Descriptor entry.')),
          unit: Type.Union([Lit('Requests'), Lit('Tokens')]),
          by: Type.Optional(Key),
          limit: Type.Optional(Obj({ requestsPerUnit: Type.Integer({ minimum: 1, maximum: MAX_OVERRIDE_LIMIT }), unit: Unit }, 'Limit override.')),
          overrides: Overrides(Obj({ key: OverrideKey, requestsPerUnit: Type.Integer({ minimum: 1, maximum: MAX_OVERRIDE_LIMIT }) }, 'Limit of one key.')),
          name: LimitNameWire,
        },
        'Descriptor.',
      ),
      { minItems: 1 },
    ),
    failureMode: Type.Union([Lit('FailOpen'), Lit('FailClosed')]),
    timeoutMs: Type.Integer({ minimum: 1 }),
    tokenReservation: Type.Optional(Type.Union([Lit('Estimate'), Lit('None')])),
  },
  'Global rate limit.',
);
const Policy = Obj(
  {
    origin: PolicyOrigin,
    localRateLimit: Nullable(Type.Array(LocalRateLimit, { minItems: 1, maxItems: 16 })),
    remoteRateLimit: Nullable(GlobalRateLimit),
    apiKey: Nullable(ApiKeyWire),
    basicAuth: Nullable(BasicAuthWire),
    jwt: Nullable(JwtWire),
    oidc: Nullable(OidcWire),
    authorization: Nullable(AuthorizationWire),
    extAuthz: Nullable(ExtAuthzWire),
    transformation: Nullable(TransformationWire),
    cors: Nullable(CorsWire),
    csrf: Nullable(CsrfWire),
    directResponse: Nullable(DirectResponseWire),
    extProc: Nullable(ExtProcWire),
  },
  'Policies attached at one level.',
);

const Route = Obj(
  {
    name: NonEmpty('Route identifier.', 600),
    origin: RouteOrigin,
    hostnames: Type.Array(NonEmpty('Hostname.', 253)),
    matches: Type.Array(RouteMatch, { minItems: 1, maxItems: 64 }),
    filters: Type.Array(Filter, { maxItems: 16 }),
    policy: Nullable(Policy),
    backends: Type.Array(Backend, { maxItems: 64 }),
    timeouts: Obj({ requestMs: Nullable(Type.Integer({ minimum: 0 })), backendRequestMs: Nullable(Type.Integer({ minimum: 0 })) }, 'Timeouts.'),
    retry: Type.Optional(RetryWire),
  },
  'A route.',
);
/** One route on the wire: checked apart from the rest of its snapshot when it is new (snapshot-wire.ts). */
export const WireRouteSchema = Route;
export const WireServiceEndpointsSchema = ServiceEndpoints;
const ClientValidation = Obj(
  {
    caCertificates: NonEmpty('PEM bundle of the CAs a client certificate must chain to.', MAX_CA_BUNDLE_BYTES),
    mode: Type.Union(CLIENT_VALIDATION_MODES.map((m) => Lit(m))),
    origins: Type.Array(NonEmpty('Where CA certificates came from.', MAX_CA_ORIGIN_LENGTH), { minItems: 1, maxItems: MAX_CA_CERTIFICATE_REFS }),
  },
  'Client certificates asked for and checked.',
);
const ListenerTls = Obj(
  { mode: Lit('Terminate'), certificates: Type.Array(Certificate, { minItems: 1, maxItems: 64 }), clientValidation: Type.Optional(ClientValidation) },
  'TLS terminated at the proxy.',
);
const StreamBackend = Type.Union([
  Obj({ kind: Lit('static'), name: NonEmpty('host:port.', 300), host: NonEmpty('Host name or address.', 253), port: Type.Integer({ minimum: 1, maximum: 65535 }), weight: Weight }, 'A fixed address.'),
  Obj({ kind: Lit('service'), name: NonEmpty('Service port name.', 600), endpoints: Type.Array(Endpoint, { maxItems: 100_000 }), weight: Weight }, 'A Service port.'),
  Obj({ kind: Lit('invalid'), name: NonEmpty('Reference as written.', 600), weight: Weight, reason: NonEmpty('Why it is unresolved.', 64) }, 'An unresolved reference.'),
]);
const TlsRoute = Obj(
  {
    name: NonEmpty('Route identifier.', 600),
    origin: Type.Union([ConfigOrigin, Obj({ kind: Lit('TLSRoute'), namespace: NonEmpty('Namespace.', 63), name: NonEmpty('Name.', 253) }, 'From a TLSRoute.')]),
    hostnames: Type.Array(NonEmpty('Server name.', 253), { maxItems: 16 }),
    backends: Type.Array(StreamBackend, { maxItems: 64 }),
  },
  'A TLS route.',
);
const TlsListener = Obj(
  {
    name: NonEmpty('Listener name.', 253),
    hostname: Nullable(NonEmpty('Hostname.', 253)),
    tls: Type.Union([Obj({ mode: Lit('Passthrough') }, 'TLS passed through.'), Obj({ mode: Lit('Terminate'), certificates: Type.Array(Certificate, { minItems: 1, maxItems: 64 }) }, 'TLS terminated here.')]),
    routes: Type.Array(TlsRoute, { maxItems: 10_000 }),
  },
  'A TLS listener.',
);
const TlsBind = Obj({ port: Port('TCP port.'), address: NonEmpty('Address to listen on.', 64), listeners: Type.Array(TlsListener, { minItems: 1, maxItems: 64 }) }, 'A port of TLS listeners.');

/** A snapshot's schema around `routes`, the schema of a listener's route list. */
function snapshotSchema<R extends TSchema>(routes: R, description: string) {
  const listenerBase = {
    name: NonEmpty('Listener name.', 253),
    hostname: Nullable(NonEmpty('Hostname.', 253)),
    policy: Nullable(Policy),
    routes,
  };
  const Listener = Type.Union([
    Obj({ ...listenerBase, protocol: Lit('HTTP') }, 'A plain HTTP listener.'),
    Obj({ ...listenerBase, protocol: Lit('HTTPS'), tls: ListenerTls }, 'An HTTPS listener.'),
  ]);
  const Bind = Obj({ port: Port('TCP port.'), address: NonEmpty('Address to listen on.', 64), listeners: Type.Array(Listener, { minItems: 1 }) }, 'A port.');
  return Obj(
    {
      version: Type.String({ pattern: '^[0-9a-f]{12}$', description: 'Content hash of the rest of the snapshot.', expected: '12 lower-case hex digits' }),
      source: Source,
      binds: Type.Array(Bind),
      tlsBinds: Type.Optional(Type.Array(TlsBind, { maxItems: 64 })),
      limits: Type.Optional(EvaluationLimitsSchema),
      endpoints: Type.Optional(Type.Array(ServiceEndpoints, { maxItems: 100_000 })),
    },
    description,
  );
}

export const WireSnapshot = snapshotSchema(Type.Array(Route), 'A ProxySnapshot as it travels from the controller to a proxy.');
/**
 * What a decoder checks as a whole: the snapshot with every listener's routes taken out (each
 * route is checked on its own against WireRouteSchema, and only when new). Without the route
 * schema twice over (once per listener protocol), its validator is a fraction of the size:
 * V8 optimises it once it is hot, and the optimised code of the whole-snapshot validator took
 * 3.6 MiB of each process's heap for good.
 */
export const WireSkeleton = snapshotSchema(Type.Array(Type.Never(), { maxItems: 0 }), 'A ProxySnapshot with its routes taken out.');
export type WireSnapshot = Static<typeof WireSnapshot>;

/** The IR with every Secret replaced by its wire form and readonly dropped. */
export type ToWire<T> = T extends Secret
  ? { secret: string }
  : T extends readonly (infer E)[]
    ? ToWire<E>[]
    : T extends object
      ? { -readonly [K in keyof T]: ToWire<T[K]> }
      : T;

// Compile-time: the schema and the IR types describe the same objects. Checked level by level:
// on the whole snapshot at once TypeScript stops comparing before the leaves.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
type WireBind = WireSnapshot['binds'][number];
type WireListener = WireBind['listeners'][number];
type WireRoute = WireListener['routes'][number];
type IRListener = ProxySnapshot['binds'][number]['listeners'][number];
type IRRoute = IRListener['routes'][number];
const sameShape: [
  Same<WireSnapshot['source'], ToWire<ProxySnapshot['source']>>,
  Same<WireSnapshot['limits'], ToWire<ProxySnapshot['limits']>>,
  Same<WireSnapshot['tlsBinds'], ToWire<ProxySnapshot['tlsBinds']>>,
  Same<WireSnapshot['endpoints'], ToWire<ProxySnapshot['endpoints']>>,
  Same<Omit<WireBind, 'listeners'>, ToWire<Omit<ProxySnapshot['binds'][number], 'listeners'>>>,
  Same<Omit<WireListener, 'routes' | 'policy'>, ToWire<Omit<IRListener, 'routes' | 'policy'>>>,
  Same<Extract<WireListener, { protocol: 'HTTPS' }>['tls'], ToWire<Extract<IRListener, { protocol: 'HTTPS' }>['tls']>>,
  Same<WireListener['policy'], ToWire<IRListener['policy']>>,
  Same<Omit<WireRoute, 'matches' | 'filters' | 'backends' | 'policy'>, ToWire<Omit<IRRoute, 'matches' | 'filters' | 'backends' | 'policy'>>>,
  Same<WireRoute['matches'][number], ToWire<IRRoute['matches'][number]>>,
  Same<WireRoute['filters'][number], ToWire<IRRoute['filters'][number]>>,
  Same<WireRoute['backends'][number], ToWire<IRRoute['backends'][number]>>,
  Same<WireRoute['policy'], ToWire<IRRoute['policy']>>,
] = [true, true, true, true, true, true, true, true, true, true, true, true, true];
void sameShape;
