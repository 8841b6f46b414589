// One HTTPRoute rule to the IR: matches, filters and timeouts, with the problems that make the
// route unusable as written (reported as UnsupportedValue, naming the field).
import {
  checkRouteRule,
  type BackendFilterIR,
  parseDuration,
  toFilter,
  toMatches,
  type FilterIR,
  type HTTPRouteFilter as ApiFilter,
  type HTTPRouteMatch as ApiMatch,
  type Problem,
  type RouteMatchIR,
} from '@tollgate/api';
import type { HTTPRouteFilter, HTTPRouteRule } from '../types/gateway-api.js';

/** Filter types the proxy runs. */
const SUPPORTED_FILTERS = new Set(['RequestHeaderModifier', 'ResponseHeaderModifier', 'RequestRedirect', 'URLRewrite']);

export interface RuleIR {
  readonly matches: RouteMatchIR[];
  readonly filters: FilterIR[];
  readonly timeouts: { readonly requestMs: number | null; readonly backendRequestMs: number | null };
}

function duration(text: string | undefined, path: string, out: Problem[]): number | null {
  if (text === undefined) return null;
  try {
    return parseDuration(text);
  } catch (err) {
    out.push({ path, message: (err as Error).message });
    return null;
  }
}

function unsupportedFilters(filters: readonly HTTPRouteFilter[], path: string, out: Problem[]): void {
  filters.forEach((f, i) => {
    if (!SUPPORTED_FILTERS.has(f.type))
      out.push({ path: `${path}[${i}].type`, message: `${f.type} is not supported; supported filters: ${[...SUPPORTED_FILTERS].join(', ')}` });
  });
}

/** Filter types a backendRef may carry: they run only for the requests sent to it. */
const BACKEND_FILTERS = new Set(['RequestHeaderModifier']);

function checkBackendFilters(filters: readonly HTTPRouteFilter[], path: string, out: Problem[]): void {
  filters.forEach((f, i) => {
    if (!BACKEND_FILTERS.has(f.type))
      out.push({ path: `${path}.filters[${i}].type`, message: `${f.type} is not supported on a backendRef (only ${[...BACKEND_FILTERS].join(', ')}); move it to the rule` });
  });
  const supported = filters.filter((f) => BACKEND_FILTERS.has(f.type)) as unknown as ApiFilter[];
  checkRouteRule({ filters: supported }, path, out);
}

/** A backendRef's filters in the IR; call only once the rule has no problems. */
export function backendFilters(filters: readonly HTTPRouteFilter[] | undefined): BackendFilterIR[] {
  return ((filters ?? []) as unknown as ApiFilter[]).map(toFilter).filter((f): f is BackendFilterIR => f.type === 'RequestHeaderModifier');
}

/** The rule's IR, or the problems that keep the route from being accepted. */
export function translateRule(rule: HTTPRouteRule, path: string): { ir: RuleIR; problems: Problem[] } {
  const problems: Problem[] = [];
  const filters = rule.filters ?? [];
  unsupportedFilters(filters, `${path}.filters`, problems);
  (rule.backendRefs ?? []).forEach((b, i) => checkBackendFilters(b.filters ?? [], `${path}.backendRefs[${i}]`, problems));
  const supported = filters.filter((f) => SUPPORTED_FILTERS.has(f.type)) as unknown as ApiFilter[];
  const matches = (rule.matches ?? []) as unknown as ApiMatch[];
  checkRouteRule({ matches, filters: supported }, path, problems);
  const requestMs = duration(rule.timeouts?.request, `${path}.timeouts.request`, problems);
  const backendRequestMs = duration(rule.timeouts?.backendRequest, `${path}.timeouts.backendRequest`, problems);
  if (requestMs && backendRequestMs && backendRequestMs > requestMs)
    problems.push({ path: `${path}.timeouts.backendRequest`, message: `is longer than timeouts.request (${rule.timeouts?.request}); it must not be` });
  // As the standalone config reads them: request 0s is no timeout (null); backendRequest 0s
  // waits without limit (0), while null falls back to the proxy's default.
  const timeouts = { requestMs: requestMs || null, backendRequestMs };
  if (problems.length) return { ir: { matches: [], filters: [], timeouts }, problems };
  return { ir: { matches: toMatches(matches), filters: supported.map(toFilter), timeouts }, problems };
}
