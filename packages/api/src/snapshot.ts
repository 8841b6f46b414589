// ProxySnapshot: the intermediate representation the proxy runs on. The file loader builds
// it from a standalone config; the controller builds it from Gateway API resources. Both go
// through the same compile step in the proxy, so standalone mode is never a second code path.
//
// Everything here is normalised: defaults applied, names lower-cased where HTTP says they are
// case-insensitive, durations in milliseconds, and each variant a discriminated union so
// that, for instance, a tokens limit with a burst cannot be expressed.
import type { EvaluationLimits } from './limits.js';
import type { LocalRateLimitUnit, RateLimitUnit } from './schema/traffic-policy.js';
import type { Secret } from './secret.js';
import type { AuthPolicyIR } from './auth/convert.js';
import type { TransformationIR } from './transformation/transformation.js';
import type { CorsIR } from './traffic/cors.js';
import type { TrafficKindsIR } from './traffic/kinds.js';
import type { ProviderType } from './provider/presets.js';
import type { RetryIR } from './resilience/retry.js';

export interface ProxySnapshot {
  /** Hash of the rest of the snapshot (snapshotVersion): equal content, equal version. */
  readonly version: string;
  readonly source: SnapshotSource;
  readonly binds: readonly BindIR[];
  /**
   * Ports of TLS listeners (Gateway API protocol TLS, TLSRoute): byte streams routed by the
   * ClientHello's server name, never on a port of `binds`. Absent: none.
   */
  readonly tlsBinds?: readonly TlsBindIR[];
  /** The bounds its expressions were validated with; left out when they are the defaults (DEFAULT_LIMITS). */
  readonly limits?: EvaluationLimits;
  /**
   * The ready endpoints of each Service port the routes send to (their `service` backends and
   * mirrors), sorted by name, one entry per name. Kept apart from the routes so that an
   * endpoint change is one entry changed, not every route to the Service made anew (a route is
   * the unit the controller, the stream and the proxies reuse). A Service backend whose name
   * has no entry has no ready endpoint. Absent: none.
   */
  readonly endpoints?: readonly ServiceEndpointsIR[];
}

/** The ready endpoints of one Service port, by the name its backends carry. */
export interface ServiceEndpointsIR {
  /** `<service>.<namespace>.svc.cluster.local:<port>`, as ServiceBackendIR.name. */
  readonly name: string;
  /** Sorted by address then port; empty when no endpoint is ready. */
  readonly endpoints: readonly EndpointIR[];
}

export type SnapshotSource =
  | { readonly kind: 'file'; readonly path: string }
  | { readonly kind: 'controller'; readonly gateway: string };

export interface BindIR {
  readonly port: number;
  readonly address: string;
  readonly listeners: readonly ListenerIR[];
}

/**
 * A listener: plain HTTP, or HTTPS terminated here with its certificates. Every listener of a
 * bind has the same protocol (the controller and the config loader refuse a mix), so a bind
 * is one plain or one TLS socket.
 */
export type ListenerIR = HttpListenerIR | HttpsListenerIR;

interface ListenerBaseIR {
  readonly name: string;
  /** null: every host (and, on HTTPS, every SNI name). */
  readonly hostname: string | null;
  /** Gateway-level policy, evaluated before routing. */
  readonly policy: PolicyIR | null;
  readonly routes: readonly RouteIR[];
}

export interface HttpListenerIR extends ListenerBaseIR {
  readonly protocol: 'HTTP';
}

export interface HttpsListenerIR extends ListenerBaseIR {
  readonly protocol: 'HTTPS';
  readonly tls: ListenerTlsIR;
}

/** TLS terminated at the proxy; the listener hostname is the SNI name its certificates serve. */
export interface ListenerTlsIR {
  readonly mode: 'Terminate';
  /** At least one; several let a listener offer, say, an ECDSA and an RSA certificate. */
  readonly certificates: readonly CertificateIR[];
  /** Client certificates asked for in the handshake and checked; absent: none asked for. */
  readonly clientValidation?: ClientValidationIR;
}

/** What a listener does with a client certificate that is absent or does not verify. */
export type ClientValidationMode = 'AllowValidOnly' | 'AllowInsecureFallback';

/**
 * Client certificate validation of an HTTPS listener (Gateway API `spec.tls.frontend` of its
 * port; `tls.clientValidation` of a standalone listener). A certificate verifies when it chains
 * to one of `caCertificates` and is within its validity period.
 */
