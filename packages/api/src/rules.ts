// Rules beyond what a JSON schema says: the same rules as the schemas'
// `x-kubernetes-validations` (so a file gets the errors the API server would give a
// GatewayPolicy), plus cross-field checks of routes: filter fields matching their type,
// regular expressions within their bounds (RE2), CEL expressions that type-check within
// their cost budget, timeouts that nest, names that are unique.
import { PolicyCost } from './cel/budget.js';
import { compileCel } from './cel/compile.js';
import { checkAuthPolicy } from './auth/check.js';
import { checkTransformation } from './transformation/check.js';
import { checkTrafficKinds } from './traffic/kinds.js';
import { checkExtProc } from './traffic/ext-proc-ir.js';
import { checkCors } from './traffic/cors-ir.js';
import { checkDuration } from './duration.js';
import type { EvaluationLimits, RegexLimits } from './limits.js';
import { FILTER_FIELD, FILTER_TYPES, type HTTPRouteFilter, type HTTPRouteMatch, type RouteTimeouts } from './schema/gateway-api.js';
import { compileRegex } from './regex.js';
import { HEADER_NAME_PATTERN, HEADER_VALUE_EXPECTED, HEADER_VALUE_PATTERN, NO_CONTROL_PATTERN } from './schema/common.js';
import { DESCRIPTOR_OVERRIDES_NEED, LOCAL_MONTHS_MESSAGE, OVERRIDES_NEED_BY, OVERRIDES_SAME_KIND, type GlobalDescriptor, type LocalRateLimit, type RateLimitKey, type TrafficPolicy } from './schema/traffic-policy.js';
import { checkUnique, joinPath, show, type Problem } from './validation-error.js';

export { checkUnique };

export type PolicyContext = 'standalone' | 'cluster';

export function checkTrafficPolicy(policy: TrafficPolicy | undefined, path: string, context: PolicyContext, limits: EvaluationLimits, out: Problem[]): void {
  checkAuthPolicy(policy, path, context, limits, out);
  checkTransformation(policy?.transformation, joinPath(path, 'transformation'), limits, out);
  checkTrafficKinds(policy, path, out);
  if (policy?.extProc) checkExtProc(policy.extProc, joinPath(path, 'extProc'), out);
  const rl = policy?.rateLimit;
  if (!rl) return;
  const rlPath = joinPath(path, 'rateLimit');
  // Every expression a request of this policy evaluates: descriptor entries and keys.
  const expressions: PolicyExpression[] = [];
  rl.local?.forEach((entry, i) => {
    const p = joinPath(joinPath(rlPath, 'local'), i);
    const hasReq = entry.requests !== undefined;
    const hasTok = entry.tokens !== undefined;
    if (hasReq === hasTok) {
      out.push({
        path: p,
        message: hasReq
          ? 'sets both requests and tokens; exactly one of requests or tokens must be set (use two entries to limit both)'
          : 'sets neither requests nor tokens; exactly one of requests or tokens must be set',
      });
    }
    if (entry.burst !== undefined && !hasReq) {
      out.push({ path: joinPath(p, 'burst'), message: 'burst is only allowed with requests; remove it from this tokens entry' });
    }
    if (entry.unit === 'Months') out.push({ path: joinPath(p, 'unit'), message: LOCAL_MONTHS_MESSAGE });
    if (entry.by) checkKey(entry.by, joinPath(p, 'by'), expressions, out);
    checkLocalOverrides(entry, p, out);
  });
  if (rl.local && !rl.local.length) out.push({ path: joinPath(rlPath, 'local'), message: 'is empty; remove it or add an entry' });
  const gPath = joinPath(rlPath, 'global');
  rl.global?.descriptors.forEach((d, di) => {
    const p = joinPath(joinPath(gPath, 'descriptors'), di);
    if (!d.entries && !d.by) out.push({ path: p, message: 'has neither entries nor by; set entries, by (a key), or both' });
    if (d.by) checkKey(d.by, joinPath(p, 'by'), expressions, out);
    checkDescriptorOverrides(d, p, out);
    d.entries?.forEach((e, ei) => expressions.push({ source: e.expression, path: joinPath(joinPath(joinPath(p, 'entries'), ei), 'expression') }));
  });
  // The budget is the policy's; named where its expressions are (only descriptors: there).
  const localKeys = expressions.some((e) => !e.path.startsWith(gPath));
  checkExpressions(expressions, localKeys ? rlPath : joinPath(gPath, 'descriptors'), limits, out);
  const svc = rl.global?.service;
  if (svc) {
    const p = joinPath(gPath, 'service');
    if ((svc.host === undefined) === (svc.backendRef === undefined)) {
      out.push({ path: p, message: 'exactly one of host or backendRef must be set' });
    } else if (context === 'standalone' && svc.backendRef) {
      out.push({ path: joinPath(p, 'backendRef'), message: 'a standalone proxy cannot resolve Services; use host: <host>:<port>' });
    }
  }
}

