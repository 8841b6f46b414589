// Header handling between client and upstream: hop-by-hop headers (RFC 9110 §7.6.1, plus
// any named in Connection) are dropped in both directions, and the request gains the
// x-forwarded-* headers.
import type { IncomingHttpHeaders } from 'node:http';

const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authenticate',
  'proxy-authorization',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'http2-settings',
]);

const NONE: readonly string[] = [];

function connectionTokens(value: string | string[] | undefined): readonly string[] {
  // Nearly every response says just `keep-alive` or `close`, both hop-by-hop already: skip
  // the split (this runs once per request in each direction).
  if (!value || value === 'keep-alive' || value === 'close') return NONE;
  return (Array.isArray(value) ? value.join(',') : value)
    .split(',')
    .map((t) => t.trim().toLowerCase())
    .filter(Boolean);
}

/**
 * A copy of `headers` without hop-by-hop entries, HTTP/2 pseudo-headers, nor those in `without` (lower case: the
 * credentials authentication consumed). Left out of the copy rather than deleted from it: a
 * delete turns the object into a slow dictionary for the rest of the request.
 */
export function endToEnd(headers: IncomingHttpHeaders, without: readonly string[] = NONE): Record<string, string | string[] | undefined> {
  const named = connectionTokens(headers.connection);
  const out: Record<string, string | string[] | undefined> = {};
  for (const name in headers) {
    // HTTP/2 pseudo-headers (:method, :path, :authority, :scheme) are the request line, not headers.
    if (name.charCodeAt(0) === 58 || HOP_BY_HOP.has(name) || (named.length && named.includes(name)) || (without.length && without.includes(name))) continue;
    out[name] = headers[name];
  }
  return out;
}

export function addForwarded(
  headers: Record<string, string | string[] | undefined>,
  clientIp: string | undefined,
  proto: 'http' | 'https',
  host: string | undefined,
): void {
  const prior = headers['x-forwarded-for'];
  const priorText = Array.isArray(prior) ? prior.join(', ') : prior;
  if (clientIp) headers['x-forwarded-for'] = priorText ? `${priorText}, ${clientIp}` : clientIp;
  headers['x-forwarded-proto'] = proto;
  if (host !== undefined && headers['x-forwarded-host'] === undefined) headers['x-forwarded-host'] = host;
}
