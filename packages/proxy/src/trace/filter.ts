// The optional `match` of a trace session: a CEL expression over the request, compiled once
// when the session is armed, through compileCel (the one place every expression goes
// through: type-checked, its cost estimated and within the budget). Variables:
// request.method, request.path, request.host (without port) and request.headers (lower-case
// names). A request the expression cannot evaluate (e.g. a missing header), or whose inputs
// are over the bounds the estimate assumed, does not match.
import type { IncomingHttpHeaders } from 'node:http';
import { bindRequest, compileCel, type EvaluationLimits } from '@tollgate/api';

export interface TraceRequestView {
  readonly method: string;
  readonly path: string;
  readonly host: string;
  readonly headers: IncomingHttpHeaders;
}

export type TraceFilter = (req: TraceRequestView) => boolean;

export class TraceFilterError extends Error {}

export function compileTraceFilter(expression: string, limits: EvaluationLimits): TraceFilter {
  const c = compileCel(expression, 'traceFilter', limits);
  if (!c.ok) throw new TraceFilterError(`invalid match expression: ${c.problem}`);
  const program = c.value;
  return (req) => {
    const view = { method: req.method, path: req.path, host: req.host, headers: req.headers, sourceAddress: '', model: null };
    const bound = bindRequest(view, program.reads, limits.cel);
    if (!bound.ok) return false;
    const result = program.run(bound.bindings);
    return result.ok && result.value === true;
  };
}
