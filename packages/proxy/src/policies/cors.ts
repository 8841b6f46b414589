// cors compiled (from a cors policy or an HTTPRoute CORS filter): the answer to a preflight,
// and the Access-Control-* headers of every other answer to a cross-origin request. What the
// Gateway API and Fetch ask: a matching Origin is echoed ("*" without credentials for "*"),
// "*" is never sent with credentials (the requested method and headers are echoed instead),
// and every answer of the route varies by Origin.
import { compilePatterns, matchesPatterns, parseOrigin, type CorsIR, type OriginPatterns } from '@tollgate/api';

export type HeaderMap = Record<string, string | string[] | undefined>;

/** What the route's cors decided for a request that is not a preflight. */
export interface CorsAnswer {
  readonly cors: CompiledCors;
  /** Access-Control-Allow-Origin for its Origin; null when it has none the route allows. */
  readonly allowOrigin: string | null;
}

/** Where the route's cors came from, for logs and traces. */
export type CorsSource = 'filter' | 'route' | 'gateway';

export interface CompiledCors {
  readonly ir: CorsIR;
  readonly source: CorsSource;
  readonly origins: OriginPatterns;
  /** Access-Control-Allow-Methods / -Allow-Headers of an explicit list, -Expose-Headers of the names beside "*"; null for none. */
  readonly methods: string | null;
  readonly headers: string | null;
  readonly expose: string | null;
  readonly anyMethod: boolean;
  readonly anyHeader: boolean;
  readonly exposeAll: boolean;
  readonly maxAge: string;
}

const cache = new WeakMap<CorsIR, Map<CorsSource, CompiledCors>>();

/** Compiled once per IR object (a snapshot keeps the objects of the routes that did not change). */
export function compileCors(ir: CorsIR, source: CorsSource): CompiledCors {
  let bySource = cache.get(ir);
  const hit = bySource?.get(source);
  if (hit) return hit;
  const list = (l: readonly string[]) => (l.length && l[0] !== '*' ? l.join(', ') : null);
  const compiled: CompiledCors = {
    ir,
    source,
    origins: compilePatterns(ir.allowOrigins),
    methods: list(ir.allowMethods),
    headers: list(ir.allowHeaders),
    expose: list(ir.exposeHeaders.filter((h) => h !== '*')),
    anyMethod: ir.allowMethods[0] === '*',
    anyHeader: ir.allowHeaders[0] === '*',
    exposeAll: ir.exposeHeaders.includes('*'),
    maxAge: String(ir.maxAge),
  };
  if (!bySource) cache.set(ir, (bySource = new Map<CorsSource, CompiledCors>()));
  bySource.set(source, compiled);
  return compiled;
}

/**
 * The Access-Control-Allow-Origin to send for an Origin header value, or null when the origin
 * is not allowed (or is not an http(s) origin: `null`, an extension's, a malformed value).
 */
export function allowedOrigin(cors: CompiledCors, origin: string | string[] | undefined): string | null {
  if (typeof origin !== 'string') return null;
  const parsed = parseOrigin(origin);
  if (!parsed || !matchesPatterns(cors.origins, parsed)) return null;
  // The value passed the strict origin syntax, so it is safe to send back as it came.
  return cors.origins.any && !cors.ir.allowCredentials ? '*' : origin;
}

/** A method token (RFC 9110): what may be echoed from Access-Control-Request-Method. */
const METHOD = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,32}$/;
const HEADER = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,256}$/;
const MAX_ECHOED_HEADERS = 64;

/** The names of Access-Control-Request-Headers that are header names, lower case, at most 64. */
function requestedHeaders(value: string | string[] | undefined): string | null {
  if (typeof value !== 'string') return null;
  const names: string[] = [];
  for (const part of value.split(',')) {
    const name = part.trim().toLowerCase();
    if (name && HEADER.test(name)) names.push(name);
    if (names.length >= MAX_ECHOED_HEADERS) break;
  }
  return names.length ? names.join(', ') : null;
}

