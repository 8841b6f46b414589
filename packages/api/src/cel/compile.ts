// The one place every CEL expression of the project goes through, at validation (standalone
// config load, controller translation, snapshot decoding) and at run time (the proxy):
// bounded text, parse, type check and cost estimate against the surface's declared
// variables, budget, then plan. Nothing evaluates an expression that did not come out of
// compileCel(), and an expression whose estimate is over the budget never comes out of it.
// @bufbuild/cel cannot stop an evaluation once started, so the estimate is the guard.
import type * as Cel from '@bufbuild/cel';
import type { Parsed } from '../host-port.js';
import type { EvaluationLimits, RegexLimits } from '../limits.js';
import { compileRegex } from '../regex.js';
import { cel } from './library.js';
import { CelCheckError, Checker, type InputName } from './check.js';
import { textProblem } from './guard.js';
import { typeName } from './shape.js';
import { SURFACES, type CelSurface } from './surfaces.js';
import type { CelBindings } from './inputs.js';

type Program = ReturnType<typeof Cel.plan>;

/** What an evaluation gave: a value (a CelUint as a bigint), or the error it raised. */
export type CelOutcome = { readonly ok: true; readonly value: unknown } | { readonly ok: false; readonly reason: string };

export interface CelProgram {
  readonly source: string;
  readonly surface: CelSurface;
  /** Most cost units one evaluation takes (rounded up), for inputs within the declared bounds. */
  readonly cost: number;
  /** The request inputs it reads: a request must honour their bounds before it runs (./inputs.ts). */
  readonly reads: ReadonlySet<InputName>;
  run(bindings: CelBindings): CelOutcome;
}

const CACHE_ENTRIES = 1024;
const cache = new Map<string, Parsed<CelProgram>>();

// One environment per regex bounds: matches() compiles its (literal, checked) pattern through
// compileRegex(), under the bounds the expression was checked with.
const envs = new Map<string, ReturnType<typeof Cel.celEnv>>();

function envFor(regex: RegexLimits): ReturnType<typeof Cel.celEnv> {
  const key = JSON.stringify(regex);
  let env = envs.get(key);
  if (!env) {
    const re2 = {
      compile(pattern: string) {
        const r = compileRegex(pattern, regex);
        if (!r.ok) throw new Error(r.problem);
        return { test: (text: string) => r.value.testPartial(text) };
      },
    };
    envs.set(key, (env = cel().celEnv({ re2 })));
  }
  return env;
}

function outcome(result: ReturnType<Program>): CelOutcome {
  const lib = cel();
  if (lib.isCelError(result)) return { ok: false, reason: result.message };
  return { ok: true, value: lib.isCelUint(result) ? result.value : result };
}

function compileNew(source: string, surface: CelSurface, limits: EvaluationLimits): Parsed<CelProgram> {
  const def = SURFACES[surface];
  const refused = textProblem(source);
  if (refused) return { ok: false, problem: refused };
  const lib = cel();
  let parsed: ReturnType<typeof Cel.parse>;
  try {
    parsed = lib.parse(source);
  } catch (err) {
    return { ok: false, problem: `not a valid CEL expression (${(err as Error).message})` };
  }
  let checked;
  try {
    checked = new Checker(def.variables(limits.cel), limits.regex, parsed).check(parsed.expr);
  } catch (err) {
    if (!(err instanceof CelCheckError)) throw err;
    return { ok: false, problem: `does not type-check: ${err.message}` };
  }
  if (!def.results.has(checked.shape.t)) {
    return { ok: false, problem: `evaluates to ${typeName(checked.shape)}; ${def.what} must be ${[...def.results].join(', ')}` };
  }
  const cost = Math.ceil(checked.cost);
  // Written so that an estimate that overflowed (Infinity, NaN) is refused too.
  if (!(cost <= limits.cel.maxCost)) {
    return {
      ok: false,
      problem: `its estimated cost is ${cost}, more than the budget of ${limits.cel.maxCost} (cel.maxCost) for inputs within the declared bounds (${inputBounds(limits)}); iterate over less, or avoid nested macros`,
    };
  }
  const program = lib.plan(envFor(limits.regex), parsed);
  return {
    ok: true,
    value: { source, surface, cost, reads: checked.reads, run: (bindings) => outcome(program(bindings)) },
  };
}

/** The input bounds the estimate assumed, for messages. */
export function inputBounds(limits: EvaluationLimits): string {
  const c = limits.cel;
  return `up to ${c.maxHeaders} headers of ${c.maxHeaderLength} characters, a path of ${c.maxPathLength}`;
}

// The bounds objects in use are few and long-lived (the defaults, a config's, the controller's).
const limitsKeys = new WeakMap<EvaluationLimits, string>();
function limitsKey(limits: EvaluationLimits): string {
  let key = limitsKeys.get(limits);
  if (key === undefined) limitsKeys.set(limits, (key = JSON.stringify(limits)));
  return key;
}

/**
 * An expression of `surface`, checked and planned under `limits`; or why not (phrased to
 * follow `got "<expression>"`). The same text under the same bounds is compiled once.
 */
export function compileCel(source: string, surface: CelSurface, limits: EvaluationLimits): Parsed<CelProgram> {
  const key = `${surface}\u0000${limitsKey(limits)}\u0000${source}`;
  const hit = cache.get(key);
  if (hit) {
    cache.delete(key);
    cache.set(key, hit);
    return hit;
  }
  if (cache.size >= CACHE_ENTRIES) cache.delete(cache.keys().next().value!);
  const compiled = compileNew(source, surface, limits);
  cache.set(key, compiled);
  return compiled;
}
