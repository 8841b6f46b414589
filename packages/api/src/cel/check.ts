// The type checker and cost estimator of CEL expressions, in one walk over the parsed
// expression (@bufbuild/cel ships a parser and an evaluator, and a checker that handles
// constants and identifiers only). Every node gets a Shape (its type and the most it can
// hold, from the declared bounds of the variables) and a cost: the most evaluation steps it
// can take, as the Kubernetes API server estimates CRD validation rules with cel-go. Costs
// compose upwards: a macro costs its range's size times its body, so nested comprehensions
// multiply and an expression over request headers costs what the declared header count
// allows. Anything whose cost is not modelled (functions outside ./functions.ts, messages,
// optionals, two-variable comprehensions) is refused here, never run.
import type { parse } from '@bufbuild/cel';
import type { RegexLimits } from '../limits.js';
import { compileRegex } from '../regex.js';
import { FUNCTIONS, overloadFor, REGEX_STEP, STEP, TRAVERSAL } from './functions.js';
import { BOOL, bytes, DOUBLE, INT, join, lengthOf, list, map, NONE, NULL, sameType, str, typeName, UINT, type Shape } from './shape.js';

type Parsed = ReturnType<typeof parse>;
type Expr = Parsed['expr'];
type Call = Extract<Expr['exprKind'], { case: 'callExpr' }>['value'];
type Comprehension = Extract<Expr['exprKind'], { case: 'comprehensionExpr' }>['value'];

/** A request input an expression reads ("request.headers", "llm.model", ...): the inputs whose bounds a request must honour. */
export type InputName = string;

export interface Checked {
  readonly shape: Shape;
  /** Most evaluation cost units (./functions.ts) one evaluation can take. */
  readonly cost: number;
  readonly reads: ReadonlySet<InputName>;
}

export class CelCheckError extends Error {}

const fail = (message: string): never => {
  throw new CelCheckError(message);
};

interface Scope {
  readonly name: string;
  readonly shape: Shape;
  readonly parent: Scope | null;
}

interface Node {
  readonly shape: Shape;
  readonly cost: number;
}

const NUMERIC = new Set(['int', 'uint', 'double']);
const MAP_KEYS = new Set(['int', 'uint', 'bool', 'string']);
const MACROS = new Set(['all', 'exists', 'exists_one', 'map', 'filter']);

/** Equality of two values of these shapes: the cost of bufbuild's equals(). */
function equalityCost(a: Shape, b: Shape): number {
  if ((a.t === 'string' || a.t === 'bytes') && a.t === b.t) return STEP + TRAVERSAL * Math.min(a.len, b.len);
  if (a.t === 'list' && b.t === 'list') {
    // Element by element through get(), which walks each list's views.
    const n = Math.min(a.len, b.len);
    return STEP + n * (a.depth + b.depth + 2 + equalityCost(a.elem, b.elem));
  }
  if (a.t === 'map' && b.t === 'map') return STEP + Math.min(a.len, b.len) * (STEP + equalityCost(a.value, b.value));
  if (a.t === 'record' && b.t === 'record') {
    return STEP + Object.entries(a.fields).reduce((n, [k, s]) => n + STEP + (b.fields[k] ? equalityCost(s, b.fields[k]) : 0), 0);
  }
  return STEP;
}

function comparable(a: Shape, b: Shape): boolean {
  return sameType(a, b) || (NUMERIC.has(a.t) && NUMERIC.has(b.t)) || a.t === 'null' || b.t === 'null';
}

export class Checker {
  readonly #reads = new Set<InputName>();
  readonly #macros: Readonly<Record<string, Expr>>;

  constructor(
    private readonly variables: Readonly<Record<string, Shape>>,
    private readonly regexLimits: RegexLimits,
    parsed: Parsed,
  ) {
    this.#macros = parsed.sourceInfo?.macroCalls ?? {};
  }