export interface ClientValidationIR {
  /** PEM bundle of the CA certificates a client certificate must chain to. */
  readonly caCertificates: string;
  /** AllowValidOnly: no connection without a verified certificate. AllowInsecureFallback: any client, the verified ones known as such. */
  readonly mode: ClientValidationMode;
  /** Where the CA certificates came from (`ConfigMap <ns>/<name>`, `file <path>`), for config dumps and errors. */
  readonly origins: readonly string[];
}

export interface CertificateIR {
  /** Where it came from, for config dumps and errors. */
  readonly origin: CertificateOriginIR;
  /** PEM: the leaf certificate first, then its chain. */
  readonly certificate: string;
  /** PEM private key of the leaf; a Secret so that no dump, log or trace can print it. */
  readonly key: Secret;
}

export type CertificateOriginIR =
  | { readonly kind: 'Secret'; readonly namespace: string; readonly name: string }
  /** Files of the standalone config; `path` is the JSON path of the certificate entry. */
  | { readonly kind: 'config'; readonly path: string; readonly certFile: string; readonly keyFile: string };

/** A port of TLS listeners: one socket, the listener and route chosen by the ClientHello's SNI. */
export interface TlsBindIR {
  readonly port: number;
  readonly address: string;
  readonly listeners: readonly TlsListenerIR[];
}

/**
 * A TLS listener. Passthrough: the client's TLS goes to the backend untouched (the proxy reads
 * the server name of the ClientHello and never decrypts). Terminate: the proxy completes the
 * handshake with the listener's certificates and sends the plaintext stream to the backend.
 * Listeners of both modes may share a port: the SNI picks the listener first.
 */
export interface TlsListenerIR {
  readonly name: string;
  /** null: every server name. */
  readonly hostname: string | null;
  readonly tls: { readonly mode: 'Passthrough' } | { readonly mode: 'Terminate'; readonly certificates: readonly CertificateIR[] };
  /** Routes in Gateway API precedence order. */
  readonly routes: readonly TlsRouteIR[];
}

export interface TlsRouteIR {
  /** Standalone: `<listener>/<route>`; from the controller: `<namespace>/<tlsroute>`. */
  readonly name: string;
  readonly origin: { readonly kind: 'config'; readonly path: string } | { readonly kind: 'TLSRoute'; readonly namespace: string; readonly name: string };
  /** Server names as configured (`*.` wildcards allowed); empty: every name of the listener. */
  readonly hostnames: readonly string[];
  /** Share the connections by weight; none (or only weight 0): connections are closed. */
  readonly backends: readonly StreamBackendIR[];
}

/** Where a TLS route sends a connection: a fixed address, a Service's ready endpoints, or an unresolved reference (its share is closed). */
export type StreamBackendIR =
  | { readonly kind: 'static'; readonly name: string; readonly host: string; readonly port: number; readonly weight: number }
  | { readonly kind: 'service'; readonly name: string; readonly endpoints: readonly EndpointIR[]; readonly weight: number }
  | { readonly kind: 'invalid'; readonly name: string; readonly weight: number; readonly reason: string };

export interface RouteIR {
  /**
   * Identifier shown in traces and metrics. Standalone: `<listener>/<route>`; from the
   * controller: `<namespace>/<httproute>/rule/<index>`, the same on every listener the rule
   * is attached to (so its route-level counters are one set).
   */
  readonly name: string;
  /** The object the route was made from, for config dumps and traces. */
  readonly origin: RouteOriginIR;
  /** Hostnames as configured (empty: every host of the listener). */
  readonly hostnames: readonly string[];
  readonly matches: readonly RouteMatchIR[];
  readonly filters: readonly FilterIR[];
  readonly policy: PolicyIR | null;
  readonly backends: readonly BackendIR[];
  readonly timeouts: { readonly requestMs: number | null; readonly backendRequestMs: number | null };
  /** When a request is sent again (HTTPRouteRetry); absent: never, besides the unsent connect retries. */
  readonly retry?: RetryIR;
}

export type PathMatchIR =
  | { readonly type: 'Exact'; readonly value: string }
  | { readonly type: 'PathPrefix'; readonly value: string }
  | { readonly type: 'RegularExpression'; readonly value: string };

export interface ValueMatchIR {
  readonly type: 'Exact' | 'RegularExpression';
  /** Header names lower-cased; query parameter names as written. */
  readonly name: string;
  readonly value: string;
}

export interface RouteMatchIR {
  readonly path: PathMatchIR;
  readonly method: string | null;
  readonly headers: readonly ValueMatchIR[];
  readonly queryParams: readonly ValueMatchIR[];
}

