// The ajv instances of every schema of the project; each schema is compiled once, on first use
// (see compile), and ajv's errors are rewritten into Problems that name path, value and
// expectation.
import type * as AjvModule from 'ajv';
import type { Ajv, ErrorObject, SchemaValidateFunction, ValidateFunction } from 'ajv';
import type { TSchema, Static } from '@sinclair/typebox';
import { checkDuration, type DurationRules } from './duration.js';
import { lazyModule } from './lazy-module.js';
import { parseHost, parseHostPort, type HostPortRules } from './host-port.js';
import { joinPath, show, type Problem } from './validation-error.js';

// Two instances: `firstError` answers valid or not, stopping at the first error; `explain` runs only
// on a value `firstError` refused, collecting every error with the schema and data it needs for the
// messages. A validator of `firstError` is a fraction of the code of one that collects and
// describes every error, and it is the one that runs hot (V8 optimises it and keeps the
// optimised code for good: for the snapshot schemas, megabytes per process otherwise).
// `code.optimize: false`: ajv's optimiser passes over the generated source (1.2 MB for the
// standalone config schema) only trim unused names; skipping them halves the compile's time and
// keeps its garbage (about 20 MiB resident, never given back) off the start-up peak.
const OPTIONS = { strict: true, strictTypes: false, allowUnionTypes: true, code: { optimize: false } } as const;

// The library itself is loaded with the first schema compiled, not with this module: every
// thread of a proxy imports the schemas, and a worker thread, handed snapshots the main thread
// validated, never compiles one (ajv is about 1 MiB of heap a thread).
const ajvModule = lazyModule<typeof AjvModule>('ajv');
interface Instances {
  readonly firstError: Ajv;
  readonly explain: Ajv;
}
let built: Instances | null = null;

function instances(): Instances {
  if (built) return built;
  const { Ajv } = ajvModule();
  const firstError = new Ajv(OPTIONS);
  const explain = new Ajv({ ...OPTIONS, allErrors: true, verbose: true });
  for (const ajv of [firstError, explain]) {
    // Annotation keywords: `expected` is the human phrasing of a pattern for error messages;
    // `x-kubernetes-validations` are CEL rules the API server runs (validate.ts mirrors them);
    // the list-map markers make the API server refuse a repeated key (rules.ts checks files);
    // preserve-unknown-fields keeps a free-form object (a JSON body) whole in the API server.
    ajv.addKeyword({ keyword: 'expected', schemaType: 'string' });
    ajv.addKeyword({ keyword: 'x-kubernetes-validations', schemaType: 'array' });
    ajv.addKeyword({ keyword: 'x-kubernetes-list-type', schemaType: 'string' });
    ajv.addKeyword({ keyword: 'x-kubernetes-list-map-keys', schemaType: 'array' });
    ajv.addKeyword({ keyword: 'x-kubernetes-preserve-unknown-fields', schemaType: 'boolean' });
    // The one host:port and duration validators (host-port.ts, duration.ts) run inside the schemas.
    checkKeyword<HostPortRules>(ajv, 'hostPort', (value, rules) => parseHostPort(value, rules));
    checkKeyword<DurationRules>(ajv, 'duration', (value, rules) => checkDuration(value, rules));
    checkKeyword<true>(ajv, 'host', (value) => parseHost(value));
  }
  return (built = { firstError, explain });
}

/** A keyword whose check is a function returning a problem phrase, reported as `got <value>; <problem>`. */
function checkKeyword<R>(ajv: Ajv, keyword: string, check: (value: string, rules: R) => { ok: true } | { ok: false; problem: string }): void {
  const validate: SchemaValidateFunction = (rules: R, data: unknown) => {
    const r = check(data as string, rules);
    if (r.ok) return true;
    validate.errors = [{ keyword, message: r.problem, params: {} }];
    return false;
  };
  ajv.addKeyword({ keyword, type: 'string', schemaType: ['object', 'boolean'], errors: true, validate });
}

export interface Validator<T> {
  (value: unknown): { ok: true; value: T } | { ok: false; problems: Problem[] };
}