/** The rules of a local entry's overrides (the schema's, for files): with `by`, of the entry's kind, each key once. */
function checkLocalOverrides(entry: LocalRateLimit, path: string, out: Problem[]): void {
  const o = entry.overrides;
  if (!o) return;
  const p = joinPath(path, 'overrides');
  if (!entry.by) out.push({ path: p, message: `${OVERRIDES_NEED_BY}; add by (e.g. by: { type: Consumer }) or remove overrides` });
  const kind = entry.requests !== undefined ? 'requests' : 'tokens';
  o.forEach((x, i) => {
    const at = joinPath(p, i);
    if ((x.requests !== undefined) === (x.tokens !== undefined)) {
      out.push({ path: at, message: `sets ${x.requests !== undefined ? 'both requests and tokens' : 'neither requests nor tokens'}; set ${kind}, as the entry does` });
    } else if ((x.requests !== undefined ? 'requests' : 'tokens') !== kind) {
      out.push({ path: joinPath(at, kind === 'requests' ? 'tokens' : 'requests'), message: `${OVERRIDES_SAME_KIND}; this entry sets ${kind}` });
    }
    if (x.burst !== undefined && x.requests === undefined) out.push({ path: joinPath(at, 'burst'), message: 'burst is only allowed with requests; remove it from this override' });
  });
  checkUnique(o, (x) => x.key, (i) => joinPath(joinPath(p, i), 'key'), 'key', out);
}

/** The rules of a global descriptor's overrides: with `by` and `limit`, each key once. */
function checkDescriptorOverrides(d: GlobalDescriptor, path: string, out: Problem[]): void {
  const o = d.overrides;
  if (!o) return;
  const p = joinPath(path, 'overrides');
  if (!d.by || !d.limit) out.push({ path: p, message: `${DESCRIPTOR_OVERRIDES_NEED}; missing ${!d.by && !d.limit ? 'by and limit' : !d.by ? 'by' : 'limit'}` });
  checkUnique(o, (x) => x.key, (i) => joinPath(joinPath(p, i), 'key'), 'key', out);
}

interface PolicyExpression {
  readonly source: string;
  readonly path: string;
}

const HEADER_NAME = new RegExp(HEADER_NAME_PATTERN, 'u');

/** The fields each key type needs (the schema's rules, for files), and its expression to check with the others. */
function checkKey(by: RateLimitKey, path: string, expressions: PolicyExpression[], out: Problem[]): void {
  const named = by.type === 'Claim' || by.type === 'Header';
  if (named && by.name === undefined) out.push({ path: joinPath(path, 'name'), message: `required with type ${by.type}: the ${by.type === 'Claim' ? 'claim' : 'header'} whose value is the key` });
  if (!named && by.name !== undefined) out.push({ path: joinPath(path, 'name'), message: `not allowed with type ${by.type}; only Claim and Header keys name a claim or header` });
  if (by.type === 'Header' && by.name !== undefined && !HEADER_NAME.test(by.name)) {
    out.push({ path: joinPath(path, 'name'), message: `got ${show(by.name)}; expected an HTTP header name (letters, digits and !#$%&'*+-.^_\`|~)` });
  }
  if (by.type === 'Expression') {
    if (by.expression === undefined) out.push({ path: joinPath(path, 'expression'), message: 'required with type Expression, e.g. consumer.labels["tier"]' });
    else expressions.push({ source: by.expression, path: joinPath(path, 'expression') });
  } else if (by.expression !== undefined) {
    out.push({ path: joinPath(path, 'expression'), message: `not allowed with type ${by.type}; use type: Expression` });
  }
}

/**
 * Each expression within the budget, and all of them together: a request evaluates every
 * descriptor entry and key of the policy.
 */
function checkExpressions(expressions: readonly PolicyExpression[], path: string, limits: EvaluationLimits, out: Problem[]): void {
  const cost = new PolicyCost();
  for (const e of expressions) {
    const c = compileCel(e.source, 'descriptor', limits);
    if (!c.ok) {
      // An example helps with what is not CEL, or not CEL over these variables.
      const example = /^(not a valid|does not type-check)/.test(c.problem) ? '; e.g. request.headers["x-user-id"]' : '';
      out.push({ path: e.path, message: `got ${show(e.source)}: ${c.problem}${example}` });
      continue;
    }
    cost.add(c.value.cost, e.path);
  }
  const over = cost.problem(path, limits);
  if (over) out.push(over);
}

