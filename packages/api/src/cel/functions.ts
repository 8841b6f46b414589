// The functions and operators an expression may call, each with what it returns and what it
// costs as a function of its operands' shapes. A function missing here is refused by the
// checker: nothing runs whose cost is not modelled.
//
// Cost units (one place for all of them, so estimates and budgets mean one thing): one unit
// per node the evaluator visits; a string or bytes traversal TRAVERSAL per character (as
// cel-go's StringTraversalCostFactor); a regular expression REGEX_STEP per input character
// and program instruction (RE2 runs every live instruction on every character). Calibration
// against time: docs/security.md, "CEL expressions".
import { BOOL, bytes, DOUBLE, INT, join, lengthOf, list, str, UINT, type Kind, type Shape } from './shape.js';

export const STEP = 1;
export const TRAVERSAL = 0.1;
export const REGEX_STEP = 1 / 16;

export interface Overload {
  /** Kinds of the target (for a method) then of the arguments. */
  readonly kinds: readonly Kind[];
  readonly result: (args: readonly Shape[]) => Shape;
  /** The call's own cost, its operands' evaluation excluded. */
  readonly cost: (args: readonly Shape[]) => number;
}

export interface FunctionDef {
  /** Called as x.f(...) (true) or f(x, ...) (false); size() is both. */
  readonly style: 'method' | 'global' | 'both';
  readonly overloads: readonly Overload[];
}

const len = (s: Shape | undefined) => (s ? lengthOf(s) : 0);
const traverse = (...shapes: Shape[]) => STEP + TRAVERSAL * shapes.reduce((n, s) => n + len(s), 0);
const flat = (n: number) => () => n;
const same = (k: Kind, result: Shape, cost: (a: readonly Shape[]) => number = flat(STEP)): Overload => ({ kinds: [k, k], result: () => result, cost });

const NUMERIC: readonly [Kind, Shape][] = [
  ['int', INT],
  ['uint', UINT],
  ['double', DOUBLE],
];

const arithmetic = (kinds: readonly [Kind, Shape][]): Overload[] => kinds.map(([k, s]) => same(k, s));

const ORDERED: Overload[] = [
  ...(['int', 'uint', 'double'] as const).flatMap((a) => (['int', 'uint', 'double'] as const).map((b): Overload => ({ kinds: [a, b], result: () => BOOL, cost: flat(STEP) }))),
  same('bool', BOOL),
  // Compared character by character, up to the shorter one.
  { kinds: ['string', 'string'], result: () => BOOL, cost: ([a, b]) => STEP + TRAVERSAL * Math.min(len(a), len(b)) },
  { kinds: ['bytes', 'bytes'], result: () => BOOL, cost: ([a, b]) => STEP + TRAVERSAL * Math.min(len(a), len(b)) },
];

/** Decimal text of a number: 20 characters for a 64-bit integer, 32 covers any double's. */
const NUMBER_TEXT = 32;

/** int(s): BigInt parsing, which V8 does in time quadratic in the digits past a few thousand. */
const parseInteger = ([s]: readonly Shape[]) => traverse(s!) + len(s) ** 2 / 65_536;

/** int(), uint(), double(): from any number in one step, from a string at the cost of parsing it. */
const numberFrom = (result: Shape, parse: (a: readonly Shape[]) => number): Overload[] => [
  ...(['int', 'uint', 'double'] as const).map((k): Overload => ({ kinds: [k], result: () => result, cost: flat(STEP) })),
  { kinds: ['string'], result: () => result, cost: parse },
];