/**
 * Compiled on first use, not at module load: every process imports all the schemas, but a
 * standalone proxy never decodes a snapshot and a proxy in cluster mode never reads a config
 * file, and a compiled validator of the larger schemas holds megabytes of generated code.
 */
export function compile<S extends TSchema>(schema: S): Validator<Static<S>> {
  let fn: ValidateFunction | null = null;
  let explainFn: ValidateFunction | null = null;
  return (value) => {
    fn ??= instances().firstError.compile(schema);
    if (fn(value)) return { ok: true, value: value as Static<S> };
    explainFn ??= instances().explain.compile(schema);
    explainFn(value);
    return { ok: false, problems: toProblems(explainFn.errors ?? [], value) };
  };
}

function pointerToPath(pointer: string): string {
  if (!pointer) return '';
  return pointer
    .split('/')
    .slice(1)
    .map((seg) => seg.replace(/~1/g, '/').replace(/~0/g, '~'))
    .reduce<string>((acc, seg) => joinPath(acc, /^\d+$/.test(seg) ? Number(seg) : seg), '');
}

function valueAt(root: unknown, pointer: string): unknown {
  let cur: unknown = root;
  for (const seg of pointer.split('/').slice(1)) {
    if (cur === null || typeof cur !== 'object') return undefined;
    cur = (cur as Record<string, unknown>)[seg.replace(/~1/g, '/').replace(/~0/g, '~')];
  }
  return cur;
}

function kindOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'an object';
  return `${typeof value} ${show(value)}`;
}

function describe(err: ErrorObject, value: unknown): { path: string; message: string } {
  const path = pointerToPath(err.instancePath);
  const p = err.params as Record<string, unknown>;
  const schema = err.parentSchema as { expected?: string; description?: string } | undefined;
  switch (err.keyword) {
    case 'additionalProperties': {
      const known = Object.keys((err.parentSchema as { properties?: object }).properties ?? {});
      return {
        path: joinPath(path, String(p.additionalProperty)),
        message: `unknown field; expected one of: ${known.join(', ')}`,
      };
    }
    case 'required':
      return { path: joinPath(path, String(p.missingProperty)), message: 'required field is missing' };
    case 'type':
      return { path, message: `got ${kindOf(value)}; expected ${String(p.type)}` };
    case 'enum':
      return { path, message: `got ${show(value)}; expected one of: ${(p.allowedValues as unknown[]).map((v) => String(v)).join(', ')}` };
    case 'const':
      return { path, message: `got ${show(value)}; expected ${show(p.allowedValue)}` };
    case 'pattern':
      return { path, message: `got ${show(value)}; expected ${schema?.expected ?? `a string matching ${String(p.pattern)}`}` };
    case 'minimum':
    case 'maximum':
    case 'exclusiveMinimum':
    case 'exclusiveMaximum':
      return { path, message: `got ${show(value)}; expected a number ${String(p.comparison)} ${String(p.limit)}` };
    case 'minLength':
      return { path, message: p.limit === 1 ? 'must not be empty' : `got ${show(value)}; expected at least ${String(p.limit)} characters` };
    case 'maxLength':
      return { path, message: `is longer than ${String(p.limit)} characters` };
    case 'minItems':
      return { path, message: `has ${(value as unknown[]).length} items; expected at least ${String(p.limit)}` };
    case 'maxItems':
      return { path, message: `has ${(value as unknown[]).length} items; expected at most ${String(p.limit)}` };
    default:
      return { path, message: `got ${show(value)}; ${err.message ?? 'is invalid'}` };
  }
}

function toProblems(errors: ErrorObject[], root: unknown): Problem[] {
  const seen = new Set<string>();
  const out: Problem[] = [];
  for (const err of errors) {
    // An anyOf failure repeats what its branches already said.
    if (err.keyword === 'anyOf' || err.keyword === 'oneOf' || err.keyword === 'if') continue;
    const problem = describe(err, valueAt(root, err.instancePath));
    const key = `${problem.path}\u0000${problem.message}`;
    if (!seen.has(key)) {
      seen.add(key);
      out.push(problem);
    }
  }
  return out;
}
