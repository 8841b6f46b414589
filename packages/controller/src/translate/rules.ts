// One HTTPRoute rule to the IR: matches, filters and timeouts, with the problems that make the
// route unusable as written (reported as UnsupportedValue, naming the field).
import {
  BACKEND_FILTER_TYPES,
  checkCorsFilter,
  checkRouteRule,
  type BackendFilterIR,
  type EvaluationLimits,
  parseDuration,
  toFilter,
  toMatches,
  type FilterIR,
  type HTTPRouteFilter as ApiFilter,
  type HTTPRouteMatch as ApiMatch,
  type Problem,
  type RouteMatchIR,
  type RetryIR,
  checkDuration,
  toRetryIR,
} from '@tollgate/api';
import type { HTTPRequestMirrorFilter, HTTPRouteFilter, HTTPRouteRule } from '../types/gateway-api.js';

/** Filter types the proxy runs (RequestMirror is resolved apart: it names a backend). */
const SUPPORTED_FILTERS = new Set(['RequestHeaderModifier', 'ResponseHeaderModifier', 'RequestRedirect', 'URLRewrite', 'RequestMirror', 'CORS']);
const CHECKED_FILTERS = new Set(['RequestHeaderModifier', 'ResponseHeaderModifier', 'RequestRedirect', 'URLRewrite', 'CORS']);

export interface RuleIR {
  readonly matches: RouteMatchIR[];
  readonly filters: FilterIR[];
  readonly timeouts: { readonly requestMs: number | null; readonly backendRequestMs: number | null };
  /** The rule's retry (experimental channel); absent: none. */
  readonly retry?: RetryIR;
}

/**
 * The CRD's validations of `retry`, again (an object the API server did not check must not
 * reach the proxy). `attempts` above the proxy's maximum is not a problem: toRetryIR holds it to
 * MAX_RETRY_ATTEMPTS (the Gateway API sets no maximum; refusing would take the route down).
 */
