// The request target, parsed and normalised once, the way Envoy does before routing: every
// route match, policy and trace sees the normalised path, and the backend receives it, so a
// path spelled differently (`/v1/%63hat/completions`, `/v1/x/../chat/completions`) can never
// reach a route its plain spelling would not, nor slip past a route's policy.
//
// - absolute-form targets (`GET http://host/path`) are accepted; their authority is the host;
// - percent-encodings of unreserved characters are decoded, others kept with upper-case hex;
// - dot segments are removed (RFC 3986 §5.2.4); a fragment is dropped;
// - encoded "/" and "\" (%2F, %5C) are refused by default, or kept, or decoded;
// - runs of "/" are merged when configured; a raw "\" or a malformed escape is refused.

/** config.paths: how paths are normalised. */
export interface PathSettings {
  readonly mergeSlashes: boolean;
  readonly escapedSlashes: 'Reject' | 'KeepUnchanged' | 'UnescapeAndForward';
}

export const DEFAULT_PATH_SETTINGS: PathSettings = { mergeSlashes: false, escapedSlashes: 'Reject' };

export type RequestTarget =
  | { readonly ok: true; readonly path: string; readonly query: string; /** From an absolute-form target. */ readonly authority: string | null }
  | { readonly ok: false; readonly reason: string };

const UNRESERVED = /[A-Za-z0-9\-._~]/;
const HEX = '0123456789ABCDEF';

function bad(reason: string): RequestTarget {
  return { ok: false, reason };
}

/** Decodes escapes of unreserved characters and upper-cases the rest; null when malformed. */
function normaliseEscapes(path: string, settings: PathSettings): string | { reason: string } {
  let out = '';
  for (let i = 0; i < path.length; i++) {
    const c = path[i]!;
    if (c === '\\') return { reason: 'a "\\" in the path' };
    if (c !== '%') {
      out += c;
      continue;
    }
    const h = path.slice(i + 1, i + 3).toUpperCase();
    if (h.length !== 2 || !HEX.includes(h[0]!) || !HEX.includes(h[1]!)) return { reason: `a malformed percent-encoding "${path.slice(i, i + 3)}" in the path` };
    i += 2;
    const ch = String.fromCharCode(parseInt(h, 16));
    if (h === '2F' || h === '5C') {
      if (settings.escapedSlashes === 'Reject') return { reason: `an encoded "${ch}" (%${h}) in the path; set config.paths.escapedSlashes to allow it` };
      out += settings.escapedSlashes === 'UnescapeAndForward' ? (ch === '\\' ? '/' : ch) : `%${h}`;
    } else out += UNRESERVED.test(ch) ? ch : `%${h}`;
  }
  return out;
}

/** RFC 3986 §5.2.4 remove_dot_segments, on an absolute path. */
function removeDotSegments(path: string): string {
  const segments = path.split('/');
  const out: string[] = [];
  for (let i = 1; i < segments.length; i++) {
    const s = segments[i]!;
    const last = i === segments.length - 1;
    if (s === '.' || s === '..') {
      if (s === '..' && out.length) out.pop();
      if (last) out.push('');
    } else out.push(s);
  }
  return `/${out.join('/')}`;
}

/** Characters that make a path need more than the fast path (the common path has none). */
function needsWork(path: string): boolean {
  return path.includes('%') || path.includes('/.') || path.includes('//') || path.includes('\\');
}

export function parseRequestTarget(url: string, settings: PathSettings): RequestTarget {
  let authority: string | null = null;
  let rest = url;
  if (!url.startsWith('/')) {
    const m = /^https?:\/\/([^/?#]*)/i.exec(url);
    if (!m) return bad(url === '*' ? 'the asterisk-form target "*"' : `the request target "${url.slice(0, 64)}"; expected /path or http://host/path`);
    authority = m[1]!;
    if (!authority || authority.includes('@')) return bad('an absolute-form target without a valid host');
    rest = url.slice(m[0].length);
    if (!rest.startsWith('/')) rest = `/${rest}`;
  }
  const hash = rest.indexOf('#');
  if (hash >= 0) rest = rest.slice(0, hash);
  const q = rest.indexOf('?');
  let path = q < 0 ? rest : rest.slice(0, q);
  const query = q < 0 ? '' : rest.slice(q + 1);
  if (needsWork(path)) {
    const decoded = normaliseEscapes(path, settings);
    if (typeof decoded !== 'string') return bad(decoded.reason);
    path = removeDotSegments(decoded);
    if (settings.mergeSlashes) path = path.replace(/\/{2,}/g, '/');
  }
  return { ok: true, path, query, authority };
}