/** The RegularExpression values of some matches (paths, headers, query parameters), with their paths. */
function regexes(matches: readonly RegexMatch[] | undefined, path: string): { source: string; path: string }[] {
  const out: { source: string; path: string }[] = [];
  matches?.forEach((m, mi) => {
    const mp = joinPath(joinPath(path, 'matches'), mi);
    if (m.path?.type === 'RegularExpression') out.push({ source: m.path.value ?? '/', path: joinPath(joinPath(mp, 'path'), 'value') });
    for (const list of ['headers', 'queryParams'] as const) {
      m[list]?.forEach((v, i) => v.type === 'RegularExpression' && out.push({ source: v.value, path: joinPath(joinPath(joinPath(mp, list), i), 'value') }));
    }
  });
  return out;
}

/** What checkRegexes() reads of a match: an HTTPRouteMatch, or its IR. */
interface RegexMatch {
  readonly path?: { readonly type?: string; readonly value?: string };
  readonly headers?: readonly { readonly type?: string; readonly value: string }[];
  readonly queryParams?: readonly { readonly type?: string; readonly value: string }[];
}

/**
 * A route's regular expressions within the bounds: how many it holds (over the count none is
 * compiled), then each pattern. Config load, controller translation and snapshot decoding
 * all check routes here.
 */
export function checkRegexes(matches: readonly RegexMatch[] | undefined, path: string, limits: RegexLimits, out: Problem[]): void {
  const found = regexes(matches, path);
  if (found.length > limits.maxPerRoute) {
    out.push({
      path: joinPath(path, 'matches'),
      message: `${found.length} RegularExpression matches (paths, headers and query parameters together), more than the ${limits.maxPerRoute} allowed per route (regex.maxPerRoute); use fewer, or Exact and PathPrefix matches`,
    });
    return;
  }
  for (const r of found) {
    const c = compileRegex(r.source, limits);
    if (!c.ok) out.push({ path: r.path, message: `got ${show(r.source)}: ${c.problem}` });
  }
}

// The schema's value patterns, applied again here for rules that did not come through the
// schema (HTTPRoutes read by the controller): a CR or LF must never reach a header.
const HEADER_VALUE = new RegExp(HEADER_VALUE_PATTERN, 'u');
const NO_CONTROL = new RegExp(NO_CONTROL_PATTERN, 'u');

function checkText(value: string | undefined, re: RegExp, expected: string, path: string, out: Problem[]): void {
  if (value !== undefined && !re.test(value)) out.push({ path, message: `got ${show(value)}; expected ${expected}` });
}

function checkHeaderModifier(mod: { set?: { value: string }[]; add?: { value: string }[] } | undefined, path: string, out: Problem[]): void {
  for (const list of ['set', 'add'] as const) {
    mod?.[list]?.forEach((h, i) => checkText(h.value, HEADER_VALUE, HEADER_VALUE_EXPECTED, joinPath(joinPath(joinPath(path, list), i), 'value'), out));
  }
}

function checkMatch(match: HTTPRouteMatch, path: string, out: Problem[]): void {
  const pm = match.path;
  checkText(pm?.value, NO_CONTROL, 'a path without control characters', joinPath(joinPath(path, 'path'), 'value'), out);
  match.headers?.forEach((h, i) => checkText(h.value, HEADER_VALUE, HEADER_VALUE_EXPECTED, joinPath(joinPath(joinPath(path, 'headers'), i), 'value'), out));
  // A RegularExpression path is checked with the route's other patterns (checkRegexes).
  if (pm && (pm.type ?? 'PathPrefix') !== 'RegularExpression') {
    const value = pm.value ?? '/';
    const vp = joinPath(joinPath(path, 'path'), 'value');
    if (!value.startsWith('/')) {
      out.push({ path: vp, message: `got ${show(value)}; expected an absolute path starting with "/"` });
    } else {
      for (const bad of ['//', '/./', '/../', '%2f', '%2F', '#']) {
        if (value.includes(bad)) out.push({ path: vp, message: `got ${show(value)}; must not contain "${bad}"` });
      }
      if (value.endsWith('/..') || value.endsWith('/.')) out.push({ path: vp, message: `got ${show(value)}; must not end with "/." or "/.."` });
    }
  }
  for (const list of ['headers', 'queryParams'] as const) {
    const names = new Set<string>();
    match[list]?.forEach((m, i) => {
      const p = joinPath(joinPath(path, list), i);
      const key = list === 'headers' ? m.name.toLowerCase() : m.name;
      if (names.has(key)) out.push({ path: joinPath(p, 'name'), message: `duplicate ${show(m.name)}; each name may appear once per match` });
      names.add(key);
    });
  }
}