  check(expr: Expr): Checked {
    const n = this.#expr(expr, null, 0);
    return { shape: n.shape, cost: n.cost, reads: this.#reads };
  }

  #expr(e: Expr, scope: Scope | null, depth: number): Node {
    const k = e.exprKind;
    switch (k.case) {
      case 'constExpr':
        return { shape: this.#constant(k.value.constantKind), cost: STEP };
      case 'identExpr':
        return { shape: this.#ident(k.value.name, scope), cost: STEP + depth };
      case 'selectExpr':
        return this.#select(k.value.operand!, k.value.field, k.value.testOnly, scope, depth);
      case 'callExpr':
        return this.#call(k.value, scope, depth);
      case 'listExpr': {
        if (k.value.optionalIndices.length) fail('optional list elements ([?x]) are not supported');
        const elems = k.value.elements.map((el) => this.#expr(el, scope, depth));
        const elem = elems.reduce<Shape>((acc, n, i) => (sameType(acc, n.shape) ? join(acc, n.shape) : fail(`list elements must have one type; element ${i} is ${typeName(n.shape)}, not ${typeName(acc)}`)), NONE);
        return { shape: list(elem, elems.length), cost: STEP + elems.length + sum(elems) };
      }
      case 'structExpr': {
        if (k.value.messageName) fail(`messages (${k.value.messageName}{...}) are not supported; use a map literal {"key": value}`);
        let key: Shape = NONE;
        let value: Shape = NONE;
        let cost = STEP;
        for (const entry of k.value.entries) {
          if (entry.optionalEntry || entry.keyKind.case !== 'mapKey') fail('optional map entries are not supported');
          const kn = this.#expr(entry.keyKind.value as Expr, scope, depth);
          const vn = this.#expr(entry.value!, scope, depth);
          if (!MAP_KEYS.has(kn.shape.t)) fail(`map keys are int, uint, bool or string, not ${typeName(kn.shape)}`);
          if (!sameType(key, kn.shape) || !sameType(value, vn.shape)) fail('map literal keys must have one type, and values one type');
          key = join(key, kn.shape);
          value = join(value, vn.shape);
          cost += STEP + kn.cost + vn.cost;
        }
        return { shape: map(key, value, k.value.entries.length), cost };
      }
      case 'comprehensionExpr':
        return this.#comprehension(e.id, k.value, scope, depth);
      default:
        return fail('expression kind not supported');
    }
  }

  #constant(c: Extract<Expr['exprKind'], { case: 'constExpr' }>['value']['constantKind']): Shape {
    switch (c.case) {
      case 'boolValue':
        return BOOL;
      case 'int64Value':
        return INT;
      case 'uint64Value':
        return UINT;
      case 'doubleValue':
        return DOUBLE;
      case 'stringValue':
        return str(c.value.length);
      case 'bytesValue':
        return bytes(c.value.length);
      case 'nullValue':
        return NULL;
      default:
        return fail(`constant ${String(c.case)} not supported`);
    }
  }

  #ident(name: string, scope: Scope | null): Shape {
    for (let s = scope; s; s = s.parent) if (s.name === name) return s.shape;
    const v = this.variables[name];
    if (!v) return fail(`undeclared reference to '${name}' (the variables are ${Object.keys(this.variables).join(', ')})`);
    // The variable as a whole: every field of it is read.
    if (v.t === 'record') for (const f of Object.keys(v.fields)) this.#reads.add(`${name}.${f}`);
    else this.#reads.add(name);
    return v;
  }

  #select(operand: Expr, field: string, testOnly: boolean, scope: Scope | null, depth: number): Node {
    const o = operand.exprKind;
    // request.path: a field of a declared variable (not shadowed by a macro variable) is read alone.
    const declared = o.case === 'identExpr' && !inScope(o.value.name, scope) ? this.variables[o.value.name] : undefined;
    let base: Node;
    if (declared?.t === 'record') {
      base = { shape: declared, cost: STEP + depth };
      if (declared.fields[field]) this.#reads.add(`${(o.value as { name: string }).name}.${field}`);
    } else base = this.#expr(operand, scope, depth);
    const s = base.shape;
    const cost = base.cost + STEP;
    if (s.t === 'record') {
      const f = s.fields[field];
      if (!f) return fail(`${s.name} has no field '${field}' (its fields are ${Object.keys(s.fields).join(', ')})`);
      return { shape: testOnly ? BOOL : f, cost };
    }
    if (s.t === 'map') {
      if (s.key.t !== 'string' && s.key.t !== 'none') fail(`.${field} selects a string key; this map's keys are ${typeName(s.key)}`);
      return { shape: testOnly ? BOOL : s.value, cost };
    }
    return fail(`${testOnly ? 'has()' : `.${field}`} applies to a map or a variable with fields, not ${typeName(s)}`);
  }

