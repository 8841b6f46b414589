// The proxy's error catalog: one stable code per failure, the HTTP status and the short body a
// client sees for failures that are answers to a request, and for each a hint to fix it.
// Codes are part of the interface (logs, traces and docs/errors.md quote them; a test keeps
// that page equal to this table). Failures of the process itself (binding a port, reading the
// config, the command line) have no status: they are thrown as TollgateError.
import { CatalogError, KIT_ERRORS, defineErrors } from '@tollgate/kit';

export const PROXY_ERRORS = defineErrors({
  // Answers to a request.
  noRoute: {
    code: 'TG_NO_ROUTE',
    status: 404,
    message: 'no route matches this request',
    hint: 'compare the request with the routes in GET /config_dump (hostnames, path, method, headers); gwctl trace shows the routes evaluated',
  },
  noBackend: {
    code: 'TG_NO_BACKEND',
    status: 503,
    message: 'no backend available for this route',
    hint: 'the route\'s Service has no ready endpoint: look at its pods (GET /config_dump shows the endpoints the proxy knows)',
  },
  invalidBackend: {
    code: 'TG_INVALID_BACKEND',
    status: 500,
    message: 'the route has no valid backend for this request',
    hint: 'give the route a backend with a weight above 0; in a cluster, the HTTPRoute\'s ResolvedRefs condition names the backendRef that does not resolve or carries a filter that cannot run there',
  },
  websocketLimit: {
    code: 'TG_WEBSOCKET_LIMIT',
    status: 503,
    message: 'too many WebSocket connections open on this proxy',
    hint: 'the proxy holds config.maxWebSocketConnections upgraded connections (tollgate_websocket_connections); retry later, raise the setting, or add proxy replicas',
  },
  websocketDraining: {
    code: 'TG_WEBSOCKET_DRAINING',
    status: 503,
    message: 'the proxy is shutting down and takes no new WebSocket connections',
    hint: 'reconnect: the next connection reaches another proxy replica',
  },
  upgradeToH2c: {
    code: 'TG_WEBSOCKET_H2C_BACKEND',
    status: 502,
    message: 'WebSocket upgrades do not go to backends spoken to over HTTP/2 (h2c or h2)',
    hint: 'send WebSockets to an HTTPRoute backend on a port without appProtocol kubernetes.io/h2c (or a standalone backend without protocol H2C or H2): kubernetes.io/ws, or none',
  },
  upstreamRefused: {
    code: 'TG_UPSTREAM_REFUSED',
    status: 503,
    message: 'upstream connect error: connection refused',
    hint: 'start the backend, or fix backends[].host; GET /config_dump shows each endpoint\'s health (a refused request was already tried on up to config.connectAttempts endpoints of its backend)',
  },
  upstreamConnectTimeout: {
    code: 'TG_UPSTREAM_CONNECT_TIMEOUT',
    status: 503,
    message: 'upstream connect error: connection timed out',
    hint: 'check that the backend address is reachable from the proxy; config.connectTimeout sets the limit',
  },
  upstreamUnresolved: {
    code: 'TG_UPSTREAM_UNRESOLVED',
    status: 503,
    message: 'upstream connect error: host not found',
    hint: 'fix the host name of backends[].host, or the proxy\'s DNS',
  },
  upstreamReset: {
    code: 'TG_UPSTREAM_RESET',
    status: 502,
    message: 'upstream reset the connection before responding',
    hint: 'look at the backend\'s logs: it closed the connection without an answer',
  },
  upstreamBadResponse: {
    code: 'TG_UPSTREAM_BAD_RESPONSE',
    status: 502,
    message: 'upstream sent an invalid response',
    hint: 'the backend\'s answer is not valid HTTP/1.1 (bad status line, headers or length); look at the backend',
  },
  upstreamCertificate: {
    code: 'TG_UPSTREAM_CERTIFICATE',
    status: 502,
    message: 'upstream certificate did not verify',
    hint: 'the backend\'s certificate is expired, not yet valid, self-signed, signed by a CA the backend\'s tls does not trust, or without the name checked: the trace\'s backendCallResult.error says which; fix the certificate, or tls.caFile, tls.hostname or tls.subjectAltNames (in a cluster, the BackendTLSPolicy)',
  },
  upstreamTls: {
    code: 'TG_UPSTREAM_TLS',
    status: 502,
    message: 'upstream TLS handshake failed',
    hint: 'the backend refused the handshake (no common TLS version or cipher, a client certificate it wants or refuses) or does not speak TLS on that port: the trace\'s backendCallResult.error says which; check tls.minVersion and tls.clientCertificate, and that the port serves TLS',
  },
  upstreamNoH2: {
    code: 'TG_UPSTREAM_NO_H2',
    status: 502,
    message: 'upstream did not negotiate HTTP/2 over TLS',
    hint: 'the backend is spoken to over HTTP/2 over TLS (a GRPCRoute backend under a BackendTLSPolicy, or protocol H2) and its TLS handshake did not select ALPN h2: serve HTTP/2 with ALPN on that port (gRPC servers do); for an HTTP/1.1 backend, route it with an HTTPRoute or leave protocol out',
  },
  upstreamTimeout: {
    code: 'TG_UPSTREAM_TIMEOUT',
    status: 504,
    message: 'upstream request timeout: no response within the backend timeout',
    hint: 'raise the route\'s timeouts.backendRequest (or config.backendRequestTimeout), or speed up the backend',
  },
  requestTimeout: {
    code: 'TG_REQUEST_TIMEOUT',
    status: 504,
    message: 'request timeout: the route timeout elapsed',
    hint: 'raise the route\'s timeouts.request',
  },
  unauthenticated: {
    code: 'TG_UNAUTHENTICATED',
    status: 401,
    message: 'authentication required',
    hint: 'send a valid credential of the route\'s authentication policy (apiKey, basicAuth or jwt); the body says what was missing or wrong, gwctl trace shows which kind refused',
  },
  forbidden: {
    code: 'TG_FORBIDDEN',
    status: 403,
    message: 'access denied',
    hint: 'the route\'s authorization rules or authorization service refused the request; gwctl trace shows which rule or service decided',
  },
  csrfRefused: {
    code: 'TG_CSRF_REFUSED',
    status: 403,
    message: 'cross-site request refused',
    hint: 'the route\'s csrf policy refuses requests that can change state (POST, PUT, PATCH, DELETE, ...) from pages of another origin: the body names the Origin (or Referer) received and what was expected. Send the request from a page of the API\'s own origin, add the page\'s origin to csrf.additionalOrigins, or (an API client) send neither Origin nor Referer',
  },
  corsOriginRefused: {
    code: 'TG_CORS_ORIGIN_REFUSED',
    status: 403,
    message: 'CORS preflight refused: this origin may not call the route',
    hint: 'the route answers preflights itself (its cors policy or CORS filter) and the page\'s Origin is not in allowOrigins: add the origin (exactly as the browser sends it: scheme, host and a port other than 80/443), or a *.<domain> pattern',
  },
  authServiceFailed: {
    code: 'TG_AUTHZ_SERVICE_FAILED',
    status: 403,
    message: 'the authorization service could not decide',
    hint: 'the extAuthz service did not answer in time or answered garbage (failureMode FailClosed); look at the service, or its timeout',
  },
  extProcFailed: {
    code: 'TG_EXT_PROC_FAILED',
    status: 502,
    message: 'the external processor failed',
    hint: 'the route\'s extProc processor could not be reached, did not answer within messageTimeout, closed its stream, or answered something that is not a valid ProcessingResponse or is over a bound (failureMode FailClosed): the detail names which. Look at the processor, raise messageTimeout, or set failureMode FailOpen to go on unprocessed',
  },
  extProcBodyTooLarge: {
    code: 'TG_EXT_PROC_BODY_TOO_LARGE',
    status: 413,
    message: 'request body too large for the external processor',
    hint: 'the route\'s extProc sends the request body whole (requestBodyMode BUFFERED) up to maxBufferedBytes and refuses a longer one: send a smaller body, raise maxBufferedBytes, or use STREAMED',
  },
  authBusy: {
    code: 'TG_AUTH_BUSY',
    status: 503,
    message: 'too many password verifications in progress; retry shortly',
    hint: 'basicAuth verifies passwords it has not seen recently on config.basicAuth.workers threads with config.basicAuth.maxQueue waiting; a stream of wrong passwords fills them. Retry after Retry-After; credentials verified before are answered from the cache and never get this. Raise the settings, or lower the cost of the htpasswd hashes',
  },
  authBodyTooLarge: {
    code: 'TG_AUTHZ_BODY_TOO_LARGE',
    status: 413,
    message: 'request body too large for the authorization service',
    hint: 'the route\'s extAuthz policy sends the request body to its service up to withBody.maxBytes and refuses a longer one: send a smaller body, raise withBody.maxBytes, or set withBody.allowPartial to send the first maxBytes',
  },
  authRulesBodyTooLarge: {
    code: 'TG_AUTH_BODY_TOO_LARGE',
    status: 413,
    message: 'request body too large for the authorization rules of this route',
    hint: 'the route\'s authorization rules read the model from the request body, and the gateway reads at most config.maxRequestBodyBytes of it (a body it cannot read would escape the rules): send a smaller body, or raise config.maxRequestBodyBytes',
  },
  jwksUnavailable: {
    code: 'TG_JWKS_UNAVAILABLE',
    status: 503,
    message: 'the keys to verify the token could not be fetched; retry shortly',
    hint: 'the jwt provider\'s remote JWKS has not been fetched since the proxy started (no answer within its timeout, an error status, or not a key set); the auth log names the JWKS and why, tollgate_jwks_fetches_total counts the failures',
  },
  oidcLoginRequired: {
    code: 'TG_OIDC_LOGIN_REQUIRED',
    status: 401,
    message: 'login required',
    hint: 'the route logs people in with OpenID Connect: open it in a browser (a request with Accept: text/html is sent to the login page), or send the session cookie a login set; the body says whether the cookie was missing, expired, tampered with or over its bounds',
  },
  oidcCallbackFailed: {
    code: 'TG_OIDC_CALLBACK_FAILED',
    status: 400,
    message: 'the login could not be completed',
    hint: 'the callback had no login cookie or another state (an old tab, a replayed or forged callback), the provider refused the code (used twice, expired) or gave an ID token that does not verify (signature, issuer, audience, nonce); start the login again from the route; the body says which',
  },
  oidcProviderUnavailable: {
    code: 'TG_OIDC_PROVIDER_UNAVAILABLE',
    status: 503,
    message: 'the OpenID provider could not be reached; retry shortly',
    hint: 'the provider did not answer within oidc.provider.timeout or could not be connected to; the auth log names the call, and the proxy asks again at most every 10s',
  },
  oidcProviderError: {
    code: 'TG_OIDC_PROVIDER_ERROR',
    status: 502,
    message: 'the OpenID provider answered something unusable',
    hint: 'its discovery document (issuer, endpoints on another origin, no S256 PKCE) or its token answer (no id_token, not JSON, over 64 KiB) is not what OpenID Connect says; the body says which',
  },
  rateLimited: {
    code: 'TG_RATE_LIMITED',
    status: 429,
    message: 'rate limit exceeded',
    hint: 'wait for the time in x-ratelimit-reset, or raise the policy\'s limit',
  },
  rateLimitServiceUnavailable: {
    code: 'TG_RATELIMIT_SERVICE_UNAVAILABLE',
    status: 500,
    message: 'rate limit service unavailable',
    hint: 'start the rate limit service named in the policy, or set its failureMode to FailOpen',
  },
  expressionInputTooLarge: {
    code: 'TG_EXPRESSION_INPUT_TOO_LARGE',
    status: 431,
    message: 'request too large for the expressions of this route',
    hint: 'a rate limit descriptor, an authorization rule or a transformation here reads a request input (headers, path, host, model, the consumer\'s fields) that is over the bound its cost was estimated for: send fewer or shorter headers or a shorter path, or raise config.cel.maxHeaders, maxHeaderLength or maxPathLength (the controller\'s --cel-* flags)',
  },
  formatUnsupported: {
    code: 'TG_FORMAT_UNSUPPORTED',
    status: 400,
    message: 'request cannot be translated for this backend',
    hint: 'the route sends OpenAI Chat Completions requests to an Anthropic backend (provider.type Anthropic); the error names the field without an Anthropic counterpart (n > 1, logprobs, response_format, ...): leave it out, or route the request to an OpenAI backend. docs/providers.md#formats lists what is translated',
  },
  formatBadResponse: {
    code: 'TG_FORMAT_BAD_RESPONSE',
    status: 502,
    message: 'backend answer is not valid in its provider\'s format',
    hint: 'the Anthropic backend sent a body or stream that is not Anthropic\'s Messages API (not JSON, truncated, compressed, an event past config.maxSseLineBytes); a stream ends with an error chunk naming this code. Look at the backend; the tokens seen are still charged',
  },
  requestBodyTooDeep: {
    code: 'TG_REQUEST_BODY_TOO_DEEP',
    status: 400,
    message: 'request body JSON is nested too deeply',
    hint: 'a request body read by the gateway (metered routes, global descriptors) may nest objects and arrays at most 128 levels',
  },
  requestBodyTooLarge: {
    code: 'TG_REQUEST_BODY_TOO_LARGE',
    status: 413,
    message: 'request body too large for a route that counts LLM tokens',
    hint: 'send a smaller body, or raise config.maxRequestBodyBytes (a body the gateway cannot read would escape the token budget)',
  },
  transformFailed: {
    code: 'TG_TRANSFORM_FAILED',
    status: 500,
    message: 'the transformation of this route failed',
    hint: 'an expression of the route\'s transformation could not be evaluated for this request (a map key the request does not have: test it with "k" in m first) or gave a value its field cannot hold (CR, LF or other control characters in a header value, bytes or NaN in a body); the message names the field, tollgate_transformations_total counts it by result, and gwctl trace shows it',
  },
  transformBodyNotJson: {
    code: 'TG_TRANSFORM_BODY_NOT_JSON',
    status: 400,
    message: 'request body is not a JSON object, and this route edits it',
    hint: 'the route\'s transformation sets or removes fields of the request body: send a JSON object, or send no body',
  },
  transformBodyTooLarge: {
    code: 'TG_TRANSFORM_BODY_TOO_LARGE',
    status: 413,
    message: 'request body too large for the transformation of this route',
    hint: 'the route\'s transformation edits or reads the request body, which the gateway reads whole up to config.maxRequestBodyBytes (a body it could not read would escape the edit, a forced model for one): send a smaller body, or raise config.maxRequestBodyBytes',
  },
  requestBodyUnreadable: {
    code: 'TG_REQUEST_BODY_UNREADABLE',
    status: 400,
    message: 'request body could not be read',
    hint: 'the client closed or broke the connection while sending its body',
  },
  requestBodyTimeout: {
    code: 'TG_REQUEST_BODY_TIMEOUT',
    status: 408,
    message: 'request body timeout: no data within the body idle timeout',
    hint: 'the client stopped sending its body; config.requestBodyIdleTimeout sets the limit',
  },
  requestBodyDeadline: {
    code: 'TG_REQUEST_BODY_DEADLINE',
    status: 408,
    message: 'request body timeout: the whole body did not arrive within the request body deadline',
    hint: 'the client sent its body too slowly; config.requestBodyTimeout sets the limit',
  },
  bodyBudgetFull: {
    code: 'TG_BODY_BUDGET_FULL',
    status: 503,
    message: 'the proxy holds as many request-body bytes as it may; retry shortly',
    hint: 'requests in flight hold config.maxBufferedRequestBytes of bodies in memory; retry after Retry-After, or raise config.maxBufferedRequestBytes together with the memory limit',
  },
  misdirected: {
    code: 'TG_MISDIRECTED_REQUEST',
    status: 421,
    message: 'misdirected request: the Host is served by another listener than the TLS server name',
    hint: 'the connection was opened for another host (SNI) of this port; open a new connection whose SNI names the host (HTTP clients do this when they get 421)',
  },
  clientValidationChanged: {
    code: 'TG_CLIENT_CERTIFICATE_NOT_CHECKED',
    status: 421,
    message: 'misdirected request: this connection\'s handshake did not check the client certificate this listener requires',
    hint: 'the connection was opened for another listener of this port, or before the listener\'s client validation changed; open a new connection (HTTP clients do this when they get 421), presenting a certificate the listener\'s CAs signed',
  },
  badRequest: {
    code: 'TG_BAD_REQUEST',
    status: 400,
    message: 'malformed request',
    hint: 'the request is not valid HTTP/1.1; the body after the message says what is wrong',
  },
  badRequestTarget: {
    code: 'TG_BAD_REQUEST_TARGET',
    status: 400,
    message: 'the request target is not a path the gateway serves',
    hint: 'send an origin-form (/path) or absolute-form (http://host/path) target without encoded "/" or "\\" (config.paths.escapedSlashes allows them) and with valid %-escapes',
  },
  tooManyTraceSessions: {
    code: 'TG_TRACE_SESSIONS_FULL',
    status: 429,
    message: 'too many trace sessions are waiting',
    hint: 'close a waiting trace (GET /debug/tasks lists them), or raise config.maxTraceSessions',
  },
  backendsFilter: {
    code: 'TG_ADMIN_BACKENDS_FILTER',
    status: 400,
    message: '{key} must be given once, non-empty and at most {max} characters, e.g. ?{key}={example}; leave it out to list every backend',
    hint: 'GET /backends takes ?name=<backend name> (as /config_dump lists it) and ?namespace=<namespace>, each at most once',
  },
  budgetsQuery: {
    code: 'TG_ADMIN_BUDGETS_QUERY',
    status: 400,
    message: '?{key}= {problem}, e.g. ?{key}={example}; leave it out for {fallback}',
    hint: 'GET /budgets takes ?limit=<1 to 1000>, ?key=<key value as listed>, ?scope=<route or listener>, ?by=<consumer, consumer_group, claim.<name>, header.<name> or key>, ?source=<local or global>, each at most once',
  },
  internal: {
    code: 'TG_INTERNAL',
    status: 500,
    message: 'internal error',
    hint: 'a bug in the gateway: the error log line of the request has the stack; please report it',
  },
  // Recorded in traces and logs; never sent (the client is gone).
  clientGone: {
    code: 'TG_CLIENT_GONE',
    message: 'the client closed the connection before the response was complete',
    hint: 'nothing to fix on the proxy: the client gave up (a timeout or a cancelled request on its side)',
  },
  // Failures of the process.
  bindInUse: {
    code: 'TG_BIND_IN_USE',
    message: '{what} {address} is already in use',
    hint: 'stop the other process on that port, or change binds[].port (config.metricsAddr, config.readinessAddr for those servers); at start-up the process exits, a reload is refused and the previous config keeps serving',
  },
  bindDenied: {
    code: 'TG_BIND_DENIED',
    message: 'bind {address} (listener {listener}): not allowed to listen on port {port}',
    hint: 'use a port above 1023, or run with the privilege to bind low ports; at start-up the process exits, a reload is refused and the previous config keeps serving',
  },
  bindFailed: {
    code: 'TG_BIND_FAILED',
    message: 'bind {address} (listener {listener}): cannot listen on {host}: {reason}',
    hint: 'check binds[].address: it must be an address of this machine; at start-up the process exits, a reload is refused and the previous config keeps serving',
  },
  tlsClientCa: {
    code: 'TG_TLS_CLIENT_CA',
    message: 'listener {listener}: the client CA certificates cannot be used: {reason}',
    hint: 'give tls.clientValidation a PEM bundle of CA certificates (in a cluster: the ca.crt of the ConfigMaps or Secrets spec.tls.frontend names); the snapshot is refused and the previous one keeps serving',
  },
  tlsCertificate: {
    code: 'TG_TLS_CERTIFICATE',
    message: 'listener {listener}: the certificate cannot be used: {reason}',
    hint: 'give the listener a PEM certificate chain and the unencrypted PEM key that belongs to it; the snapshot is refused and the previous one keeps serving',
  },
  moduleUnavailable: {
    code: 'TG_MODULE_UNAVAILABLE',
    message: '{feature} needs the package {package}, which cannot be loaded: {reason}',
    hint: 'the package is a dependency of @tollgate/proxy, loaded when a config first uses the feature: reinstall the proxy (pnpm install, or the release image); the config is refused at load (a reload keeps the previous one serving)',
  },
  configRead: {
    code: 'TG_CONFIG_READ',
    message: 'cannot read config file {path}: {reason}',
    hint: 'check the --file path and its permissions',
  },
  usage: {
    code: 'TG_USAGE',
    message: '{problem}',
    hint: 'run tollgate --help for the flags',
  },
  shutdownFailed: {
    code: 'TG_SHUTDOWN_FAILED',
    message: 'shutdown failed: {reason}',
    hint: 'the process exits with status 1; the log line before it names what did not close',
  },
});

