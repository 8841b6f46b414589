// One request's transformation computed: the request's inputs bound (over a bound: refused
// before anything runs), each edit's condition and value evaluated on the request as the
// checks saw it (no edit sees another's result), and each value checked as what its field can
// hold: a header value without CR, LF or other control characters and within
// cel.maxHeaderLength, a body value that has a JSON form. The first failure refuses the
// request; nothing is half applied.
import { bindRequest, celToJson, celToText, headerValueProblem, looksLikeSecret, type CelBindings, type HeaderModifierIR, type RequestInputs, type TransformResult } from '@tollgate/api';
import type { ResolvedBodyEdit } from './body-edit.js';
import type { CompiledEdit, CompiledHeaderEdits, CompiledTransformation } from './compile.js';

export interface TransformFailure {
  readonly ok: false;
  readonly result: Exclude<TransformResult, 'applied'>;
  /** The field and why, never a value (it may be a credential). */
  readonly note: string;
}

export interface Transformed {
  readonly ok: true;
  readonly requestHeaders: HeaderModifierIR | null;
  readonly responseHeaders: HeaderModifierIR | null;
  /** The body edits to make (null: none); a removal has no value. */
  readonly body: readonly ResolvedBodyEdit[] | null;
  /** Headers (request and response) whose values the trace redacts: credential-like values. */
  readonly redact: ReadonlySet<string>;
  /** Edits whose condition was false, by field. */
  readonly skipped: readonly string[];
}

class Refused extends Error {
  constructor(readonly failure: TransformFailure) {
    super(failure.note);
  }
}

const fail = (result: TransformFailure['result'], note: string): never => {
  throw new Refused({ ok: false, result, note });
};

/** The value of an edit, or undefined when its condition is false. */
function run(e: CompiledEdit, bindings: CelBindings, skipped: string[]): unknown {
  if (e.when) {
    const w = e.when.run(bindings);
    if (!w.ok || typeof w.value !== 'boolean') return fail('evaluation_error', `${e.field}.when could not be evaluated${w.ok || e.secret ? '' : `: ${w.reason}`}`);
    if (!w.value) {
      skipped.push(e.field);
      return undefined;
    }
  }
  const v = e.value.run(bindings);
  return v.ok ? v.value : fail('evaluation_error', `${e.field}.value could not be evaluated${e.secret ? '' : `: ${v.reason}`}`);
}

interface Context {
  readonly bindings: CelBindings;
  readonly maxHeaderLength: number;
  /** The trace watches: values are checked for what looks like a credential. */
  readonly observed: boolean;
  readonly skipped: string[];
  readonly redact: Set<string>;
}

function headers(h: CompiledHeaderEdits | null, c: Context): HeaderModifierIR | null {
  if (!h) return null;
  const values = (list: CompiledHeaderEdits['set']) => {
    const out: { name: string; value: string }[] = [];
    for (const e of list) {
      const v = run(e, c.bindings, c.skipped);
      if (v === undefined) continue;
      const text = celToText(v);
      if (text === null) return fail('invalid_value', `${e.field}.value gave a value that is not a string, number or bool`);
      const problem = headerValueProblem(text, c.maxHeaderLength);
      if (problem) fail('invalid_value', `${e.field}.value: ${problem}`);
      if (e.secret || (c.observed && looksLikeSecret(text))) c.redact.add(e.name);
      out.push({ name: e.name, value: text });
    }
    return out;
  };
  return { set: values(h.set), add: values(h.add), remove: h.remove };
}

function body(t: CompiledTransformation, c: Context): ResolvedBodyEdit[] | null {
  if (!t.body) return null;
  const out: ResolvedBodyEdit[] = [];
  for (const e of t.body.set) {
    const v = run(e, c.bindings, c.skipped);
    if (v === undefined) continue;
    const json = celToJson(v);
    if (!json.ok) fail('invalid_value', `${e.field}.value: ${json.reason}`);
    else out.push({ segments: e.segments, value: json.value });
  }
  for (const r of t.body.remove) out.push({ segments: r.segments });
  return out;
}

/** `observed`: a trace watches the request (values that look like credentials are then redacted in it). */
export function evaluateTransformation(t: CompiledTransformation, inputs: RequestInputs, observed: boolean): Transformed | TransformFailure {
  const bound = bindRequest(inputs, t.reads, t.limits.cel);
  if (!bound.ok) return { ok: false, result: 'input_too_large', note: `${bound.input}: ${bound.problem}` };
  const c: Context = { bindings: bound.bindings, maxHeaderLength: t.limits.cel.maxHeaderLength, observed, skipped: [], redact: new Set() };
  try {
    return { ok: true, requestHeaders: headers(t.requestHeaders, c), body: body(t, c), responseHeaders: headers(t.responseHeaders, c), redact: c.redact, skipped: c.skipped };
  } catch (err) {
    if (err instanceof Refused) return err.failure;
    throw err;
  }
}