  #call(c: Call, scope: Scope | null, depth: number): Node {
    const fn = c.function;
    const arg = (i: number) => this.#expr(c.args[i]!, scope, depth);
    switch (fn) {
      case '_&&_':
      case '_||_': {
        const [a, b] = [arg(0), arg(1)];
        if (!is(a.shape, 'bool') || !is(b.shape, 'bool')) fail(`${fn === '_&&_' ? '&&' : '||'} takes bools, got ${typeName(a.shape)} and ${typeName(b.shape)}`);
        return { shape: BOOL, cost: STEP + a.cost + b.cost };
      }
      case '_?_:_': {
        const [cond, t, f] = [arg(0), arg(1), arg(2)];
        if (!is(cond.shape, 'bool')) fail(`the condition of ?: must be a bool, got ${typeName(cond.shape)}`);
        if (!sameType(t.shape, f.shape)) fail(`both branches of ?: must have one type; got ${typeName(t.shape)} and ${typeName(f.shape)}`);
        return { shape: join(t.shape, f.shape), cost: STEP + cond.cost + Math.max(t.cost, f.cost) };
      }
      case '_==_':
      case '_!=_': {
        const [a, b] = [arg(0), arg(1)];
        if (!comparable(a.shape, b.shape)) fail(`cannot compare ${typeName(a.shape)} with ${typeName(b.shape)}`);
        return { shape: BOOL, cost: a.cost + b.cost + equalityCost(a.shape, b.shape) };
      }
      case '_[_]':
        return this.#index(arg(0), arg(1));
      case '@in': {
        const [x, coll] = [arg(0), arg(1)];
        const s = coll.shape;
        if (s.t === 'list') {
          if (!comparable(x.shape, s.elem)) fail(`'in' a list of ${typeName(s.elem)} needs a ${typeName(s.elem)}, got ${typeName(x.shape)}`);
          return { shape: BOOL, cost: STEP + x.cost + coll.cost + s.len * (s.depth + 1 + equalityCost(x.shape, s.elem)) };
        }
        if (s.t === 'map') {
          if (!sameType(x.shape, s.key)) fail(`'in' a map with ${typeName(s.key)} keys needs a ${typeName(s.key)}, got ${typeName(x.shape)}`);
          return { shape: BOOL, cost: STEP + x.cost + coll.cost };
        }
        return fail(`'in' needs a list or a map on its right, got ${typeName(s)}`);
      }
      case 'matches':
        return this.#matches(c, scope, depth);
    }
    // A macro the parser did not expand: written with other arguments than it takes.
    if (MACROS.has(fn)) return fail(`${fn}() is written x.${fn}(v, ${fn === 'map' ? '<value>' : '<bool>'})${fn === 'map' ? ' or x.map(v, <bool>, <value>)' : ''}; two-variable forms are not supported`);
    const def = FUNCTIONS[fn];
    if (!def) return fail(`function '${displayName(fn)}' is not supported (supported: ${supportedNames()})`);
    const isMethod = c.target !== undefined;
    if ((isMethod && def.style === 'global') || (!isMethod && def.style === 'method')) {
      fail(isMethod ? `${fn}() is called as ${fn}(x), not x.${fn}()` : `${fn}() is called as x.${fn}(...), not ${fn}(x, ...)`);
    }
    const operands = [...(isMethod ? [this.#expr(c.target!, scope, depth)] : []), ...c.args.map((_, i) => arg(i))];
    const shapes = operands.map((n) => n.shape);
    if (shapes.some((x) => x.t === 'none')) {
      // An element of an empty list literal: never evaluated, of no one type.
      const costs = def.overloads.filter((o) => o.kinds.length === shapes.length).map((o) => o.cost(shapes));
      if (!costs.length) fail(`no overload of '${displayName(fn)}' takes ${shapes.length} operands`);
      return { shape: NONE, cost: sum(operands) + Math.max(...costs) };
    }
    const o = overloadFor(def, shapes);
    if (!o) return fail(`no overload of '${displayName(fn)}' takes (${shapes.map(typeName).join(', ')})`);
    return { shape: o.result(shapes), cost: sum(operands) + o.cost(shapes) };
  }

  #index(base: Node, key: Node): Node {
    const s = base.shape;
    const cost = base.cost + key.cost;
    if (s.t === 'list') {
      if (!is(key.shape, 'int') && key.shape.t !== 'uint') fail(`a list is indexed by an int, got ${typeName(key.shape)}`);
      // get() walks the list's views down to the element.
      return { shape: s.elem, cost: cost + STEP + s.depth };
    }
    if (s.t === 'map') {
      if (!sameType(key.shape, s.key)) fail(`this map's keys are ${typeName(s.key)}, got ${typeName(key.shape)}`);
      return { shape: s.value, cost: cost + STEP };
    }
    if (s.t === 'record') return fail(`index ${s.name} by field name: ${s.name}.<field>`);
    return fail(`[] applies to a list or a map, not ${typeName(s)}`);
  }

  #matches(c: Call, scope: Scope | null, depth: number): Node {
    if (c.target === undefined || c.args.length !== 1) return fail('matches() is called as s.matches("<RE2 pattern>")');
    const target = this.#expr(c.target, scope, depth);
    if (!is(target.shape, 'string')) fail(`matches() applies to a string, not ${typeName(target.shape)}`);
    const pattern = c.args[0]!.exprKind;
    if (pattern.case !== 'constExpr' || pattern.value.constantKind.case !== 'stringValue') {
      return fail('the pattern of matches() must be a string literal (a pattern computed per request would be compiled per request)');
    }
    const re = compileRegex(pattern.value.constantKind.value, this.regexLimits);
    if (!re.ok) return fail(`matches(${JSON.stringify(pattern.value.constantKind.value)}): ${re.problem}`);
    return { shape: BOOL, cost: target.cost + 2 * STEP + REGEX_STEP * lengthOf(target.shape) * re.value.programSize };
  }