export interface HeaderValueIR {
  /** Lower-cased. */
  readonly name: string;
  readonly value: string | Secret;
}

export interface HeaderModifierIR {
  readonly set: readonly HeaderValueIR[];
  readonly add: readonly HeaderValueIR[];
  readonly remove: readonly string[];
}

export type PathModifierIR =
  | { readonly type: 'ReplaceFullPath'; readonly value: string }
  | { readonly type: 'ReplacePrefixMatch'; readonly value: string };

export type FilterIR =
  | ({ readonly type: 'RequestHeaderModifier' } & HeaderModifierIR)
  | ({ readonly type: 'ResponseHeaderModifier' } & HeaderModifierIR)
  | {
      readonly type: 'RequestRedirect';
      readonly scheme: 'http' | 'https' | null;
      readonly hostname: string | null;
      readonly path: PathModifierIR | null;
      readonly port: number | null;
      readonly statusCode: 301 | 302 | 303 | 307 | 308;
    }
  | { readonly type: 'URLRewrite'; readonly hostname: string | null; readonly path: PathModifierIR | null }
  /** The Gateway API CORS filter: it takes precedence over a cors policy of the route or its Gateway. */
  | ({ readonly type: 'CORS' } & CorsIR)
  | {
      /**
       * A copy of each request (this share of them: numerator / denominator) goes to
       * `backend` as well; its answer is discarded. An `invalid` backend (an unresolved
       * reference) receives no copies.
       */
      readonly type: 'RequestMirror';
      readonly backend: BackendIR;
      readonly numerator: number;
      readonly denominator: number;
    };

/**
 * Where a route sends requests. `weight` is the share of the route's requests, as in a Gateway
 * API backendRef; a backend whose weight is 0 receives none. `priority` (absent: 0) orders the
 * backends for failover: the lowest priority shares the requests by weight, the next answers
 * when they fail.
 */
export type BackendIR = StaticBackendIR | ServiceBackendIR | ExternalBackendIR | InvalidBackendIR;

/** A fixed `host:port` (standalone config). */
export interface StaticBackendIR {
  readonly kind: 'static';
  /** `<host>:<port>`. */
  readonly name: string;
  readonly host: string;
  readonly port: number;
  readonly weight: number;
  /** Failover order, 0 first; absent: 0. */
  readonly priority?: number;
  /** What the backend is (its API format, its key); absent: an OpenAI-compatible server, passed through. */
  readonly provider?: ProviderIR;
  /** Absent: plain HTTP. */
  readonly tls?: BackendTLSIR;
  /** Absent: HTTP/1.1. */
  readonly protocol?: BackendProtocolIR;
}

/**
 * How the proxy speaks HTTP to a backend, when not HTTP/1.1: `h2c` is HTTP/2 over cleartext
 * with prior knowledge (RFC 9113 §3.3), for a Service port whose appProtocol is
 * `kubernetes.io/h2c`, a GRPCRoute's backend without TLS or a standalone backend with
 * `protocol: H2C`; never with `tls`. `h2` is HTTP/2 over TLS, negotiated by ALPN (offering `h2`
 * alone: a backend that does not pick it fails the request rather than getting HTTP/1.1), for a
 * GRPCRoute's backend with TLS or a standalone backend with `protocol: H2`; always with `tls`.
 * WebSocket upgrades need no protocol of their own: they go to any HTTP/1.1 backend.
 */
export type BackendProtocolIR = 'h2c' | 'h2';

/**
 * A Tollgate `Backend` resource: a host name (resolved through DNS by the proxy, with its own
 * cache and connection pool) or an address, outside the cluster or in it.
 */
export interface ExternalBackendIR {
  readonly kind: 'external';
  /** `<namespace>/<name>` of the Backend. */
  readonly name: string;
  readonly namespace: string;
  readonly hostname: string;
  readonly port: number;
  readonly weight: number;
  /** Failover order, 0 first; absent: 0. */
  readonly priority?: number;
  /** Absent: plain HTTP. */
  readonly tls?: BackendTLSIR;
  readonly provider?: ProviderIR;
  readonly filters?: readonly BackendFilterIR[];
  /** A GRPCRoute's: `h2` with tls, `h2c` without; absent: HTTP/1.1. */
  readonly protocol?: BackendProtocolIR;
}

/**
 * The LLM provider behind a backend (its `provider` block): the API it speaks (llm/formats/ in
 * the proxy reads `type`), where that API lives, and the key the gateway sends it after removing
 * the client's own credential headers.
 */
