// Retries of a route (Gateway API HTTPRouteRule `retry`, experimental channel at v1.6.1): the
// config shape both front ends read (the standalone `routes[].retry`, an HTTPRoute rule's
// `retry`), its IR with the defaults applied, and its wire schema. What a retry may do and
// when is the proxy's (pipeline/attempt-plan.ts); docs/retries-failover.md says it for users.
import { Type, type Static } from '@sinclair/typebox';
import { Duration } from '../schema/common.js';
import { MAX_DURATION_MS, parseDuration } from '../duration.js';
import { Obj } from '../schema/wire-parts.js';

/** Most retries one request may make after its first attempt (a larger `attempts` is held to it). */
export const MAX_RETRY_ATTEMPTS = 10;
/** Retries when `attempts` is not given (Envoy's default: one). */
export const DEFAULT_RETRY_ATTEMPTS = 1;
/** The wait before the first retry when `backoff` is not given (Envoy's base interval). */
export const DEFAULT_RETRY_BACKOFF_MS = 25;
/** The longest wait between two retries: later waits double from `backoff` up to this many times it. */
export const MAX_BACKOFF_FACTOR = 10;
/** Status codes one retry may list (400-599, each once). */
export const MAX_RETRY_CODES = 64;

export const HTTPRouteRetry = Type.Object(
  {
    codes: Type.Optional(
      Type.Array(Type.Integer({ minimum: 400, maximum: 599, description: 'An HTTP status code, 400-599.' }), {
        maxItems: MAX_RETRY_CODES,
        uniqueItems: true,
        description: 'Backend answers retried, by status code (400-599). Connection errors and backend timeouts are retried whatever the codes. Default: none.',
      }),
    ),
    attempts: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: MAX_RETRY_ATTEMPTS,
        description: `Most retries of one request after its first attempt. Default ${DEFAULT_RETRY_ATTEMPTS}; at most ${MAX_RETRY_ATTEMPTS}.`,
      }),
    ),
    backoff: Type.Optional(
      Duration(`Least wait before a retry; later retries wait twice as long each time, up to ${MAX_BACKOFF_FACTOR} times it, with jitter. Default ${DEFAULT_RETRY_BACKOFF_MS}ms; 0s: none.`, {
        allowZero: true,
      }),
    ),
  },
  { additionalProperties: false, description: 'Gateway API HTTPRouteRetry: when a request is sent to its backend again (docs/retries-failover.md).' },
);
export type HTTPRouteRetry = Static<typeof HTTPRouteRetry>;

/** A route's retries, defaults applied. Absent from a route: no retry. */
export interface RetryIR {
  /** Status codes retried, ascending; connection errors and backend timeouts always are. */
  readonly codes: readonly number[];
  /** Retries after the first attempt, 1 to MAX_RETRY_ATTEMPTS. */
  readonly attempts: number;
  /** Least wait before the first retry, in milliseconds. */
  readonly backoffMs: number;
}

/**
 * The IR of a retry stanza whose shape was checked (the standalone schema, or the controller's
 * reading of an HTTPRoute). `attempts` beyond MAX_RETRY_ATTEMPTS is held to it: the Gateway API
 * sets no maximum, and refusing the route for it would take its traffic down.
 */
export function toRetryIR(r: { readonly codes?: readonly number[]; readonly attempts?: number; readonly backoff?: string }): RetryIR {
  return {
    codes: [...new Set(r.codes ?? [])].sort((a, b) => a - b),
    attempts: Math.min(r.attempts ?? DEFAULT_RETRY_ATTEMPTS, MAX_RETRY_ATTEMPTS),
    backoffMs: r.backoff === undefined ? DEFAULT_RETRY_BACKOFF_MS : parseDuration(r.backoff),
  };
}

export const RetryWire = Obj(
  {
    codes: Type.Array(Type.Integer({ minimum: 400, maximum: 599 }), { maxItems: MAX_RETRY_CODES }),
    attempts: Type.Integer({ minimum: 1, maximum: MAX_RETRY_ATTEMPTS }),
    backoffMs: Type.Integer({ minimum: 0, maximum: MAX_DURATION_MS }),
  },
  'When a request is sent to its backend again.',
);