  #comprehension(id: bigint, c: Comprehension, scope: Scope | null, depth: number): Node {
    const macroCall = this.#macros[id.toString()];
    const macro = macroCall?.exprKind.case === 'callExpr' ? macroCall.exprKind.value.function : '';
    if (!MACROS.has(macro)) fail('comprehensions other than all, exists, exists_one, map and filter are not supported');
    if (c.iterVar2) fail(`${macro}() with two variables is not supported; iterate over the keys (${macro}(k, ...)) and index the map`);
    const range = this.#expr(c.iterRange!, scope, depth);
    const r = range.shape;
    if (r.t !== 'list' && r.t !== 'map') return fail(`${macro}() iterates over a list or a map, not ${typeName(r)}`);
    const n = r.len;
    // Collecting the items to iterate: a list is read through its views.
    const items = STEP + n * (r.t === 'list' ? r.depth + 1 : 1);
    const elem = r.t === 'list' ? r.elem : r.key;
    const inner: Scope = { name: c.iterVar, shape: elem, parent: { name: c.accuVar, shape: NONE, parent: scope } };
    const d = depth + 2;
    const body = (e: Expr | undefined): Node => (e ? this.#expr(e, inner, d) : fail(`${macro}(): malformed expansion`));
    const step = c.loopStep!.exprKind;
    const stepArgs = step.case === 'callExpr' ? step.value.args : [];
    // Each iteration reads the accumulator twice at most (condition and step), through the scope chain.
    const accu = 2 * (STEP + d);
    let perItem: number;
    let shape: Shape;
    let result = STEP;
    switch (macro) {
      case 'all':
      case 'exists': {
        // cond @not_strictly_false([!]accu), step accu &&/|| p
        const p = this.#predicate(macro, body(stepArgs[1]));
        perItem = 3 * STEP + 2 * STEP + p.cost;
        shape = BOOL;
        break;
      }
      case 'exists_one': {
        // cond true, step p ? accu + 1 : accu; result accu == 1
        const p = this.#predicate(macro, body(stepArgs[0]));
        perItem = STEP + 5 * STEP + p.cost;
        shape = BOOL;
        result = 3 * STEP;
        break;
      }
      default: {
        // map(x, f): step accu + [f]; map(x, p, f) and filter(x, p): step p ? accu + [f] : accu
        const conditional = stepArgs.length === 3;
        const p = conditional ? this.#predicate(macro, body(stepArgs[0])) : null;
        const append = conditional ? stepArgs[1]?.exprKind : step;
        const appended = append?.case === 'callExpr' ? append.value.args[1]?.exprKind : undefined;
        const f = body(appended?.case === 'listExpr' ? appended.value.elements[0] : undefined);
        perItem = STEP + (p ? 2 * STEP + p.cost : 0) + 4 * STEP + f.cost;
        // Each append wraps the accumulator in one more view.
        shape = list(f.shape, n, n);
        break;
      }
    }
    return { shape, cost: STEP + range.cost + items + STEP + n * (perItem + accu) + result };
  }

  #predicate(macro: string, p: Node): Node {
    if (!is(p.shape, 'bool')) fail(`the predicate of ${macro}() must be a bool, got ${typeName(p.shape)}`);
    return p;
  }
}

/** Of this kind, or the element of an empty list literal (which no evaluation ever holds). */
function is(s: Shape, kind: Shape['t']): boolean {
  return s.t === kind || s.t === 'none';
}

function inScope(name: string, scope: Scope | null): boolean {
  for (let s = scope; s; s = s.parent) if (s.name === name) return true;
  return false;
}

function sum(nodes: readonly Node[]): number {
  return nodes.reduce((n, x) => n + x.cost, 0);
}

const OPERATORS: Record<string, string> = { '_+_': '+', '_-_': '-', '_*_': '*', '_/_': '/', '_%_': '%', '-_': '-', '!_': '!', '_<_': '<', '_<=_': '<=', '_>_': '>', '_>=_': '>=' };
const displayName = (fn: string) => OPERATORS[fn] ?? fn;
const supportedNames = () => [...Object.keys(FUNCTIONS).filter((f) => !OPERATORS[f]), 'matches', 'has', ...MACROS].join(', ');
