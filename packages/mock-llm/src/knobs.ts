import type { IncomingHttpHeaders } from 'node:http';

/** Per-request behaviour a test or benchmark asks for through `x-mock-*` request headers. */
export interface Knobs {
  /** `x-mock-prompt-tokens`: overrides `usage.prompt_tokens`. */
  promptTokens: number | undefined;
  /** `x-mock-completion-tokens`: overrides the number of words/chunks and `usage.completion_tokens`. */
  completionTokens: number | undefined;
  /** `x-mock-usage: none` leaves `usage` out of the response (and out of the stream). */
  omitUsage: boolean;
  /** `x-mock-latency-ms-per-token`: overrides the server's per-token latency. */
  latencyMsPerToken: number | undefined;
  /** `x-mock-status`: answer this error status instead of a completion. */
  status: number | undefined;
  /** `x-mock-retry-after`: the Retry-After header of an injected status (as a rate-limited provider sends it). */
  retryAfter: string | undefined;
  /** `x-mock-delay-ms`: wait this long before sending the response headers. */
  delayMs: number;
  /**
   * `x-mock-error`: destroy the socket instead of answering (reset), or after the first streamed
   * chunk (reset-mid-stream); send a body or an event that is not JSON (garbage); end the
   * response cleanly but early (truncate: half a JSON body, a stream without its end).
   */
  error: 'reset' | 'reset-mid-stream' | 'garbage' | 'truncate' | undefined;
}

/** What goes wrong in an answer on purpose; `reset` never gets as far as an answer. */
export type Fault = Exclude<Knobs['error'], 'reset'>;

export const MOCK_HEADERS = {
  promptTokens: 'x-mock-prompt-tokens',
  completionTokens: 'x-mock-completion-tokens',
  usage: 'x-mock-usage',
  latencyMsPerToken: 'x-mock-latency-ms-per-token',
  status: 'x-mock-status',
  retryAfter: 'x-mock-retry-after',
  delayMs: 'x-mock-delay-ms',
  error: 'x-mock-error',
} as const;

/** Upper bounds keep a typo (an extra zero) from tying up the process or its memory. */
export const MAX_COMPLETION_TOKENS = 100_000;
export const MAX_WAIT_MS = 600_000;

export type KnobsResult = { ok: true; knobs: Knobs } | { ok: false; header: string; message: string };

class KnobError extends Error {
  constructor(
    readonly header: string,
    message: string,
  ) {
    super(message);
  }
}

function single(headers: IncomingHttpHeaders, name: string): string | undefined {
  const value = headers[name];
  if (Array.isArray(value)) throw new KnobError(name, `Header '${name}' was sent more than once; send it once.`);
  return value;
}

function integer(headers: IncomingHttpHeaders, name: string, min: number, max: number): number | undefined {
  const raw = single(headers, name);
  if (raw === undefined) return undefined;
  const text = raw.trim();
  const value = /^\d+$/.test(text) ? Number(text) : Number.NaN;
  if (!(value >= min && value <= max)) {
    throw new KnobError(name, `Invalid value for header '${name}': '${raw}'. Expected an integer from ${min} to ${max}.`);
  }
  return value;
}

/** Longest Retry-After passed on: delay-seconds or an IMF-fixdate are far shorter. */
const MAX_RETRY_AFTER_LENGTH = 64;

/** A Retry-After value to send: delay-seconds, or an HTTP date (RFC 9110 §10.2.3); visible ASCII only. */
function retryAfter(headers: IncomingHttpHeaders, name: string): string | undefined {
  const raw = single(headers, name);
  if (raw === undefined) return undefined;
  const text = raw.trim();
  if (!text.length || text.length > MAX_RETRY_AFTER_LENGTH || !/^[\x20-\x7e]+$/.test(text)) {
    throw new KnobError(name, `Invalid value for header '${name}': '${raw}'. Expected delay-seconds or an HTTP date, at most ${MAX_RETRY_AFTER_LENGTH} characters.`);
  }
  return text;
}

function oneOf<T extends string>(headers: IncomingHttpHeaders, name: string, allowed: readonly T[]): T | undefined {
  const raw = single(headers, name);
  if (raw === undefined) return undefined;
  const text = raw.trim().toLowerCase();
  const match = allowed.find((candidate) => candidate === text);
  if (match === undefined) {
    throw new KnobError(name, `Invalid value for header '${name}': '${raw}'. Expected one of: ${allowed.join(', ')}.`);
  }
  return match;
}

export function readKnobs(headers: IncomingHttpHeaders): KnobsResult {
  try {
    return {
      ok: true,
      knobs: {
        promptTokens: integer(headers, MOCK_HEADERS.promptTokens, 0, Number.MAX_SAFE_INTEGER),
        completionTokens: integer(headers, MOCK_HEADERS.completionTokens, 0, MAX_COMPLETION_TOKENS),
        omitUsage: oneOf(headers, MOCK_HEADERS.usage, ['include', 'none']) === 'none',
        latencyMsPerToken: integer(headers, MOCK_HEADERS.latencyMsPerToken, 0, MAX_WAIT_MS),
        status: integer(headers, MOCK_HEADERS.status, 400, 599),
        retryAfter: retryAfter(headers, MOCK_HEADERS.retryAfter),
        delayMs: integer(headers, MOCK_HEADERS.delayMs, 0, MAX_WAIT_MS) ?? 0,
        error: oneOf(headers, MOCK_HEADERS.error, ['reset', 'reset-mid-stream', 'garbage', 'truncate']),
      },
    };
  } catch (error) {
    if (error instanceof KnobError) return { ok: false, header: error.header, message: error.message };
    throw error;
  }
}