function checkRetry(retry: HTTPRouteRule['retry'], path: string, out: Problem[]): void {
  if (!retry) return;
  (retry.codes ?? []).forEach((c, i) => {
    if (!Number.isInteger(c) || c < 400 || c > 599) out.push({ path: `${path}.codes[${i}]`, message: `got ${c}; expected an HTTP status code from 400 to 599` });
  });
  if (retry.attempts !== undefined && (!Number.isInteger(retry.attempts) || retry.attempts < 1)) out.push({ path: `${path}.attempts`, message: `got ${retry.attempts}; expected an integer of at least 1` });
  if (retry.backoff !== undefined) {
    const d = checkDuration(retry.backoff, { allowZero: true });
    if (!d.ok) out.push({ path: `${path}.backoff`, message: d.problem });
  }
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
const BACKEND_FILTERS: ReadonlySet<string> = new Set(BACKEND_FILTER_TYPES);

/**
 * What keeps a backendRef's filters from running: a type the proxy cannot run on a backendRef
 * (RequestMirror, CORS, ExtensionRef, a type unknown here) or a value it cannot apply. The
 * caller makes that one backendRef unusable (its share of requests gets 500, as the Gateway API
 * asks for a filter that cannot be applied) rather than refusing the whole route: the route's
 * other backends and rules keep serving.
 */
export function backendFilterProblems(filters: readonly HTTPRouteFilter[] | undefined, matches: HTTPRouteRule['matches'], path: string, limits: EvaluationLimits): Problem[] {
  const out: Problem[] = [];
  (filters ?? []).forEach((f, i) => {
    if (!BACKEND_FILTERS.has(f.type))
      out.push({
        path: `${path}.filters[${i}].type`,
        message: `${f.type} is not supported on a backendRef (supported there: ${BACKEND_FILTER_TYPES.join(', ')}); move it to the rule's filters`,
      });
  });
  const supported = (filters ?? []).filter((f) => BACKEND_FILTERS.has(f.type)) as unknown as ApiFilter[];
  // The matches are the rule's: a ReplacePrefixMatch needs them to be path prefixes.
  checkRouteRule({ matches: (matches ?? []) as unknown as ApiMatch[], filters: supported }, path, limits, out);
  // Problems of the matches themselves are the rule's, reported there.
  return out.filter((p) => !p.path.startsWith(`${path}.matches`));
}

/** A backendRef's filters in the IR; call only once backendFilterProblems found none. */
export function backendFilters(filters: readonly HTTPRouteFilter[] | undefined): BackendFilterIR[] {
  return ((filters ?? []) as unknown as ApiFilter[]).map(toFilter).filter((f): f is BackendFilterIR => BACKEND_FILTERS.has(f.type));
}

/** A mirror's share of the requests: percent, or fraction (denominator 100 by default), or all. */
export function mirrorShare(m: HTTPRequestMirrorFilter): { numerator: number; denominator: number } {
  if (m.percent !== undefined) return { numerator: m.percent, denominator: 100 };
  if (m.fraction) return { numerator: m.fraction.numerator, denominator: m.fraction.denominator ?? 100 };
  return { numerator: 1, denominator: 1 };
}

// The CRD's validations, again: an object the API server did not check must not reach the proxy.
function checkMirror(m: HTTPRequestMirrorFilter | undefined, path: string, out: Problem[]): void {
  if (!m) {
    out.push({ path, message: 'required when type is RequestMirror' });
    return;
  }
  if (m.percent !== undefined && m.fraction) out.push({ path, message: 'sets both percent and fraction; set one of them' });
  if (m.percent !== undefined && !(Number.isInteger(m.percent) && m.percent >= 0 && m.percent <= 100))
    out.push({ path: `${path}.percent`, message: `got ${m.percent}; expected an integer from 0 to 100` });
  if (m.fraction) {
    const { numerator, denominator = 100 } = m.fraction;
    if (!Number.isInteger(denominator) || denominator < 1) out.push({ path: `${path}.fraction.denominator`, message: `got ${denominator}; expected a positive integer` });
    else if (!Number.isInteger(numerator) || numerator < 0 || numerator > denominator)
      out.push({ path: `${path}.fraction.numerator`, message: `got ${numerator}; expected an integer from 0 to the denominator (${denominator})` });
  }
}

/** The rule's IR, or the problems that keep the route from being accepted. */
export function translateRule(rule: HTTPRouteRule, path: string, limits: EvaluationLimits): { ir: RuleIR; problems: Problem[] } {
  const problems: Problem[] = [];
  const filters = rule.filters ?? [];
  unsupportedFilters(filters, `${path}.filters`, problems);
  // A CORS filter's settings are checked whole here (the decoder checked only their shape).
  const corsValid = (f: HTTPRouteFilter, i: number) => f.type !== 'CORS' || checkCorsFilter(f.cors, `${path}.filters[${i}].cors`, problems);
  const supported = filters.filter((f, i) => CHECKED_FILTERS.has(f.type) && corsValid(f, i)) as unknown as ApiFilter[];
  const matches = (rule.matches ?? []) as unknown as ApiMatch[];
  checkRouteRule({ matches, filters: supported }, path, limits, problems);
  filters.forEach((f, i) => {
    if (f.type === 'RequestMirror') checkMirror(f.requestMirror, `${path}.filters[${i}].requestMirror`, problems);
  });
  checkRetry(rule.retry, `${path}.retry`, problems);
  if (rule.sessionPersistence !== undefined)
    problems.push({ path: `${path}.sessionPersistence`, message: 'session persistence is not supported; remove it (requests are balanced by least request within each backend)' });
  const requestMs = duration(rule.timeouts?.request, `${path}.timeouts.request`, problems);
  const backendRequestMs = duration(rule.timeouts?.backendRequest, `${path}.timeouts.backendRequest`, problems);
  if (requestMs && backendRequestMs && backendRequestMs > requestMs)
    problems.push({ path: `${path}.timeouts.backendRequest`, message: `is longer than timeouts.request (${rule.timeouts?.request}); it must not be` });
  // As the standalone config reads them: request 0s is no timeout (null); backendRequest 0s
  // waits without limit (0), while null falls back to the proxy's default.
  const timeouts = { requestMs: requestMs || null, backendRequestMs };
  if (problems.length) return { ir: { matches: [], filters: [], timeouts }, problems };
  // Mirrors are added by the caller, which resolves their backends.
  return { ir: { matches: toMatches(matches), filters: supported.map(toFilter), timeouts, ...(rule.retry ? { retry: toRetryIR(rule.retry) } : {}) }, problems };
}