export interface ProviderIR {
  readonly type: ProviderType;
  /** Replaces the client's API root `/v1` (any other path is prefixed with it); '' is the root. No trailing slash. */
  readonly basePath: string;
  /** The provider key; null: requests go without one. */
  readonly apiKey: ProviderKeyIR | null;
  /** AzureOpenAI: the `api-version` query parameter sent; null: none (every other type). */
  readonly apiVersion: string | null;
}

export interface ProviderKeyIR {
  /** Where it was read (`file <path>`, `Secret <namespace>/<name>`), for config dumps and errors. */
  readonly origin: string;
  readonly value: Secret;
}

/**
 * TLS from the proxy to a backend: the certificate the backend shows must chain to
 * `caCertificates` and carry `hostname` (or, when `subjectAltNames` is not empty, one of them).
 */
export interface BackendTLSIR {
  /** PEM bundle of the trusted CAs; null: the system roots. */
  readonly caCertificates: string | null;
  /** Sent as SNI (unless an IP address) and, without subjectAltNames, checked against the certificate. */
  readonly hostname: string;
  /** Names of which the certificate must carry one; empty: `hostname` is checked. */
  readonly subjectAltNames: readonly SubjectAltNameIR[];
  /** The proxy's certificate for backends that ask for one; its key a Secret, as a listener's. */
  readonly clientCertificate: CertificateIR | null;
  readonly minVersion: 'TLSv1.2' | 'TLSv1.3';
}

export type SubjectAltNameIR = { readonly type: 'Hostname'; readonly hostname: string } | { readonly type: 'URI'; readonly uri: string };

/**
 * Filters of one backendRef: they run only for the requests sent to that backend (the response
 * modifier on the response it answers), after the route's own filters. A RequestRedirect here
 * answers the requests that fall on this backend with the redirect; a URLRewrite replaces what
 * the route's rewrote. Absent when the backendRef has none. A RequestMirror (or any other
 * filter) on a backendRef is not run: the controller makes that backendRef `invalid`.
 */
export type BackendFilterIR = Extract<FilterIR, { type: (typeof BACKEND_FILTER_TYPES)[number] }>;

/** The filter types a backendRef may carry in the IR. */
export const BACKEND_FILTER_TYPES = ['RequestHeaderModifier', 'ResponseHeaderModifier', 'URLRewrite', 'RequestRedirect'] as const;

/** A Kubernetes Service port; its ready endpoints are the snapshot's entry of its name (ProxySnapshot.endpoints). */
export interface ServiceBackendIR {
  readonly kind: 'service';
  /** `<service>.<namespace>.svc.cluster.local:<port>`. */
  readonly name: string;
  readonly namespace: string;
  readonly service: string;
  /** The Service port the backendRef names. */
  readonly port: number;
  readonly weight: number;
  /** Failover order, 0 first; absent: 0. */
  readonly priority?: number;
  readonly filters?: readonly BackendFilterIR[];
  /** From the BackendTLSPolicy that targets the Service port; absent: plain HTTP. */
  readonly tls?: BackendTLSIR;
  /** From the Service port's appProtocol (or its EndpointSlices'); absent: HTTP/1.1. */
  readonly protocol?: BackendProtocolIR;
}

export interface EndpointIR {
  /** IP address, as the EndpointSlice lists it. */
  readonly address: string;
  /** The target port of the Service port on this endpoint. */
  readonly port: number;
}

/**
 * A backendRef that could not be resolved (missing Service, reference not permitted, unknown
 * kind). It keeps its weight: the Gateway API says the share of requests that would have gone
 * to it gets an error rather than going to the other backends.
 */
export interface InvalidBackendIR {
  readonly kind: 'invalid';
  /** `<namespace>/<name>` of the reference as written, with its group and kind when not a Service. */
  readonly name: string;
  readonly weight: number;
  /** Failover order, 0 first; absent: 0. */
  readonly priority?: number;
  /** Why it could not be resolved (the route status reason, e.g. BackendNotFound). */
  readonly reason: string;
}

/**
 * What a keyed limit keeps one budget per (`by` of a rate limit entry or descriptor). Header
 * names lower-cased. Absent from an entry: one budget for every request.
 */
export type RateLimitKeyIR =
  | { readonly type: 'Consumer' }
  | { readonly type: 'ConsumerGroup' }
  | { readonly type: 'Claim'; readonly name: string }
  | { readonly type: 'Header'; readonly name: string }
  /** The subject of the client certificate the listener verified (mutual TLS). */
  | { readonly type: 'ClientCertificate' }
  | { readonly type: 'Expression'; readonly expression: string };

