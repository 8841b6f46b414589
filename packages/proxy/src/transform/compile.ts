// A transformation compiled for the pipeline: each expression through compileCel (the one
// cost-bounded evaluator) on its surface under the snapshot's bounds, all of them within
// cel.maxCost together, and what a request must provide (the inputs the expressions read;
// whether the body must be read first). The route-level transformation replaces the
// Gateway-level one (docs/transformation.md, "Where it applies").
import { compileCel, expressionText, readsOf, type CelProgram, type CelSurface, type EvaluationLimits, type HeaderEditsIR, type InputName, type PolicyIR, type TransformationIR, type TransformExpressionIR } from '@tollgate/api';

/** An expression that does not compile: validation refuses it first; a snapshot that skipped validation fails to apply here. */
export class TransformationConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TransformationConfigError';
  }
}

export interface CompiledEdit {
  /** Where it is in the transformation (`request.body.set[1]`): what a failure names. */
  readonly field: string;
  readonly value: CelProgram;
  readonly when: CelProgram | null;
  /** Its value may be a credential (a Secret in the IR): the trace redacts it, a failure does not quote it. */
  readonly secret: boolean;
}

export interface CompiledHeaderEdit extends CompiledEdit {
  readonly name: string;
}

export interface CompiledHeaderEdits {
  readonly set: readonly CompiledHeaderEdit[];
  readonly add: readonly CompiledHeaderEdit[];
  readonly remove: readonly string[];
}

export interface CompiledBodyEdit extends CompiledEdit {
  readonly path: string;
  readonly segments: readonly string[];
}

export interface CompiledTransformation {
  readonly requestHeaders: CompiledHeaderEdits | null;
  readonly body: { readonly set: readonly CompiledBodyEdit[]; readonly remove: readonly { readonly path: string; readonly segments: readonly string[] }[] } | null;
  readonly responseHeaders: CompiledHeaderEdits | null;
  /** The request inputs the expressions read: bounded before any is evaluated. */
  readonly reads: ReadonlySet<InputName>;
  /** The body is read before the transformation: it edits the body, or an expression reads llm.*. */
  readonly needsBody: boolean;
  readonly limits: EvaluationLimits;
}

/** A route's transformation and where it is attached. */
export interface RouteTransformation {
  readonly source: 'gateway' | 'route';
  readonly compiled: CompiledTransformation;
}

function program(e: TransformExpressionIR, surface: CelSurface, field: string, limits: EvaluationLimits, all: CelProgram[]): CelProgram {
  const c = compileCel(expressionText(e), surface, limits);
  // The expression's text is not quoted: it may hold a credential.
  if (!c.ok) throw new TransformationConfigError(`transformation.${field}: the expression cannot be used: ${typeof e === 'string' ? c.problem : 'it does not compile'}`);
  all.push(c.value);
  return c.value;
}

function headerEdits(h: HeaderEditsIR | null, at: string, limits: EvaluationLimits, all: CelProgram[]): CompiledHeaderEdits | null {
  if (!h) return null;
  const edits = (list: 'set' | 'add') =>
    h[list].map((e, i) => {
      const field = `${at}.${list}[${i}]`;
      return { field, name: e.name, value: program(e.value, 'transformHeader', `${field}.value`, limits, all), when: e.when === null ? null : program(e.when, 'transformWhen', `${field}.when`, limits, all), secret: typeof e.value !== 'string' };
    });
  return { set: edits('set'), add: edits('add'), remove: h.remove };
}

function compileNew(ir: TransformationIR, limits: EvaluationLimits): CompiledTransformation {
  const all: CelProgram[] = [];
  const b = ir.request.body;
  const body = b && {
    set: b.set.map((e, i) => {
      const field = `request.body.set[${i}]`;
      return {
        field,
        path: e.path,
        segments: e.path.split('.'),
        value: program(e.value, 'transformBody', `${field}.value`, limits, all),
        when: e.when === null ? null : program(e.when, 'transformWhen', `${field}.when`, limits, all),
        secret: typeof e.value !== 'string',
      };
    }),
    remove: b.remove.map((path) => ({ path, segments: path.split('.') })),
  };
  const requestHeaders = headerEdits(ir.request.headers, 'request.headers', limits, all);
  const responseHeaders = headerEdits(ir.response.headers, 'response.headers', limits, all);
  const cost = all.reduce((n, p) => n + p.cost, 0);
  if (!(cost <= limits.cel.maxCost)) throw new TransformationConfigError(`transformation: estimated cost ${cost} together, more than the budget of ${limits.cel.maxCost} (cel.maxCost)`);
  const reads = readsOf(all);
  const readsLlm = [...reads].some((r) => r.startsWith('llm.'));
  return { requestHeaders, body, responseHeaders, reads, needsBody: body !== null || readsLlm, limits };
}

// Compiled once per IR object and bounds: a route object the snapshot decoder kept keeps its programs.
const compiled = new WeakMap<TransformationIR, { readonly limits: EvaluationLimits; readonly value: CompiledTransformation }>();

export function compileTransformation(ir: TransformationIR, limits: EvaluationLimits): CompiledTransformation {
  const hit = compiled.get(ir);
  if (hit && (hit.limits === limits || JSON.stringify(hit.limits) === JSON.stringify(limits))) return hit.value;
  const value = compileNew(ir, limits);
  compiled.set(ir, { limits, value });
  return value;
}

/** The route's transformation when it sets one, else its listener's (Gateway-level); null: none. */
export function effectiveTransformation(listener: PolicyIR | null, route: PolicyIR | null, limits: EvaluationLimits): RouteTransformation | null {
  const own = route?.transformation;
  if (own) return { source: 'route', compiled: compileTransformation(own, limits) };
  const inherited = listener?.transformation;
  return inherited ? { source: 'gateway', compiled: compileTransformation(inherited, limits) } : null;
}

/** Whether a policy transforms requests (their headers or body): the listener's reading limits then wait for it. */
export function transformsRequests(policy: PolicyIR | null): boolean {
  const t = policy?.transformation;
  return !!t && (t.request.headers !== null || t.request.body !== null);
}
