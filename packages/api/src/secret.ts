// A value that must never be printed: serialises, inspects and stringifies as a marker.
// Anything that may hold a credential (an authorization header set by a filter, an API key)
// is carried as a Secret from the moment it is parsed, so a config dump, a trace or a log
// line cannot leak it by accident; only the code that sends it upstream calls reveal().
import { inspect } from 'node:util';

export const REDACTED = '[redacted]';

export class Secret {
  readonly #value: string;
  constructor(value: string) {
    this.#value = value;
  }
  reveal(): string {
    return this.#value;
  }
  toJSON(): string {
    return REDACTED;
  }
  toString(): string {
    return REDACTED;
  }
  [inspect.custom](): string {
    return REDACTED;
  }
}

/** Header names whose values are credentials. */
export const SENSITIVE_HEADERS: ReadonlySet<string> = new Set([
  'authorization',
  'proxy-authorization',
  'cookie',
  'set-cookie',
  'x-api-key',
  'api-key',
  'x-goog-api-key',
  'x-auth-token',
]);

export function isSensitiveHeader(name: string): boolean {
  return SENSITIVE_HEADERS.has(name.toLowerCase());
}

/** A copy of a header map with credential values replaced by the redaction marker. */
export function redactHeaders(headers: Record<string, string | string[] | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined) continue;
    out[name] = isSensitiveHeader(name) ? REDACTED : Array.isArray(value) ? value.join(', ') : value;
  }
  return out;
}
