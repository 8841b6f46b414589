// The standalone config file: process settings plus binds -> listeners -> routes.
// Fields of the interface spec (§2.6) and DESIGN.md's shape; every object is closed
// (unknown fields are errors) so that a typo never silently does nothing.
import { Type, type Static } from '@sinclair/typebox';
import { Duration, Enum, Host, Hostname, HostPort, Port, PositiveInt } from './common.js';
import { HTTPRouteFilter, HTTPRouteMatch, RouteTimeouts } from './gateway-api.js';
import { CelLimitsSchema, RegexLimitsSchema } from '../limits.js';
import { PolicySet } from './traffic-policy.js';
import { ProviderFileConfig } from '../provider/schema.js';
import { HTTPRouteRetry } from '../resilience/retry.js';
import { BackendPriority } from '../resilience/failover.js';

/** The most endpoints one request may try after connections that failed before sending (config.connectAttempts). */
export const MAX_CONNECT_ATTEMPTS = 8;
import { BackendTlsConfig } from './backend-tls.js';
import { CertificateFilesConfig } from './certificate-files.js';
import { CLIENT_VALIDATION_MODES } from '../client-validation.js';
import { TlsBindConfig } from './tls-bind-config.js';

export { CertificateFilesConfig };

export const BackendConfig = Type.Object(
  {
    host: HostPort('Upstream address <host>:<port>.'),
    weight: Type.Optional(Type.Integer({ minimum: 0, maximum: 1_000_000, description: 'Relative share of requests; default 1; 0 sends none.' })),
    priority: Type.Optional(BackendPriority),
    provider: Type.Optional(ProviderFileConfig),
    tls: Type.Optional(BackendTlsConfig),
    protocol: Type.Optional(
      Enum(
        ['HTTP', 'H2C', 'H2'],
        'How the proxy speaks HTTP to the backend: HTTP (HTTP/1.1, the default; WebSocket upgrades pass through), H2C (HTTP/2 over cleartext with prior knowledge, as a Service port with appProtocol kubernetes.io/h2c; not with tls) or H2 (HTTP/2 over TLS, ALPN h2 only, as a GRPCRoute backend under a BackendTLSPolicy; needs tls). gRPC backends need H2C or H2.',
      ),
    ),
  },
  { additionalProperties: false, description: 'An upstream the route sends requests to.' },
);
export type BackendConfig = Static<typeof BackendConfig>;

export const RouteConfig = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 253, pattern: '^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$', description: 'Route name, unique within its listener.', expected: 'letters, digits, "-", "_" and ".", starting and ending with a letter or digit' }),
    hostnames: Type.Optional(Type.Array(Hostname('Host the route serves.'), { maxItems: 16, description: 'Hosts the route serves; intersected with the listener hostname. Default: every host of the listener.' })),
    matches: Type.Optional(Type.Array(HTTPRouteMatch, { maxItems: 64, description: 'Gateway API HTTPRouteMatch list; any one must match. Default: PathPrefix "/".' })),
    filters: Type.Optional(Type.Array(HTTPRouteFilter, { maxItems: 16, description: 'Gateway API HTTPRouteFilter list, applied in order.' })),
    policies: Type.Optional(PolicySet),
    timeouts: Type.Optional(RouteTimeouts),
    retry: Type.Optional(HTTPRouteRetry),
    backends: Type.Optional(
      Type.Array(BackendConfig, { maxItems: 64, description: 'Upstreams; one of the lowest priority is picked per request by weight (the next priority answers when it fails). May be empty or left out only with a RequestRedirect filter.' }),
    ),
  },
  { additionalProperties: false, description: 'A route.' },
);
export type RouteConfig = Static<typeof RouteConfig>;

export const ClientValidationConfig = Type.Object(
  {
    caFile: Type.String({
      minLength: 1,
      maxLength: 4096,
      description: 'PEM bundle of the CA certificates a client certificate must chain to; a relative path is relative to the config file. Read, and watched, like the config.',
    }),
    mode: Type.Optional(
      Enum(
        CLIENT_VALIDATION_MODES,
        'AllowValidOnly (default): a client without a certificate that verifies gets no connection. AllowInsecureFallback: every client is served; only verified certificates are known to rules and keyed budgets.',
      ),
    ),
  },
  { additionalProperties: false, description: 'Client certificates: asked for in the handshake and checked against caFile (mutual TLS).' },
);
export type ClientValidationConfig = Static<typeof ClientValidationConfig>;

