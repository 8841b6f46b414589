// Origins (RFC 6454 serialized: `<scheme>://<host>[:<port>]`) as browsers send them in the
// Origin header, and the origin patterns of cors and csrf (the Gateway API's CORSOrigin:
// exact, `*.` wildcard on the left of the host, or `*` alone). Both the policy checks and the
// proxy's matchers read origins here, so a pattern means the same thing everywhere.
import { Type } from '@sinclair/typebox';

/** The Gateway API's CORSOrigin pattern (v1.6.1), as the CRD and the standalone schema check it. */
export const ORIGIN_PATTERN = '(^\\*$)|(^(http(s)?):\\/\\/(((\\*\\.)?([a-zA-Z0-9\\-]+\\.)*[a-zA-Z0-9-]+|\\*)(:([0-9]{1,5}))?)$)';
export const MAX_ORIGIN_PATTERN_LENGTH = 253;
/** An Origin (or Referer) header longer than this is not read: no browser sends one. */
export const MAX_ORIGIN_HEADER_LENGTH = 2048;

export const ORIGIN_PATTERN_EXPECTED = 'an origin: http(s)://<host>[:<port>], the host optionally starting with "*." (any number of labels), or "*" alone';

/** One entry of allowOrigins / additionalOrigins. */
export function OriginPattern(description: string) {
  return Type.String({ minLength: 1, maxLength: MAX_ORIGIN_PATTERN_LENGTH, pattern: ORIGIN_PATTERN, description, expected: ORIGIN_PATTERN_EXPECTED });
}

export interface Origin {
  readonly scheme: 'http' | 'https';
  /** Lower case; an IPv6 address keeps its brackets. */
  readonly host: string;
  readonly port: number;
}

const DEFAULT_PORT = { http: 80, https: 443 } as const;

// A serialized origin's host as browsers write it: an ASCII (punycode) name or an IPv4 address,
// or an IPv6 address in brackets. Nothing else: no userinfo, path, query, fragment or space.
const ORIGIN = /^(https?):\/\/([a-z0-9._-]+|\[[0-9a-f:.]+\])(?::([1-9][0-9]{0,4}))?$/i;

function port(text: string | undefined, scheme: 'http' | 'https'): number | null {
  if (text === undefined) return DEFAULT_PORT[scheme];
  const n = Number(text);
  return n >= 1 && n <= 65535 ? n : null;
}

/**
 * The origin of an Origin header value; null for `null`, another scheme (an extension, a
 * file), or anything that is not exactly a serialized origin (a path, userinfo, a bad port).
 */
export function parseOrigin(value: string): Origin | null {
  if (value.length > MAX_ORIGIN_HEADER_LENGTH) return null;
  const m = ORIGIN.exec(value);
  if (!m) return null;
  const scheme = m[1]!.toLowerCase() as 'http' | 'https';
  const p = port(m[3], scheme);
  return p === null ? null : { scheme, host: m[2]!.toLowerCase(), port: p };
}

/** The origin of a Referer header value (an absolute URL); null when it has none of http(s). */
export function refererOrigin(value: string): Origin | null {
  if (value.length > MAX_ORIGIN_HEADER_LENGTH || !URL.canParse(value)) return null;
  const u = new URL(value);
  if (u.protocol !== 'http:' && u.protocol !== 'https:') return null;
  // URL has removed the userinfo and the default port, and lower-cased the host.
  return parseOrigin(u.origin);
}

export function serializeOrigin(o: Origin): string {
  return o.port === DEFAULT_PORT[o.scheme] ? `${o.scheme}://${o.host}` : `${o.scheme}://${o.host}:${o.port}`;
}

export function sameOrigin(a: Origin, b: Origin): boolean {
  return a.scheme === b.scheme && a.host === b.host && a.port === b.port;
}

/**
 * The origin a request was addressed to: the listener's scheme and the Host header (or the
 * authority of an absolute-form target); null when the host is not a host[:port].
 */
export function requestOrigin(scheme: 'http' | 'https', authority: string): Origin | null {
  return parseOrigin(`${scheme}://${authority}`);
}

/** A compiled allowOrigins / additionalOrigins list. */
export interface OriginPatterns {
  /** `*` is in the list: every http(s) origin matches. */
  readonly any: boolean;
  /** Exact origins, serialized. */
  readonly exact: ReadonlySet<string>;
  /** `<scheme>://*.<suffix>[:port]` and `<scheme>://*[:port]` (suffix ''). */
  readonly wildcards: readonly { readonly scheme: string; readonly suffix: string; readonly port: number }[];
}

/** A pattern's parts; null when it is not one (the schema's pattern has refused it already). */
export function parsePattern(pattern: string): { scheme: 'http' | 'https'; host: string; port: number } | null {
  const m = /^(https?):\/\/(\*|(?:\*\.)?[a-z0-9-]+(?:\.[a-z0-9-]+)*)(?::([0-9]{1,5}))?$/i.exec(pattern);
  if (!m) return null;
  const scheme = m[1]!.toLowerCase() as 'http' | 'https';
  const p = m[3] === undefined ? DEFAULT_PORT[scheme] : Number(m[3]);
  if (!(p >= 1 && p <= 65535)) return null;
  return { scheme, host: m[2]!.toLowerCase(), port: p };
}

export function compilePatterns(patterns: readonly string[]): OriginPatterns {
  const exact = new Set<string>();
  const wildcards: { scheme: string; suffix: string; port: number }[] = [];
  let any = false;
  for (const text of patterns) {
    if (text === '*') {
      any = true;
      continue;
    }
    const p = parsePattern(text);
    if (!p) continue;
    if (p.host === '*') wildcards.push({ scheme: p.scheme, suffix: '', port: p.port });
    else if (p.host.startsWith('*.')) wildcards.push({ scheme: p.scheme, suffix: p.host.slice(1), port: p.port });
    else exact.add(serializeOrigin({ scheme: p.scheme, host: p.host, port: p.port }));
  }
  return { any, exact, wildcards };
}

/** Whether `origin` is one of the patterns. `*.example.com` needs at least one label before `.example.com`. */
export function matchesPatterns(patterns: OriginPatterns, origin: Origin): boolean {
  if (patterns.any) return true;
  if (patterns.exact.has(serializeOrigin(origin))) return true;
  for (const w of patterns.wildcards) {
    if (w.scheme !== origin.scheme || w.port !== origin.port) continue;
    if (w.suffix === '' || (origin.host.length > w.suffix.length && origin.host.endsWith(w.suffix))) return true;
  }
  return false;
}