export const FUNCTIONS: Readonly<Record<string, FunctionDef>> = {
  '_+_': {
    style: 'global',
    overloads: [
      ...arithmetic(NUMERIC),
      { kinds: ['string', 'string'], result: ([a, b]) => str(len(a) + len(b)), cost: ([a, b]) => traverse(a!, b!) },
      { kinds: ['bytes', 'bytes'], result: ([a, b]) => bytes(len(a) + len(b)), cost: ([a, b]) => traverse(a!, b!) },
      // A view over both lists (cheap to make, one more level to read through).
      {
        kinds: ['list', 'list'],
        result: ([a, b]) => {
          if (a?.t !== 'list' || b?.t !== 'list') return a!;
          // Elements of either list: the larger of each bound (join).
          return list(join(a.elem, b.elem), a.len + b.len, Math.max(a.depth, b.depth) + 1);
        },
        cost: flat(STEP),
      },
    ],
  },
  '_-_': { style: 'global', overloads: arithmetic(NUMERIC) },
  '_*_': { style: 'global', overloads: arithmetic(NUMERIC) },
  '_/_': { style: 'global', overloads: arithmetic(NUMERIC) },
  '_%_': { style: 'global', overloads: arithmetic(NUMERIC.slice(0, 2)) },
  '-_': { style: 'global', overloads: [{ kinds: ['int'], result: () => INT, cost: flat(STEP) }, { kinds: ['double'], result: () => DOUBLE, cost: flat(STEP) }] },
  '!_': { style: 'global', overloads: [{ kinds: ['bool'], result: () => BOOL, cost: flat(STEP) }] },
  '_<_': { style: 'global', overloads: ORDERED },
  '_<=_': { style: 'global', overloads: ORDERED },
  '_>_': { style: 'global', overloads: ORDERED },
  '_>=_': { style: 'global', overloads: ORDERED },
  size: {
    style: 'both',
    overloads: [
      // Counted in code points: the string is spread into an array first.
      { kinds: ['string'], result: () => INT, cost: ([s]) => traverse(s!) },
      { kinds: ['bytes'], result: () => INT, cost: flat(STEP) },
      { kinds: ['list'], result: () => INT, cost: flat(STEP) },
      { kinds: ['map'], result: () => INT, cost: flat(STEP) },
    ],
  },
  contains: { style: 'method', overloads: [{ kinds: ['string', 'string'], result: () => BOOL, cost: ([s, sub]) => traverse(s!, sub!) }] },
  startsWith: { style: 'method', overloads: [{ kinds: ['string', 'string'], result: () => BOOL, cost: ([, p]) => traverse(p!) }] },
  endsWith: { style: 'method', overloads: [{ kinds: ['string', 'string'], result: () => BOOL, cost: ([, p]) => traverse(p!) }] },
  int: { style: 'global', overloads: numberFrom(INT, parseInteger) },
  uint: { style: 'global', overloads: numberFrom(UINT, parseInteger) },
  double: { style: 'global', overloads: numberFrom(DOUBLE, ([s]) => traverse(s!)) },
  string: {
    style: 'global',
    overloads: [
      { kinds: ['string'], result: ([s]) => s!, cost: flat(STEP) },
      { kinds: ['bool'], result: () => str(5), cost: flat(STEP) },
      { kinds: ['int'], result: () => str(NUMBER_TEXT), cost: flat(STEP) },
      { kinds: ['uint'], result: () => str(NUMBER_TEXT), cost: flat(STEP) },
      { kinds: ['double'], result: () => str(NUMBER_TEXT), cost: flat(STEP) },
      // UTF-8 decoding: at most one character per byte.
      { kinds: ['bytes'], result: ([b]) => str(len(b)), cost: ([b]) => traverse(b!) },
    ],
  },
  bool: {
    style: 'global',
    overloads: [
      { kinds: ['bool'], result: () => BOOL, cost: flat(STEP) },
      { kinds: ['string'], result: () => BOOL, cost: flat(STEP) },
    ],
  },
  bytes: {
    style: 'global',
    overloads: [
      { kinds: ['bytes'], result: ([b]) => b!, cost: flat(STEP) },
      // UTF-8 encoding: at most three bytes per UTF-16 unit.
      { kinds: ['string'], result: ([s]) => bytes(3 * len(s)), cost: ([s]) => traverse(s!) },
    ],
  },
};

/** The overload of `name` these operand shapes select, or null. `none` (an empty list's element) fits any kind. */
export function overloadFor(def: FunctionDef, args: readonly Shape[]): Overload | null {
  return def.overloads.find((o) => o.kinds.length === args.length && o.kinds.every((k, i) => args[i]!.t === k || args[i]!.t === 'none')) ?? null;
}