function checkPathModifier(
  mod: { type: string; replaceFullPath?: string; replacePrefixMatch?: string } | undefined,
  path: string,
  matches: readonly HTTPRouteMatch[] | undefined,
  out: Problem[],
): void {
  if (!mod) return;
  const p = joinPath(path, 'path');
  const wanted = mod.type === 'ReplaceFullPath' ? 'replaceFullPath' : 'replacePrefixMatch';
  const other = mod.type === 'ReplaceFullPath' ? 'replacePrefixMatch' : 'replaceFullPath';
  if (mod[wanted] === undefined) out.push({ path: joinPath(p, wanted), message: `required when type is ${mod.type}` });
  if (mod[other] !== undefined) out.push({ path: joinPath(p, other), message: `not allowed when type is ${mod.type}; use ${wanted}` });
  const value = mod[wanted];
  checkText(value, NO_CONTROL, 'a path without control characters', joinPath(p, wanted), out);
  if (value !== undefined && !value.startsWith('/')) {
    out.push({ path: joinPath(p, wanted), message: `got ${show(value)}; expected an absolute path starting with "/"` });
  }
  if (mod.type === 'ReplacePrefixMatch') {
    const all = matches?.length ? matches : [{}];
    if (all.some((m) => (m.path?.type ?? 'PathPrefix') !== 'PathPrefix')) {
      out.push({ path: p, message: 'ReplacePrefixMatch needs every match of the route to be a PathPrefix path match' });
    }
  }
}

export function checkRouteRule(
  rule: { matches?: HTTPRouteMatch[]; filters?: HTTPRouteFilter[]; backends?: unknown[]; timeouts?: RouteTimeouts; answersItself?: boolean },
  path: string,
  limits: EvaluationLimits,
  out: Problem[],
): void {
  rule.matches?.forEach((m, i) => checkMatch(m, joinPath(joinPath(path, 'matches'), i), out));
  checkRegexes(rule.matches, path, limits.regex, out);
  checkTimeouts(rule.timeouts, joinPath(path, 'timeouts'), out);
  const seen = new Set<string>();
  rule.filters?.forEach((f, i) => {
    const p = joinPath(joinPath(path, 'filters'), i);
    if (seen.has(f.type)) out.push({ path: joinPath(p, 'type'), message: `${f.type} appears more than once; merge them into one filter` });
    seen.add(f.type);
    for (const t of FILTER_TYPES) {
      const field = FILTER_FIELD[t];
      if (t === f.type && f[field] === undefined) out.push({ path: joinPath(p, field), message: `required when type is ${t}` });
      if (t !== f.type && f[field] !== undefined) out.push({ path: joinPath(p, field), message: `not allowed when type is ${f.type}; only ${FILTER_FIELD[f.type]} is` });
    }
    checkPathModifier(f.requestRedirect?.path ?? f.urlRewrite?.path, p, rule.matches, out);
    checkHeaderModifier(f.requestHeaderModifier, joinPath(p, 'requestHeaderModifier'), out);
    checkHeaderModifier(f.responseHeaderModifier, joinPath(p, 'responseHeaderModifier'), out);
    if (f.cors) checkCors(f.cors, joinPath(p, 'cors'), 'filter', out);
  });
  if (seen.has('RequestRedirect') && seen.has('URLRewrite')) {
    out.push({ path: joinPath(path, 'filters'), message: 'RequestRedirect and URLRewrite cannot be used together' });
  }
  if (rule.backends && !rule.backends.length && !seen.has('RequestRedirect') && !rule.answersItself) {
    out.push({ path: joinPath(path, 'backends'), message: 'is empty; add a backend { host: <host>:<port> }, a RequestRedirect filter or a directResponse policy' });
  }
}

/** Gateway API: the backend request fits in the whole request (unless that one is 0s, no timeout). */
function checkTimeouts(t: RouteTimeouts | undefined, path: string, out: Problem[]): void {
  if (t?.request === undefined || t.backendRequest === undefined) return;
  const request = checkDuration(t.request, { allowZero: true });
  const backend = checkDuration(t.backendRequest, { allowZero: true });
  if (request.ok && backend.ok && request.value !== 0 && backend.value > request.value) {
    out.push({
      path: joinPath(path, 'backendRequest'),
      message: `got ${show(t.backendRequest)}; must not be longer than request (${t.request}), which includes it`,
    });
  }
}
