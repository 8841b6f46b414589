// What the schema of a transformation cannot say: header names the gateway owns, a name edited
// twice, body paths deeper than the bound or overlapping, and expressions that type-check
// within the cost budget (all of a policy's together: a request evaluates every one). An
// expression that reads nothing of the request is evaluated here once, so a constant that can
// never be written (a header value with CR or LF, bytes in a body) is refused now, naming the
// field, rather than failing every request.
import { bindRequest } from '../cel/inputs.js';
import { PolicyCost } from '../cel/budget.js';
import { compileCel, type CelProgram } from '../cel/compile.js';
import { celToJson, celToText } from '../cel/json.js';
import type { CelSurface } from '../cel/surfaces.js';
import type { EvaluationLimits } from '../limits.js';
import { HEADER_VALUE_EXPECTED, HEADER_VALUE_PATTERN } from '../schema/common.js';
import { isSensitiveHeader } from '../secret.js';
import { looksLikeSecret } from '../secret-text.js';
import { joinPath, show, type Problem } from '../validation-error.js';
import { BODY_FIELD_EDITED_ONCE, HEADER_EDITED_ONCE, type TransformationConfig } from './transformation.js';

/** Headers the gateway owns on a request: framing, the connection, the authority (URLRewrite sets a host). */
export const REQUEST_HEADERS_NOT_EDITED: ReadonlySet<string> = new Set(['host', 'content-length', 'transfer-encoding', 'connection', 'keep-alive', 'proxy-connection', 'te', 'trailer', 'upgrade', 'expect']);
/** Headers the gateway owns on a response: framing and the connection. */
export const RESPONSE_HEADERS_NOT_EDITED: ReadonlySet<string> = new Set(['content-length', 'transfer-encoding', 'connection', 'keep-alive', 'proxy-connection', 'te', 'trailer', 'upgrade']);

const HEADER_VALUE = new RegExp(HEADER_VALUE_PATTERN, 'u');

const NOT_A_FIELD_CHARACTER = /[^\t\x20-\x7e\x80-\xff]/u;

/** Why `text` cannot be a header value, or null. Never quotes the value: it may be a credential. */
export function headerValueProblem(text: string, maxLength: number): string | null {
  if (!HEADER_VALUE.test(text)) {
    const at = text.search(NOT_A_FIELD_CHARACTER);
    const code = text.codePointAt(at)!.toString(16).toUpperCase().padStart(4, '0');
    return `the value has U+${code} at index ${at}; expected ${HEADER_VALUE_EXPECTED}`;
  }
  if (text.length > maxLength) return `the value is ${text.length} characters long, more than the ${maxLength} a header value may have (cel.maxHeaderLength)`;
  return null;
}

type Config = TransformationConfig;
type HeaderEdits = NonNullable<NonNullable<Config['request']>['headers']>;

interface Expression {
  readonly source: string;
  readonly surface: CelSurface;
  readonly path: string;
  /** Shown redacted (./transformation-ir.ts): a message names the field, not the text. */
  readonly secret: boolean;
}

const EXAMPLE: Record<string, string> = {
  transformHeader: 'consumer.group',
  transformBody: '"gpt-4o-mini"',
  transformWhen: 'llm.stream',
};

const CONSTANT_REQUEST = { method: 'GET', path: '/', host: '', headers: {}, sourceAddress: '', model: null };

/** A constant expression's value, checked as what its field writes; null when fine or not constant. */
function constantProblem(e: Expression, program: CelProgram, limits: EvaluationLimits): string | null {
  if (program.reads.size) return null;
  const bound = bindRequest(CONSTANT_REQUEST, program.reads, limits.cel);
  if (!bound.ok) return null;
  const out = program.run(bound.bindings);
  if (!out.ok) return `fails whatever the request: ${out.reason}`;
  if (e.surface === 'transformHeader') {
    const text = celToText(out.value);
    return text === null ? null : headerValueProblem(text, limits.cel.maxHeaderLength);
  }
  if (e.surface === 'transformBody') {
    const json = celToJson(out.value);
    return json.ok ? null : json.reason;
  }
  return null;
}

const expression = (source: string, surface: CelSurface, path: string, credential = false): Expression => ({ source, surface, path, secret: credential || looksLikeSecret(source) });