export const ListenerTlsConfig = Type.Object(
  {
    certificates: Type.Array(CertificateFilesConfig, {
      minItems: 1,
      maxItems: 16,
      description: 'Certificates the listener offers; several let it offer, say, an ECDSA and an RSA one. Clients whose SNI names the listener hostname get them.',
    }),
    clientValidation: Type.Optional(ClientValidationConfig),
  },
  { additionalProperties: false, description: 'TLS terminated at the proxy (required with protocol HTTPS).' },
);
export type ListenerTlsConfig = Static<typeof ListenerTlsConfig>;

export const ListenerConfig = Type.Object(
  {
    name: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 253,
        pattern: '^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$',
        description: 'Listener name, unique within the config; default listener-<port>-<index in the bind>.',
        expected: 'letters, digits, "-", "_" and ".", starting and ending with a letter or digit',
      }),
    ),
    protocol: Enum(['HTTP', 'HTTPS'], 'Listener protocol: HTTP, or HTTPS (TLS terminated here; needs tls). Every listener of a bind has the same protocol.'),
    hostname: Type.Optional(Hostname('Host this listener serves; default every host. On HTTPS also the SNI name its certificates answer.')),
    tls: Type.Optional(ListenerTlsConfig),
    policies: Type.Optional(PolicySet),
    routes: Type.Array(RouteConfig, { description: 'Routes of the listener.' }),
  },
  { additionalProperties: false, description: 'A listener on a bind.' },
);
export type ListenerConfig = Static<typeof ListenerConfig>;

export const BindConfig = Type.Object(
  {
    port: Port('TCP port to listen on.'),
    address: Type.Optional(Host('Address to listen on (an IP address or a host name); default 0.0.0.0.')),
    listeners: Type.Array(ListenerConfig, { minItems: 1, description: 'Listeners on this port, chosen by hostname.' }),
  },
  { additionalProperties: false, description: 'A port the proxy listens on.' },
);
export type BindConfig = Static<typeof BindConfig>;

