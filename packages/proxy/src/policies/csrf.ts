// csrf compiled: whether a request that can change state comes from a page of the origin it was
// sent to (or of an allowed one). Safe methods pass; so do requests with neither Origin nor
// Referer (API clients send neither; every browser sends Origin with a cross-origin request
// that is not GET or HEAD). docs/cors-csrf-direct-response.md has the reasoning.
import { compilePatterns, matchesPatterns, parseOrigin, refererOrigin, requestOrigin, sameOrigin, serializeOrigin, type CsrfIR, type Origin, type OriginPatterns } from '@tollgate/api';

export interface CompiledCsrf {
  readonly ir: CsrfIR;
  readonly origins: OriginPatterns;
}

/** Why a request was refused: the reason label of tollgate_csrf_refusals_total. */
export type CsrfReason = 'cross_origin' | 'null_origin' | 'malformed_origin' | 'cross_referer' | 'malformed_referer';

export interface CsrfRefusal {
  readonly reason: CsrfReason;
  /** What the client sent and what was expected, for the answer and the trace. */
  readonly detail: string;
}

/** The methods RFC 9110 defines as safe: they do not ask the server to change anything. */
const SAFE = new Set(['GET', 'HEAD', 'OPTIONS', 'TRACE']);

const cache = new WeakMap<CsrfIR, CompiledCsrf>();

export function compileCsrf(ir: CsrfIR): CompiledCsrf {
  let c = cache.get(ir);
  if (!c) cache.set(ir, (c = { ir, origins: compilePatterns(ir.additionalOrigins) }));
  return c;
}

/** A client's header value in a message: quoted, at most 128 characters. */
function quote(value: string): string {
  return JSON.stringify(value.length > 128 ? `${value.slice(0, 128)}...` : value);
}

export interface CsrfRequest {
  readonly method: string;
  readonly origin: string | string[] | undefined;
  readonly referer: string | string[] | undefined;
  readonly scheme: 'http' | 'https';
  /** The Host the request was sent to (with its port when not the default). */
  readonly authority: string;
}

function allowed(csrf: CompiledCsrf, own: Origin | null, o: Origin): boolean {
  return (own !== null && sameOrigin(o, own)) || matchesPatterns(csrf.origins, o);
}

/** What the refusal says was expected (made only for a refusal). */
function expected(own: Origin | null): string {
  return `${own ? serializeOrigin(own) : 'this request\'s origin'} or one of csrf.additionalOrigins`;
}

/** null: the request may pass. Allocates nothing beyond the parsed origins on the way through. */
export function checkCsrf(csrf: CompiledCsrf, req: CsrfRequest): CsrfRefusal | null {
  if (SAFE.has(req.method)) return null;
  if (req.origin !== undefined) {
    // Several Origin headers arrive joined: not one origin.
    const value = Array.isArray(req.origin) ? req.origin.join(', ') : req.origin;
    const own = requestOrigin(req.scheme, req.authority);
    if (value === 'null') return { reason: 'null_origin', detail: `Origin is "null" (a sandboxed or privacy-restricted page, or a redirect from another site); expected ${expected(own)}` };
    const o = parseOrigin(value);
    if (!o) return { reason: 'malformed_origin', detail: `Origin ${quote(value)} is not an http(s) origin; expected ${expected(own)}` };
    return allowed(csrf, own, o) ? null : { reason: 'cross_origin', detail: `Origin ${quote(value)} is not ${expected(own)}` };
  }
  if (req.referer === undefined) return null;
  const value = Array.isArray(req.referer) ? req.referer.join(', ') : req.referer;
  const own = requestOrigin(req.scheme, req.authority);
  const o = refererOrigin(value);
  if (!o) return { reason: 'malformed_referer', detail: `Referer ${quote(value)} is not an http(s) URL and there is no Origin; expected a page of ${expected(own)}` };
  return allowed(csrf, own, o) ? null : { reason: 'cross_referer', detail: `Referer ${quote(value)} is not a page of ${expected(own)} (and there is no Origin)` };
}
