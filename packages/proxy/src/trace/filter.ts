// The optional `match` of a trace session: a CEL expression over the request, compiled once
// when the session is armed. Variables: request.method, request.path, request.host (without
// port) and request.headers (lower-case names). A request the expression cannot evaluate
// (e.g. a missing header) does not match.
import type { IncomingHttpHeaders } from 'node:http';
import { cel } from '@tollgate/api';

export interface TraceRequestView {
  readonly method: string;
  readonly path: string;
  readonly host: string;
  readonly headers: IncomingHttpHeaders;
}

export type TraceFilter = (req: TraceRequestView) => boolean;

export class TraceFilterError extends Error {}

function flatHeaders(headers: IncomingHttpHeaders): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers)) if (v !== undefined) out[k] = Array.isArray(v) ? v.join(', ') : v;
  return out;
}

export function compileTraceFilter(expression: string): TraceFilter {
  // CEL is loaded by the first session armed with a match, not by every proxy.
  const { celEnv, isCelError, parse, plan } = cel();
  let program: ReturnType<typeof plan>;
  try {
    program = plan(celEnv({}), parse(expression));
  } catch (err) {
    throw new TraceFilterError(`invalid match expression: ${(err as Error).message}`);
  }
  return (req) => {
    const result = program({ request: { method: req.method, path: req.path, host: req.host, headers: flatHeaders(req.headers) } });
    return !isCelError(result) && result === true;
  };
}