export const LOG_LEVELS = ['error', 'warn', 'info', 'debug', 'trace'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export const ProcessConfig = Type.Object(
  {
    adminAddr: Type.Optional(HostPort('Admin server address; default 127.0.0.1:15000; port 0 picks a free port.', { ephemeralPort: true })),
    adminAllowedHosts: Type.Optional(
      Type.Array(
        Host('A host name or an IP address, without port, e.g. tollgate-admin.internal or 198.18.0.5.'),
        { maxItems: 64, description: 'Host names (besides 127.0.0.1, localhost and [::1], any port) the admin server answers; requests with another Host get 421. Default none.' },
      ),
    ),
    metricsAddr: Type.Optional(HostPort('Prometheus metrics address (GET /metrics); default 0.0.0.0:15020; port 0 picks a free port.', { ephemeralPort: true })),
    readinessAddr: Type.Optional(HostPort('Readiness address (GET /healthz/ready); default 0.0.0.0:15021; port 0 picks a free port.', { ephemeralPort: true })),
    logLevel: Type.Optional(
      Type.String({ minLength: 1, description: 'Start-up log directive: a level (error, warn, info, debug, trace) or a list like "info,proxy=debug". Default info.' }),
    ),
    connectTimeout: Type.Optional(Duration('Time to open a connection to a backend; default 5s; more than 0s and at most 596h.')),
    connectAttempts: Type.Optional(
      PositiveInt(
        'Endpoints of its backend one request may try when the connection fails before any byte of the request was sent (refused, reset, connect timeout): safe whatever the method. Default 3; 1: no second endpoint; never more than the backend has.',
        MAX_CONNECT_ATTEMPTS,
      ),
    ),
    retryBudgetPercent: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: 100,
        description:
          'Extra attempts (retries and failovers) a route may have in flight at once, as a percentage of its requests in flight; beyond it (and beyond retryBudgetMinConcurrency) a request gets the answer it has. Default 20.',
      }),
    ),
    retryBudgetMinConcurrency: Type.Optional(
      Type.Integer({ minimum: 0, maximum: 100_000, description: 'Extra attempts a route may always have in flight at once, whatever its traffic. Default 10.' }),
    ),
    maxRetryBodyBytes: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: 1_073_741_824,
        description:
          'Largest request body kept in memory to be sent again (retries, failover); a request with a larger body is sent once. 0: requests with a body are never sent again. At most maxBufferedRequestBytes. Default 1048576 (1 MiB).',
      }),
    ),
    coolDown: Type.Optional(
      Duration('How long a backend that answered 429 or 503 without Retry-After is passed over by routes with failover or retries. Default 5s; 0s: not at all.', { allowZero: true }),
    ),
    maxCoolDown: Type.Optional(
      Duration('The longest cool-down a backend\'s Retry-After may ask for (seconds or an HTTP date); a longer one is held to it. Default 300s.', { allowZero: true }),
    ),
    backendRequestTimeout: Type.Optional(
      Duration('Default time to wait for a backend response to start, for routes without timeouts.backendRequest; default 60s; 0s: no timeout.', { allowZero: true }),
    ),
    drainTimeout: Type.Optional(Duration('How long shutdown waits for in-flight requests; default 30s; 0s: close at once.', { allowZero: true })),
    drainIdleTimeout: Type.Optional(
      Duration(
        'How long shutdown keeps an idle kept-alive client connection open for its next request, which is answered with Connection: close; then it is closed. At most drainTimeout applies. Default 2s; 0s: idle connections are closed at once.',
        { allowZero: true },
      ),
    ),
    requestHeadersTimeout: Type.Optional(Duration('Time a client has to send the request line and headers; past it the proxy answers 408 and closes. Default 10s.')),
    requestBodyIdleTimeout: Type.Optional(Duration('Time without a byte of the request body before the proxy answers 408 and closes; a response streaming from a backend is governed by the route timeouts only. Default 30s.')),
    keepAliveTimeout: Type.Optional(Duration('How long an idle keep-alive client connection stays open. Default 72s.')),
    backendBodyIdleTimeout: Type.Optional(
      Duration(
        "Time a backend's response body may send nothing before the proxy gives up on it and ends the client's response (a stream is cut off; before the headers the route's timeouts apply). Time the client is not reading does not count, nor time a response processor is working. Default 5m.",
      ),
    ),
    paths: Type.Optional(
      Type.Object(
        {
          mergeSlashes: Type.Optional(Type.Boolean({ description: 'Merge runs of "/" in request paths into one before routing. Default false.' })),
          escapedSlashes: Type.Optional(
            Enum(['Reject', 'KeepUnchanged', 'UnescapeAndForward'], 'What to do with %2F and %5C in request paths: Reject (400, the default), KeepUnchanged, or UnescapeAndForward (decode to "/" before routing).'),
          ),
        },
        { additionalProperties: false, description: 'How request paths are normalised before routing (RFC 3986: unreserved escapes decoded, dot segments removed).' },
      ),
    ),
    maxSseLineBytes: Type.Optional(
      Type.Integer({ minimum: 1024, maximum: 268_435_456, description: 'Longest server-sent event from a backend the proxy parses for LLM usage; past it the stream is passed through unparsed and its tokens estimated. Default 1048576 (1 MiB).' }),
    ),
    maxRequestBodyBytes: Type.Optional(
      Type.Integer({ minimum: 1024, maximum: 1_073_741_824, description: 'Largest request body the gateway reads on a route that counts LLM tokens or whose authorization rules read the model; a larger one is refused with 413. Default 8388608 (8 MiB).' }),
    ),
    maxBufferedRequestBytes: Type.Optional(
      Type.Integer({
        minimum: 1024,
        maximum: 17_179_869_184,
        description:
          'Request-body bytes the whole process holds in memory at once (bodies read for token counting, global descriptors and mirrors, each until its request ends); a body that would go beyond it is refused with 503 and Retry-After. At least maxRequestBodyBytes. Default 67108864 (64 MiB), or maxRequestBodyBytes when that is larger.',
      }),
    ),
    requestBodyTimeout: Type.Optional(
      Duration('Time a client has to send its whole request body, from the end of its headers; past it the proxy answers 408 and closes. Bounds a client that sends a byte just often enough to escape requestBodyIdleTimeout. Default 60s.'),
    ),
    maxConnectionsPerBind: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 1_000_000, description: 'Client connections open at once on each bind (port); a connection beyond it is closed as soon as it is accepted. Default 4096.' }),
    ),
    workers: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 64,
        description:
          'Threads serving requests, each with its own listening socket on every bind (SO_REUSEPORT), the kernel spreading connections across them. Local rate limits, keyed budgets, the buffered-bytes budget and the connection caps are shared by all of them. Default: the CPUs the container may use, from its cgroup CPU quota (without a quota, the CPUs the process may run on, at most 4); the --workers flag overrides it.',
      }),
    ),
    maxWebSocketConnections: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 1_000_000,
        description: 'Upgraded connections (WebSockets) open at once on the proxy, all binds together, upgrade requests on their way to a backend included; one more upgrade request is answered 503 TG_WEBSOCKET_LIMIT. Default 1024.',
      }),
    ),
    websocketIdleTimeout: Type.Optional(Duration('Time an upgraded connection (a WebSocket) may pass without a byte either way before the proxy closes both sides. Default 300s.')),
    tlsClientHelloTimeout: Type.Optional(Duration('Time a client of a TLS bind has to send its whole ClientHello; past it the connection is closed (tollgate_tls_connections_total outcome hello_timeout). Also bounds the handshake of Terminate listeners. Default 10s.')),
    tlsIdleTimeout: Type.Optional(Duration('Time a stream of a TLS bind may pass without a byte either way before the proxy closes both sides. Default 300s.')),
    maxTokensChargedPerResponse: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 4_294_967_295,
        description:
          'Most LLM tokens one response is charged to token limits (local tokens entries and global Tokens descriptors); a backend reporting more is charged this much and logged. Bounds what one backend can take of a budget other routes share. Default 2000000.',
      }),
    ),
    maxRateLimitKeys: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 10_000_000,
        description:
          'Key values each keyed local limit (one with `by`) keeps a budget for in each proxy; beyond it, a new key shares the limit\'s overflow budget until keys no longer in use are dropped at the next window. A key used in the current window is never dropped. Default 100000.',
      }),
    ),
    dns: Type.Optional(
      Type.Object(
        {
          minTtl: Type.Optional(Duration('Shortest time an answer is kept, whatever its TTL (a TTL of 0 would resolve for every connection). Default 1s.')),
          maxTtl: Type.Optional(Duration('Longest time an answer is kept, whatever its TTL. Default 300s.')),
          staleFor: Type.Optional(Duration('How long past their TTL the last good addresses are used while resolution fails. 0s: not at all. Default 300s.', { allowZero: true })),
          maxNames: Type.Optional(Type.Integer({ minimum: 1, maximum: 100_000, description: 'Host names kept at once (the least recently used go first). Default 1024.' })),
        },
        { additionalProperties: false, description: 'How the host names of Backend resources are resolved and cached by the proxy (docs/providers.md, "DNS").' },
      ),
    ),
    basicAuth: Type.Optional(
      Type.Object(
        {
          workers: Type.Optional(Type.Integer({ minimum: 1, maximum: 64, description: 'Threads verifying passwords at once (bcrypt, SHA-crypt, apr1), off the event loop. Default: the cores less one, 1 to 4.' })),
          maxQueue: Type.Optional(
            Type.Integer({ minimum: 0, maximum: 100_000, description: 'Verifications that may wait for a thread; one more is answered 503 TG_AUTH_BUSY with Retry-After. Default 256.' }),
          ),
          cacheEntries: Type.Optional(
            Type.Integer({ minimum: 0, maximum: 1_000_000, description: 'Verified credentials remembered (least recently used first out), so a client sending them again runs no hash. 0: none. Default 10000.' }),
          ),
        },
        { additionalProperties: false, description: 'How basicAuth verifies passwords: worker threads, their queue, the cache of verified credentials.' },
      ),
    ),
    maxTraceSessions: Type.Optional(PositiveInt('Trace sessions that may wait for a request at once; beyond it GET /debug/trace answers 429. Default 32.', 1024)),
    regex: Type.Optional(
      Type.Partial(RegexLimitsSchema, {
        additionalProperties: false,
        description: 'Bounds on the RegularExpression matches of routes (and the patterns of CEL matches()); a route over them is a config error naming the match. Applied on reload too.',
      }),
    ),
    cel: Type.Optional(
      Type.Partial(CelLimitsSchema, {
        additionalProperties: false,
        description: 'Bounds on CEL expressions (global rate limit descriptors) and on the request inputs they read; an expression over the budget is a config error naming it. Applied on reload too.',
      }),
    ),
    maxModelLabels: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: 10_000,
        description: 'Distinct values of the model label of tollgate_llm_tokens_total: the first N models seen keep their own series, later ones are counted as "other"; default 100.',
      }),
    ),
    consumerMetricsTopN: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: 1000,
        description: 'Consumers with a series of their own in tollgate_consumer_tokens_total: the top N by LLM tokens; the tokens of the others are counted as consumer="other". 0: no per-consumer series. Default 20.',
      }),
    ),
  },
  { additionalProperties: false, description: 'Process settings.' },
);
export type ProcessConfig = Static<typeof ProcessConfig>;

export const StandaloneConfig = Type.Object(
  {
    config: Type.Optional(ProcessConfig),
    binds: Type.Array(BindConfig, { description: 'Ports and their listeners.' }),
    tlsBinds: Type.Optional(Type.Array(TlsBindConfig, { maxItems: 64, description: 'Ports of TLS listeners, routed by the ClientHello\'s server name (docs/tlsroute.md).' })),
  },
  { additionalProperties: false, description: 'Tollgate standalone configuration.' },
);
export type StandaloneConfig = Static<typeof StandaloneConfig>;
