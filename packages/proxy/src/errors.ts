// The proxy's error catalog: one stable code per failure, its HTTP status and the short body
// a client sees. Codes are part of the interface (logs and docs quote them); messages say
// what happened in a sentence, and for configuration errors what to change.

export interface ErrorSpec {
  readonly code: string;
  readonly status: number;
  readonly body: string;
}

function spec<C extends string>(code: C, status: number, body: string): ErrorSpec & { code: C } {
  return { code, status, body };
}

export const ERRORS = {
  noRoute: spec('TG_NO_ROUTE', 404, 'no route matches this request'),
  upstreamRefused: spec('TG_UPSTREAM_REFUSED', 503, 'upstream connect error: connection refused'),
  upstreamConnectTimeout: spec('TG_UPSTREAM_CONNECT_TIMEOUT', 503, 'upstream connect error: connection timed out'),
  upstreamUnresolved: spec('TG_UPSTREAM_UNRESOLVED', 503, 'upstream connect error: host not found'),
  upstreamReset: spec('TG_UPSTREAM_RESET', 502, 'upstream reset the connection before responding'),
  upstreamBadResponse: spec('TG_UPSTREAM_BAD_RESPONSE', 502, 'upstream sent an invalid response'),
  upstreamTimeout: spec('TG_UPSTREAM_TIMEOUT', 504, 'upstream request timeout: no response within the backend timeout'),
  requestTimeout: spec('TG_REQUEST_TIMEOUT', 504, 'request timeout: the route timeout elapsed'),
  noBackend: spec('TG_NO_BACKEND', 503, 'no backend available for this route'),
  rateLimited: spec('TG_RATE_LIMITED', 429, 'rate limit exceeded'),
  rateLimitServiceUnavailable: spec('TG_RATELIMIT_SERVICE_UNAVAILABLE', 500, 'rate limit service unavailable'),
  requestBodyTooDeep: spec('TG_REQUEST_BODY_TOO_DEEP', 400, 'request body JSON is nested too deeply'),
  requestBodyUnreadable: spec('TG_REQUEST_BODY_UNREADABLE', 400, 'request body could not be read'),
  requestBodyTimeout: spec('TG_REQUEST_BODY_TIMEOUT', 408, 'request body timeout: no data within the body idle timeout'),
  badRequest: spec('TG_BAD_REQUEST', 400, 'malformed request'),
  badRequestTarget: spec('TG_BAD_REQUEST_TARGET', 400, 'the request target is not a path the gateway serves'),
  internal: spec('TG_INTERNAL', 500, 'internal error'),
  tooManyTraceSessions: spec('TG_TRACE_SESSIONS_FULL', 429, 'too many trace sessions are waiting'),
} as const;

export type ErrorKey = keyof typeof ERRORS;

/** A request that fails on its own: answered with its catalog entry, the process unaffected. */
export class RequestFailure extends Error {
  constructor(
    readonly spec: ErrorSpec,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'RequestFailure';
  }
}

/** Errors of the process itself (start-up, reload), as opposed to a request's. */
export class TollgateError extends Error {
  constructor(
    readonly code: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'TollgateError';
  }
}