function checkHeaders(h: HeaderEdits | undefined, path: string, notEdited: ReadonlySet<string>, expressions: Expression[], out: Problem[]): void {
  if (!h) return;
  const seen = new Map<string, string>();
  const name = (raw: string, at: string, list: string) => {
    const lower = raw.toLowerCase();
    if (notEdited.has(lower)) out.push({ path: at, message: `got ${show(raw)}: the gateway sets this header itself (framing, the connection${lower === 'host' ? ', the authority: use a URLRewrite filter\'s hostname' : ''}); a transformation cannot ${list} it` });
    const before = seen.get(lower);
    if (before !== undefined) out.push({ path: at, message: `${show(raw)} is edited at ${before} too; ${HEADER_EDITED_ONCE} (compared without case)` });
    else seen.set(lower, at);
  };
  for (const list of ['set', 'add'] as const) {
    h[list]?.forEach((e, i) => {
      const p = joinPath(joinPath(path, list), i);
      name(e.name, joinPath(p, 'name'), list);
      expressions.push(expression(e.value, 'transformHeader', joinPath(p, 'value'), isSensitiveHeader(e.name)));
      if (e.when !== undefined) expressions.push(expression(e.when, 'transformWhen', joinPath(p, 'when')));
    });
  }
  h.remove?.forEach((n, i) => name(n, joinPath(joinPath(path, 'remove'), i), 'remove'));
}

/** Paths that are the same field, or one inside the other, would make the order of the edits matter. */
function checkBody(b: NonNullable<Config['request']>['body'], path: string, expressions: Expression[], out: Problem[]): void {
  if (!b) return;
  const fields: { segments: string[]; at: string }[] = [];
  const field = (raw: string, at: string) => {
    const segments = raw.split('.');
    const other = fields.find((f) => f.segments.length <= segments.length ? f.segments.every((s, i) => segments[i] === s) : segments.every((s, i) => f.segments[i] === s));
    if (other) out.push({ path: at, message: `got ${show(raw)}: overlaps ${show(other.segments.join('.'))} at ${other.at}; ${BODY_FIELD_EDITED_ONCE}` });
    fields.push({ segments, at });
  };
  b.set?.forEach((e, i) => {
    const p = joinPath(joinPath(path, 'set'), i);
    field(e.path, joinPath(p, 'path'));
    expressions.push(expression(e.value, 'transformBody', joinPath(p, 'value')));
    if (e.when !== undefined) expressions.push(expression(e.when, 'transformWhen', joinPath(p, 'when')));
  });
  b.remove?.forEach((r, i) => field(r, joinPath(joinPath(path, 'remove'), i)));
}

/** `path` is the transformation's (`spec.traffic.transformation`, `...policies.traffic.transformation`). */
export function checkTransformation(t: Config | undefined, path: string, limits: EvaluationLimits, out: Problem[]): void {
  if (!t) return;
  const expressions: Expression[] = [];
  const req = joinPath(path, 'request');
  checkHeaders(t.request?.headers, joinPath(req, 'headers'), REQUEST_HEADERS_NOT_EDITED, expressions, out);
  checkBody(t.request?.body, joinPath(req, 'body'), expressions, out);
  checkHeaders(t.response?.headers, joinPath(joinPath(path, 'response'), 'headers'), RESPONSE_HEADERS_NOT_EDITED, expressions, out);
  const edits = [t.request?.headers, t.response?.headers].reduce((n, h) => n + (h?.set?.length ?? 0) + (h?.add?.length ?? 0) + (h?.remove?.length ?? 0), 0);
  if (!edits && !t.request?.body?.set?.length && !t.request?.body?.remove?.length) {
    out.push({ path, message: 'edits nothing; set request.headers, request.body or response.headers, or remove the transformation' });
  }
  const cost = new PolicyCost();
  for (const e of expressions) {
    const c = compileCel(e.source, e.surface, limits);
    const got = e.secret ? 'the expression (not shown: it may hold a credential)' : `got ${show(e.source)}`;
    if (!c.ok) {
      const example = /^(not a valid|does not type-check|evaluates to)/.test(c.problem) ? `; e.g. ${EXAMPLE[e.surface]}` : '';
      out.push({ path: e.path, message: `${got}: ${c.problem}${example}` });
      continue;
    }
    const constant = constantProblem(e, c.value, limits);
    if (constant) out.push({ path: e.path, message: `${got}: ${constant}` });
    cost.add(c.value.cost, e.path);
  }
  const over = cost.problem(path, limits);
  if (over) out.push(over);
}
