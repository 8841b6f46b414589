// Descriptors of a global limit: each entry's CEL expression is planned once per config and
// evaluated per request into the descriptor's value. As in Envoy, a descriptor one of whose
// entries has no value for this request (the expression errors, e.g. a missing header, or
// yields null, an empty string or a non-scalar) is not sent at all.
import type { plan } from '@bufbuild/cel';
import type { IncomingHttpHeaders } from 'node:http';
import { cel, type GlobalRateLimitIR } from '@tollgate/api';
import type { RequestFacts } from './facts.js';

type Program = ReturnType<typeof plan>;

export interface CompiledEntry {
  readonly name: string;
  readonly expression: string;
  readonly program: Program;
}

export interface CompiledDescriptor {
  readonly index: number;
  readonly unit: 'Requests' | 'Tokens';
  readonly entries: readonly CompiledEntry[];
}

/** A descriptor's expression does not parse; the message names the descriptor and entry. */
export class GlobalRateLimitConfigError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'GlobalRateLimitConfigError';
  }
}

// Made on the first compile: CEL is loaded only by a config that uses it.
let env: ReturnType<ReturnType<typeof cel>['celEnv']> | undefined;

export function compileDescriptors(descriptors: GlobalRateLimitIR['descriptors']): CompiledDescriptor[] {
  if (descriptors.length === 0) return [];
  const { celEnv, parse, plan } = cel();
  const celEnvironment = (env ??= celEnv({}));
  return descriptors.map((d, index) => ({
    index,
    unit: d.unit,
    entries: d.entries.map((e, j) => {
      let program: Program;
      try {
        program = plan(celEnvironment, parse(e.expression));
      } catch (err) {
        const reason = err instanceof Error ? err.message : String(err);
        throw new GlobalRateLimitConfigError(
          `rateLimit.global.descriptors[${index}].entries[${j}] (${e.name}): invalid CEL expression ${JSON.stringify(e.expression)}: ${reason}`,
          { cause: err },
        );
      }
      return { name: e.name, expression: e.expression, program };
    }),
  }));
}

/** The CEL variables: request.{method,path,host,headers}, source.address, llm.model. */
// A type alias (not an interface) so that it is assignable to the planner's bindings type.
export type CelBindings = {
  readonly request: { method: string; path: string; host: string; headers: Record<string, string> };
  readonly source: { address: string };
  readonly llm: { model: string };
};

function flatHeaders(headers: IncomingHttpHeaders): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers)) {
    if (v !== undefined) out[k.toLowerCase()] = Array.isArray(v) ? v.join(', ') : v;
  }
  return out;
}

export function celBindings(facts: RequestFacts): CelBindings {
  return {
    request: { method: facts.method, path: facts.path, host: facts.host, headers: flatHeaders(facts.headers) },
    source: { address: facts.sourceAddress },
    llm: { model: facts.model ?? '' },
  };
}

/** A CEL result as a descriptor value; null when it is not a non-empty scalar. */
function scalarValue(v: unknown): string | null {
  if (typeof v === 'string') return v === '' ? null : v;
  if (typeof v === 'bigint' || typeof v === 'boolean') return String(v);
  if (typeof v === 'number') return Number.isFinite(v) ? String(v) : null;
  if (cel().isCelUint(v)) return String(v.value);
  return null;
}

export type Evaluated =
  | { readonly ok: true; readonly entries: { key: string; value: string }[] }
  | { readonly ok: false; readonly entry: string; readonly reason: string };

export function evaluateDescriptor(d: CompiledDescriptor, bindings: CelBindings): Evaluated {
  const entries: { key: string; value: string }[] = [];
  for (const e of d.entries) {
    let result: unknown;
    try {
      result = e.program(bindings);
    } catch (err) {
      return { ok: false, entry: e.name, reason: err instanceof Error ? err.message : String(err) };
    }
    if (cel().isCelError(result)) return { ok: false, entry: e.name, reason: result.message };
    const value = scalarValue(result);
    if (value === null) return { ok: false, entry: e.name, reason: 'not a non-empty string, number or bool' };
    entries.push({ key: e.name, value });
  }
  return { ok: true, entries };
}
