// One HTTPRouteMatch of one route, compiled: the conditions besides the path (method, headers,
// query parameters) as closures, and its rank among matches on the same path. Regular
// expressions run on RE2 (linear time: a request cannot make a pattern backtrack), within the
// snapshot's bounds: an input longer than regex.maxInputLength does not match, unrun.
import type { IncomingHttpHeaders } from 'node:http';
import { compileRouteRegex, type RegexLimits, type RouteMatchIR, type RouteRegex, type ValueMatchIR } from '@tollgate/api';

export interface RouteRequest {
  readonly method: string;
  /** Path without the query string, as received. */
  readonly path: string;
  /** Query string without "?", as received ("" when none). */
  readonly query: string;
  readonly headers: IncomingHttpHeaders;
}

type ValueTest = (value: string | undefined) => boolean;

/** Validation has compiled the pattern already; a snapshot that skipped it fails here, at compile time. */
function regex(source: string, limits: RegexLimits): RouteRegex {
  const r = compileRouteRegex(source, limits);
  if (!r.ok) throw new Error(`regular expression ${JSON.stringify(source)}: ${r.problem}`);
  return r.value;
}

function valueTest(m: ValueMatchIR, limits: RegexLimits): ValueTest {
  if (m.type === 'Exact') return (v) => v === m.value;
  const re = regex(m.value, limits);
  return (v) => v !== undefined && re.test(v);
}

/**
 * What one match compiles to by itself: its tests and its path split for the prefix trie.
 * It depends only on the match object, so a route kept from one snapshot to the next keeps
 * its compiled matches (no closures or regular expressions built again).
 */
export interface CompiledMatch {
  readonly match: RouteMatchIR;
  readonly test: (req: RouteRequest, query: () => URLSearchParams) => boolean;
  readonly regex: RouteRegex | null;
  /** A PathPrefix value's "/"-separated elements ("/a/b/" and "/a/b" alike; "/" none); null for Exact and RegularExpression. */
  readonly prefix: readonly string[] | null;
}

export interface Candidate<R> extends CompiledMatch {
  readonly route: R;
  /**
   * The route's place among its listener's routes (any increasing numbers: only their order
   * counts, so a route added between two others takes a number between theirs), then the
   * match's position in the route: the last tie-breakers.
   */
  readonly order: number;
  readonly rank: number;
}

export function compileMatch(match: RouteMatchIR, limits: RegexLimits): CompiledMatch {
  const headers = match.headers.map((h) => ({ name: h.name, test: valueTest(h, limits) }));
  const params = match.queryParams.map((q) => ({ name: q.name, test: valueTest(q, limits) }));
  const method = match.method;
  const test = (req: RouteRequest, query: () => URLSearchParams): boolean => {
    if (method !== null && req.method !== method) return false;
    for (const h of headers) {
      const raw = req.headers[h.name];
      if (!h.test(Array.isArray(raw) ? raw.join(', ') : raw)) return false;
    }
    if (params.length) {
      const q = query();
      for (const p of params) if (!p.test(q.get(p.name) ?? undefined)) return false;
    }
    return true;
  };
  const { type, value } = match.path;
  const pathRegex = type === 'RegularExpression' ? regex(value, limits) : null;
  return { match, test, regex: pathRegex, prefix: type === 'Exact' || type === 'RegularExpression' ? null : prefixSegments(value) };
}

/** "/a/b/" and "/a/b" are the same prefix; "/" is the root. */
export function prefixSegments(value: string): string[] {
  const trimmed = value.replace(/\/+$/, '');
  return trimmed ? trimmed.slice(1).split('/') : [];
}

export function compileCandidate<R>(route: R, m: CompiledMatch, order: number, rank: number): Candidate<R> {
  return { route, order, rank, match: m.match, test: m.test, regex: m.regex, prefix: m.prefix };
}

/** Config order: the route's place among its listener's routes, then the match's in the route. */
export function comparePlace<R>(a: Candidate<R>, b: Candidate<R>): number {
  return a.order - b.order || a.rank - b.rank;
}

/**
 * Gateway API precedence among matches of equal path rank: a method match first, then more
 * header matches, then more query parameter matches, then config order.
 */
export function compareCandidates<R>(a: Candidate<R>, b: Candidate<R>): number {
  return (
    Number(b.match.method !== null) - Number(a.match.method !== null) ||
    b.match.headers.length - a.match.headers.length ||
    b.match.queryParams.length - a.match.queryParams.length ||
    comparePlace(a, b)
  );
}
