// What must never be printed, declared once. A Secret value serialises, inspects and
// stringifies as a marker; the header and query-parameter name lists below are the single
// redaction list that logs (pino's redact paths are built from it), traces and config dumps
// all use. Anything that may hold a credential (an authorization header set by a filter, an
// API key) is carried as a Secret from the moment it is parsed; only the code that sends it
// upstream calls reveal().
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

/**
 * Header names (lower case) whose values are credentials: the standard ones, the API-key
 * headers of LLM providers and API gateways, cloud session tokens, CSRF tokens and the access
 * tokens that authenticating proxies forward.
 */
export const SENSITIVE_HEADERS: ReadonlySet<string> = new Set([
  // HTTP authentication and sessions
  'authorization',
  'proxy-authorization',
  'x-authorization',
  'cookie',
  'set-cookie',
  // API keys (OpenAI-compatible and Anthropic x-api-key, Azure OpenAI api-key, Google)
  'x-api-key',
  'api-key',
  'apikey',
  'x-goog-api-key',
  'ocp-apim-subscription-key',
  'x-functions-key',
  // bearer-like tokens
  'x-auth-token',
  'x-access-token',
  'x-session-token',
  'x-refresh-token',
  'x-id-token',
  'x-csrf-token',
  'x-xsrf-token',
  'x-vault-token',
  'private-token',
  'x-gitlab-token',
  // cloud session credentials
  'x-amz-security-token',
  'x-goog-iam-authorization-token',
  'x-amz-server-side-encryption-customer-key',
  'x-amz-copy-source-server-side-encryption-customer-key',
  // tokens forwarded by authenticating proxies (oauth2-proxy, Azure App Service)
  'x-forwarded-access-token',
  'x-auth-request-access-token',
  'x-ms-token-aad-access-token',
  'x-ms-token-aad-id-token',
  'x-ms-token-aad-refresh-token',
]);

/**
 * Query parameter names (compared case-insensitively) whose values are credentials: API keys,
 * OAuth tokens and codes, passwords, and the signatures and credentials of pre-signed URLs
 * (AWS SigV4, Google Cloud Storage, Azure SAS).
 */
export const SENSITIVE_QUERY_PARAMS: ReadonlySet<string> = new Set([
  'api_key',
  'api-key',
  'apikey',
  'key',
  'x-api-key',
  'subscription-key',
  'token',
  'access_token',
  'id_token',
  'refresh_token',
  'session_token',
  'auth',
  'auth_token',
  'authorization',
  'jwt',
  'code',
  'client_secret',
  'client_assertion',
  'assertion',
  'secret',
  'password',
  'passwd',
  'pwd',
  'sig',
  'signature',
  'x-amz-signature',
  'x-amz-credential',
  'x-amz-security-token',
  'x-goog-signature',
  'x-goog-credential',
]);

export function isSensitiveHeader(name: string): boolean {
  return SENSITIVE_HEADERS.has(name.toLowerCase());
}

export function isSensitiveQueryParam(name: string): boolean {
  return SENSITIVE_QUERY_PARAMS.has(name.toLowerCase());
}

/** Credential names a config adds to the lists above (an apiKey read from its own header or query parameter); lower case. */
export interface ExtraCredentials {
  readonly headers: ReadonlySet<string>;
  readonly query: ReadonlySet<string>;
}

export const NO_EXTRA_CREDENTIALS: ExtraCredentials = { headers: new Set(), query: new Set() };

/** A copy of a header map with credential values replaced by the redaction marker. */
export function redactHeaders(headers: Record<string, string | string[] | undefined>, also: ExtraCredentials = NO_EXTRA_CREDENTIALS): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined) continue;
    out[name] = isSensitiveHeader(name) || also.headers.has(name.toLowerCase()) ? REDACTED : Array.isArray(value) ? value.join(', ') : value;
  }
  return out;
}

function decodedName(raw: string): string {
  try {
    return decodeURIComponent(raw.replace(/\+/g, ' '));
  } catch {
    return raw;
  }
}

/**
 * A request target (`/path?query`, or an absolute URL) with the values of credential query
 * parameters replaced by the redaction marker. Names are matched case-insensitively and after
 * percent-decoding; everything else, the path and the other parameters, is kept byte for byte
 * (nothing is re-encoded), so the result still reads like what the client sent.
 */
export function redactPathAndQuery(pathAndQuery: string, also: ExtraCredentials = NO_EXTRA_CREDENTIALS): string {
  const q = pathAndQuery.indexOf('?');
  if (q < 0) return pathAndQuery;
  const hash = pathAndQuery.indexOf('#', q);
  const end = hash < 0 ? pathAndQuery.length : hash;
  const query = pathAndQuery.slice(q + 1, end);
  let changed = false;
  const parts = query.split('&').map((part) => {
    const eq = part.indexOf('=');
    const name = eq < 0 ? '' : decodedName(part.slice(0, eq));
    if (eq < 0 || !(isSensitiveQueryParam(name) || also.query.has(name.toLowerCase()))) return part;
    changed = true;
    return `${part.slice(0, eq + 1)}${REDACTED}`;
  });
  if (!changed) return pathAndQuery;
  return `${pathAndQuery.slice(0, q + 1)}${parts.join('&')}${pathAndQuery.slice(end)}`;
}