/** The budget of one key value of a keyed local entry (`overrides`), of the entry's kind. */
export interface RequestsOverrideIR {
  readonly key: string;
  readonly requests: number;
  readonly burst: number;
}
export interface TokensOverrideIR {
  readonly key: string;
  readonly tokens: number;
}

/**
 * `name`: what the x-ratelimit-policy header calls it (absent: a default from its place).
 * `overrides` only with `by`; every key value without one gets the entry's own amount.
 */
export type LocalRateLimitIR =
  | {
      readonly kind: 'requests';
      readonly requests: number;
      readonly burst: number;
      readonly unit: LocalRateLimitUnit;
      readonly by?: RateLimitKeyIR;
      readonly overrides?: readonly RequestsOverrideIR[];
      readonly name?: string;
    }
  | {
      readonly kind: 'tokens';
      readonly tokens: number;
      readonly unit: LocalRateLimitUnit;
      readonly by?: RateLimitKeyIR;
      readonly overrides?: readonly TokensOverrideIR[];
      readonly name?: string;
    };

export interface RateLimitDescriptorIR {
  /** Empty only when `by` is set. */
  readonly entries: readonly { readonly name: string; readonly expression: string }[];
  readonly unit: 'Requests' | 'Tokens';
  /** The key: sent as the descriptor's first entry. */
  readonly by?: RateLimitKeyIR;
  /** Sent as the descriptor's limit override: the service applies it instead of its own config's. */
  readonly limit?: { readonly requestsPerUnit: number; readonly unit: RateLimitUnit };
  /** Limits of particular key values (with `by` and `limit`), sent instead of `limit` for those values, in its unit. */
  readonly overrides?: readonly { readonly key: string; readonly requestsPerUnit: number }[];
  /** What the x-ratelimit-policy header calls it (absent: a default from its place). */
  readonly name?: string;
}

export interface GlobalRateLimitIR {
  /** `<host>:<port>` of the rate limit service. */
  readonly service: string;
  readonly domain: string;
  readonly descriptors: readonly RateLimitDescriptorIR[];
  readonly failureMode: 'FailOpen' | 'FailClosed';
  readonly timeoutMs: number;
  /**
   * Estimate: Tokens descriptors are charged each request's reservation at admission and
   * settled to its usage (exact across replicas within what a request uses beyond it); None:
   * checked at admission, charged after the response. Absent (snapshots of earlier
   * controllers): Estimate.
   */
  readonly tokenReservation?: TokenReservationIR;
}

export type TokenReservationIR = 'Estimate' | 'None';

/**
 * Policies attached at one level. Keys follow the trace's effectivePolicy names; the
 * authentication kinds (AuthPolicyIR: apiKey, basicAuth, jwt, authorization, extAuthz) are
 * defined with their configuration under auth/, cors, csrf and directResponse (TrafficKindsIR)
 * under traffic/.
 */
export interface PolicyIR extends AuthPolicyIR, TrafficKindsIR {
  /** The object the policy came from, for config dumps and traces. */
  readonly origin: PolicyOriginIR;
  readonly localRateLimit: readonly LocalRateLimitIR[] | null;
  readonly remoteRateLimit: GlobalRateLimitIR | null;
  readonly transformation: TransformationIR | null;
}

/** Where a route of the snapshot came from. */
export type RouteOriginIR =
  | { readonly kind: 'HTTPRoute' | 'GRPCRoute'; readonly namespace: string; readonly name: string; readonly rule: number }
  /** A route of the standalone config; `path` is its JSON path, e.g. `binds[0].listeners[0].routes[1]`. */
  | { readonly kind: 'config'; readonly path: string };

export interface PolicyTargetIR {
  readonly kind: 'Gateway' | 'HTTPRoute' | 'GRPCRoute';
  readonly namespace: string;
  readonly name: string;
  /** Listener (Gateway) or rule name (HTTPRoute, GRPCRoute) the policy targets; null: the whole object. */
  readonly sectionName: string | null;
}

/** Where a policy of the snapshot came from. */
export type PolicyOriginIR =
  | { readonly kind: 'GatewayPolicy'; readonly namespace: string; readonly name: string; readonly target: PolicyTargetIR }
  /** `policies` of the standalone config; `path` is its JSON path, e.g. `binds[0].listeners[0].policies`. */
  | { readonly kind: 'config'; readonly path: string };