export const PREFLIGHT_VARY = 'Origin, Access-Control-Request-Method, Access-Control-Request-Headers';

/** The answer to a preflight: 204 with the allowances, or null when its origin is not allowed. */
export function preflightHeaders(cors: CompiledCors, headers: HeaderMap): Record<string, string> | null {
  const allow = allowedOrigin(cors, headers.origin);
  if (allow === null) return null;
  const credentials = cors.ir.allowCredentials;
  const out: Record<string, string> = { 'access-control-allow-origin': allow, vary: PREFLIGHT_VARY };
  if (credentials) out['access-control-allow-credentials'] = 'true';
  const method = headers['access-control-request-method'];
  if (cors.methods !== null) out['access-control-allow-methods'] = cors.methods;
  else if (cors.anyMethod) {
    if (!credentials) out['access-control-allow-methods'] = '*';
    else if (typeof method === 'string' && METHOD.test(method)) out['access-control-allow-methods'] = method;
  }
  if (cors.headers !== null) out['access-control-allow-headers'] = cors.headers;
  else if (cors.anyHeader) {
    const requested = credentials ? requestedHeaders(headers['access-control-request-headers']) : '*';
    if (requested !== null) out['access-control-allow-headers'] = requested;
  }
  if (cors.exposeAll && !credentials) out['access-control-expose-headers'] = '*';
  else if (cors.expose !== null) out['access-control-expose-headers'] = cors.expose;
  out['access-control-max-age'] = cors.maxAge;
  return out;
}

/** Response headers scripts may read without being exposed (Fetch's CORS-safelisted response headers). */
const SAFELISTED = new Set(['cache-control', 'content-language', 'content-length', 'content-type', 'expires', 'last-modified', 'pragma']);

/** Exposed for "*" with credentials: the names of the answer's own headers (never Set-Cookie, which Fetch never shows). */
function ownHeaderNames(headers: HeaderMap): string | null {
  const names = Object.keys(headers).filter((n) => headers[n] !== undefined && !SAFELISTED.has(n) && !n.startsWith('access-control-') && n !== 'set-cookie' && n !== 'set-cookie2' && n !== 'vary');
  return names.length ? names.join(', ') : null;
}

/** Adds Origin to the Vary of an answer, keeping what the backend varies by ("*" already covers it). */
export function varyByOrigin(headers: HeaderMap): void {
  const cur = headers.vary;
  if (cur === undefined) {
    headers.vary = 'Origin';
    return;
  }
  const text = Array.isArray(cur) ? cur.join(', ') : cur;
  if (text.split(',').some((t) => t.trim() === '*' || t.trim().toLowerCase() === 'origin')) return;
  headers.vary = text.trim() ? `${text}, Origin` : 'Origin';
}

/**
 * An answer (the backend's, or one the gateway makes) to a request of a route with cors that
 * is not a preflight: the backend's own Access-Control-* headers go (the route's cors decides,
 * not the backend), the answer varies by Origin, and an allowed origin gets its allowances.
 */
export function decorateAnswer(cors: CompiledCors, allowOrigin: string | null, headers: HeaderMap): void {
  for (const name of Object.keys(headers)) if (name.startsWith('access-control-')) delete headers[name];
  varyByOrigin(headers);
  if (allowOrigin === null) return;
  headers['access-control-allow-origin'] = allowOrigin;
  const credentials = cors.ir.allowCredentials;
  if (credentials) headers['access-control-allow-credentials'] = 'true';
  if (cors.exposeAll && !credentials) headers['access-control-expose-headers'] = '*';
  else if (cors.exposeAll) {
    const names = ownHeaderNames(headers);
    if (names !== null) headers['access-control-expose-headers'] = names;
  } else if (cors.expose !== null) headers['access-control-expose-headers'] = cors.expose;
}
