// pino's redaction paths and URL serializers, built from the one redaction list in
// @tollgate/api: a header that list names is censored wherever a log line carries a header
// map (`headers`, `req.headers`, `res.headers`, ...), and a request target logged under a
// URL-like key has its credential query parameters censored.
import { REDACTED, SENSITIVE_HEADERS, redactPathAndQuery } from '@tollgate/api';

/** pino `redact.paths`: each sensitive header in a top-level and a nested `headers` map. */
export function redactPaths(headers: Iterable<string> = SENSITIVE_HEADERS): string[] {
  const paths: string[] = [];
  for (const h of headers) {
    const key = /^[a-z_$][\w$]*$/.test(h) ? `.${h}` : `[${JSON.stringify(h)}]`;
    paths.push(`headers${key}`, `*.headers${key}`);
  }
  return paths;
}

export const REDACT_CENSOR = REDACTED;

/** Keys whose values are request targets; pino runs these serializers on top-level keys. */
export const URL_KEYS = ['url', 'uri', 'path', 'pathAndQuery', 'target'] as const;

function redactUrl(value: unknown): unknown {
  return typeof value === 'string' ? redactPathAndQuery(value) : value;
}

export const urlSerializers: Record<(typeof URL_KEYS)[number], (value: unknown) => unknown> = Object.fromEntries(URL_KEYS.map((k) => [k, redactUrl])) as Record<(typeof URL_KEYS)[number], (value: unknown) => unknown>;