/** What a client sees for a failed request: its status and body. */
export interface ErrorSpec {
  readonly code: string;
  readonly status: number;
  readonly body: string;
}

/** The catalog as the request path uses it: `ERRORS.noRoute` and so on (entries with a status are answers). */
export const ERRORS = PROXY_ERRORS;

/** The client went away before the request could be answered (counted as 499, logged at debug). */
export class ClientGone extends Error {
  readonly code = PROXY_ERRORS.clientGone.code;
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ClientGone';
  }
}

/** A request that fails on its own: answered with its catalog entry, the process unaffected. */
export class RequestFailure extends Error {
  /** Headers for the answer (e.g. connection: close when the body was not read). */
  readonly headers: Record<string, string> | undefined;
  constructor(
    readonly spec: ErrorSpec,
    message: string,
    options?: { cause?: unknown; headers?: Record<string, string> },
  ) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'RequestFailure';
    this.headers = options?.headers;
  }
}

type ProxyCode = (typeof PROXY_ERRORS)[keyof typeof PROXY_ERRORS]['code'];
type KitCode = (typeof KIT_ERRORS)[keyof typeof KIT_ERRORS]['code'];
/** Codes a TollgateError may carry: the proxy's and the shared pieces' (admin bind). */
export type ProcessErrorCode = ProxyCode | KitCode;

const HINTS = new Map<string, string>([...Object.values(PROXY_ERRORS), ...Object.values(KIT_ERRORS)].map((e) => [e.code, e.hint]));

/** Errors of the process itself (start-up, reload), as opposed to a request's. */
export class TollgateError extends CatalogError<ProcessErrorCode> {
  constructor(code: ProcessErrorCode, message: string, options?: { cause?: unknown }) {
    super(code, message, { hint: HINTS.get(code) ?? '', cause: options?.cause });
    this.name = 'TollgateError';
  }
}
