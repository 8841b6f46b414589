// The cost estimate is a bound: for generated expressions and generated requests within the
// declared bounds, what @bufbuild/cel actually does never exceeds what compileCel() estimated.
//
// "What it actually does" is counted inside the real evaluator, instrumented for this test
// only: every node it evaluates (the eval() of each of its node classes), every element read
// through the views that list concatenation builds, and for every function it runs the cost
// model of ./functions.ts applied to the values it was actually given. The test thus checks
// what the estimate must get right: how many nodes run, how many times loops go round, and
// how large the values flowing through them are.
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type * as Cel from '@bufbuild/cel';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bindRequest, compileCel, compileRegex, MAX_HOST_LENGTH, resolveLimits, type RequestInputs } from '../src/index.js';
import { FUNCTIONS, overloadFor, REGEX_STEP, STEP, TRAVERSAL } from '../src/cel/functions.js';
import { BOOL, bytes, DOUBLE, INT, list, map, NONE, NULL, str, UINT, type Shape } from '../src/cel/shape.js';

// The library exactly as the package loads it (one CommonJS instance, the real one).
const require = createRequire(import.meta.url);
const libDir = dirname(require.resolve('@bufbuild/cel'));
const lib = require('@bufbuild/cel') as typeof Cel;
const plannerModule = require(join(libDir, 'planner.js')) as { Planner: new (...args: unknown[]) => { plan(e: unknown): Record<string, unknown> } };

// Small bounds: nested loops stay quick to run, and the inputs can reach the bounds.
const LIMITS = resolveLimits({ cel: { maxCost: 100_000_000, maxHeaders: 16, maxHeaderLength: 256, maxPathLength: 256 } });

let steps = 0;
let metering = false;
const restore: (() => void)[] = [];

function wrap<T extends object>(proto: T, key: keyof T & string, make: (orig: (...a: unknown[]) => unknown) => (this: unknown, ...a: unknown[]) => unknown): void {
  const orig = proto[key] as (...a: unknown[]) => unknown;
  (proto as Record<string, unknown>)[key] = make(orig);
  restore.push(() => ((proto as Record<string, unknown>)[key] = orig));
}

// The shape of an actual value: its type and actual sizes (a list's actual view depth). What
// a function costs depends on its operands' lengths only, not on their elements.
function shapeOf(v: unknown): Shape {
  if (typeof v === 'string') return str(v.length);
  if (typeof v === 'bigint') return INT;
  if (typeof v === 'number') return DOUBLE;
  if (typeof v === 'boolean') return BOOL;
  if (v === null || v === undefined) return NULL;
  if (v instanceof Uint8Array) return bytes(v.length);
  if (lib.isCelUint(v)) return UINT;
  if (lib.isCelList(v)) return list(NONE, v.size, viewDepth(v));
  if (lib.isCelMap(v)) return map(NONE, NONE, v.size);
  return NULL;
}

// Views are immutable: each one's depth is computed once.
const depths = new WeakMap<object, number>();
function viewDepth(v: unknown): number {
  const lists = (v as { _lists?: unknown[] })._lists;
  if (!lists) return 0;
  let d = depths.get(v as object);
  if (d === undefined) depths.set(v as object, (d = 1 + Math.max(0, ...lists.map(viewDepth))));
  return d;
}

// What a function does beyond being a node: the cost model of the checker at actual sizes.
function callCost(name: string, target: unknown, args: readonly unknown[]): number {
  const values = target === undefined ? args : [target, ...args];
  const shapes = values.map(shapeOf);
  if (name === 'matches') {
    const re = compileRegex(args[0] as string, LIMITS.regex);
    return REGEX_STEP * (target as string).length * (re.ok ? re.value.programSize : 0);
  }
  if (name === '_==_' || name === '_!=_') return equality(values[0], values[1]);
  if (name === '@in') {
    const [x, coll] = values;
    if (lib.isCelList(coll)) {
      let n = 0;
      for (const e of coll as Iterable<unknown>) n += STEP + equality(x, e);
      return n;
    }
    return 0;
  }
  const def = FUNCTIONS[name];
  const o = def && overloadFor(def, shapes);
  return o ? o.cost(shapes) - STEP : 0;
}

function equality(a: unknown, b: unknown): number {
  if (typeof a === 'string' && typeof b === 'string') return TRAVERSAL * Math.min(a.length, b.length);
  if (lib.isCelList(a) && lib.isCelList(b)) {
    let n = 0;
    const size = Math.min(a.size, b.size);
    for (let i = 0; i < size; i++) n += STEP + equality(a.get(i), b.get(i));
    return n;
  }
  if (lib.isCelMap(a) && lib.isCelMap(b)) {
    let n = 0;
    for (const [k, v] of a as Iterable<[unknown, unknown]>) n += STEP + (b.has(k as never) ? equality(v, b.get(k as never)) : 0);
    return n;
  }
  return 0;
}

beforeAll(() => {
  // Every node class of the evaluator, from a plan of each kind of node.
  const env = lib.celEnv({});
  const planner = new plannerModule.Planner(env.funcs, env.registry, env.namespace);
  const nodes = ['1', 'a', 'f(1)', '[1]', '{1: 1}', 'a && b', 'a || b', 'has(a.b)', '[1].all(x, x)'].map((src) => planner.plan(lib.parse(src).expr));
  const fold = nodes[8]!;
  const protos = new Set<object>([...nodes, fold.cond as object].map((n) => Object.getPrototypeOf(n) as object));
  for (const proto of protos) {
    wrap(proto as { eval: () => unknown }, 'eval', (orig) =>
      function (this: unknown, ...a: unknown[]) {
        if (metering) steps += STEP;
        return orig.apply(this, a);
      },
    );
  }
  // Reads through concatenation views: each element passing each view, each view get() walks.
  const concat = Object.getPrototypeOf(lib.celListConcat(lib.celList([]), lib.celList([]))) as { values: () => Generator; get: () => unknown };
  wrap(concat, 'values', (orig) =>
    function* (this: unknown) {
      for (const v of orig.call(this) as Iterable<unknown>) {
        if (metering) steps += STEP;
        yield v;
      }
    },
  );
  wrap(concat, 'get', (orig) =>
    function (this: unknown, ...a: unknown[]) {
      if (metering) steps += STEP;
      return orig.apply(this, a);
    },
  );
  // Function bodies: Func and Method both end in their base class's call() when they run.
  const callable = Object.getPrototypeOf(Object.getPrototypeOf(lib.celFunc('f', [], lib.CelScalar.INT, () => 1n))) as { call: (id: unknown, t: unknown, a: unknown[]) => unknown };
  wrap(callable, 'call', (orig) =>
    function (this: unknown, ...a: unknown[]) {
      const result = orig.apply(this, a);
      if (metering && result !== undefined) steps += callCost((this as { name: string }).name, a[1], a[2] as unknown[]);
      return result;
    },
  );
});

afterAll(() => {
  for (const r of restore.reverse()) r();
});

// Expressions by type, over the descriptor variables, with macro variables in scope.
type Ty = 'string' | 'int' | 'bool' | 'strings';
interface Ctx {
  readonly vars: readonly string[];
  readonly depth: number;
}

const lit = fc.constantFrom('""', '"a"', '"x-a"', '"/v1"', '"abc:"');
const headerName = fc.constantFrom('"x-a"', '"x-b"', '"host"');

function expr(ty: Ty, ctx: Ctx): fc.Arbitrary<string> {
  const deeper: Ctx = { ...ctx, depth: ctx.depth - 1 };
  const leaf = leaves(ty, ctx);
  if (ctx.depth <= 0) return leaf;
  const sub = (t: Ty, c: Ctx = deeper) => fc.constant(null).chain(() => expr(t, c));
  const v = `x${ctx.vars.length}`;
  const inner: Ctx = { vars: [...ctx.vars, v], depth: ctx.depth - 1 };
  const strList = fc.oneof(fc.constant('request.headers'), sub('strings'));
  switch (ty) {
    case 'string':
      return fc.oneof(
        leaf,
        fc.tuple(sub('string'), sub('string')).map(([a, b]) => `(${a} + ${b})`),
        fc.tuple(sub('bool'), sub('string'), sub('string')).map(([c, a, b]) => `(${c} ? ${a} : ${b})`),
        sub('int').map((i) => `string(${i})`),
        fc.tuple(sub('strings'), fc.nat(3)).map(([l, i]) => `${l}[${i}]`),
      );
    case 'int':
      return fc.oneof(
        leaf,
        sub('string').map((s) => `size(${s})`),
        sub('strings').map((l) => `${l}.size()`),
        fc.tuple(sub('int'), sub('int')).map(([a, b]) => `(${a} + ${b})`),
        fc.tuple(sub('bool'), sub('int'), sub('int')).map(([c, a, b]) => `(${c} ? ${a} : ${b})`),
      );
    case 'bool':
      return fc.oneof(
        leaf,
        fc.tuple(sub('string'), sub('string'), fc.constantFrom('contains', 'startsWith', 'endsWith')).map(([a, b, f]) => `${a}.${f}(${b})`),
        fc.tuple(sub('string'), sub('string'), fc.constantFrom('==', '!=', '<')).map(([a, b, op]) => `(${a} ${op} ${b})`),
        fc.tuple(sub('int'), sub('int')).map(([a, b]) => `(${a} < ${b})`),
        fc.tuple(sub('bool'), sub('bool'), fc.constantFrom('&&', '||')).map(([a, b, op]) => `(${a} ${op} ${b})`),
        sub('bool').map((b) => `!${b}`),
        fc.tuple(sub('string'), strList).map(([s, l]) => `(${s} in ${l})`),
        sub('string').map((s) => `${s}.matches("^/v[0-9]+/(a|b)*$")`),
        fc.tuple(strList, fc.constantFrom('all', 'exists', 'exists_one'), fc.constant(null).chain(() => expr('bool', inner))).map(([l, m, p]) => `${l}.${m}(${v}, ${p})`),
        fc.tuple(sub('strings'), sub('strings')).map(([a, b]) => `(${a} == ${b})`),
      );
    case 'strings':
      return fc.oneof(
        leaf,
        fc.tuple(strList, fc.constant(null).chain(() => expr('string', inner))).map(([l, f]) => `${l}.map(${v}, ${f})`),
        fc.tuple(strList, fc.constant(null).chain(() => expr('bool', inner))).map(([l, p]) => `${l}.filter(${v}, ${p})`),
        fc.tuple(strList, fc.constant(null).chain(() => expr('bool', inner)), fc.constant(null).chain(() => expr('string', inner))).map(([l, p, f]) => `${l}.map(${v}, ${p}, ${f})`),
        fc.tuple(sub('strings'), sub('strings')).map(([a, b]) => `(${a} + ${b})`),
      );
  }
}

function leaves(ty: Ty, ctx: Ctx): fc.Arbitrary<string> {
  const vars = ctx.vars.map((v) => fc.constant(v));
  switch (ty) {
    case 'string':
      return fc.oneof(lit, fc.constantFrom('request.path', 'request.method', 'request.host', 'llm.model', 'source.address'), headerName.map((h) => `request.headers[${h}]`), ...vars, ...ctx.vars.map((v) => fc.constant(`request.headers[${v}]`)));
    case 'int':
      return fc.oneof(fc.integer({ min: -3, max: 9 }).map(String), fc.constant('size(request.headers)'));
    case 'bool':
      return fc.oneof(fc.constantFrom('true', 'false'), headerName.map((h) => `has(request.headers.${(JSON.parse(h) as string).replace(/-/g, '_')})`));
    case 'strings':
      return fc.oneof(fc.constantFrom('["a", "x-a"]', '[]', '[request.path, request.host]'), fc.array(lit, { maxLength: 4 }).map((l) => `[${l.join(', ')}]`));
  }
}

const top = fc.oneof(
  { arbitrary: expr('string', { vars: [], depth: 4 }), weight: 2 },
  { arbitrary: expr('bool', { vars: [], depth: 4 }), weight: 3 },
  { arbitrary: expr('int', { vars: [], depth: 3 }), weight: 1 },
);

// Requests within the bounds, often at them (where an estimate that is too low shows).
const unit = fc.constantFrom('a', 'b', '/', 'x', '-', '1', 'é');
const text = (max: number) => fc.oneof(fc.string({ unit, minLength: max, maxLength: max }), fc.string({ unit, maxLength: max }));
const headerNames = fc.oneof(fc.constantFrom('x-a', 'x-b', 'host'), text(LIMITS.cel.maxHeaderLength));
const requests: fc.Arbitrary<RequestInputs> = fc.record({
  method: fc.constantFrom('GET', 'POST', 'UNSUBSCRIBE'),
  path: text(LIMITS.cel.maxPathLength),
  host: text(MAX_HOST_LENGTH),
  headers: fc.oneof(
    fc.dictionary(headerNames, text(LIMITS.cel.maxHeaderLength), { minKeys: LIMITS.cel.maxHeaders, maxKeys: LIMITS.cel.maxHeaders }),
    fc.dictionary(headerNames, text(LIMITS.cel.maxHeaderLength), { maxKeys: LIMITS.cel.maxHeaders }),
  ),
  sourceAddress: fc.constantFrom('198.18.0.7', '2001:db8::1'),
  model: fc.option(text(64), { nil: null }),
});

// Requests at every bound, and expressions that make the most of them: the examples every run starts with.
const full: RequestInputs = {
  method: 'UNSUBSCRIBE',
  path: 'p'.repeat(LIMITS.cel.maxPathLength),
  host: 'h'.repeat(MAX_HOST_LENGTH),
  headers: Object.fromEntries(Array.from({ length: LIMITS.cel.maxHeaders }, (_, i) => [`${i}`.padStart(LIMITS.cel.maxHeaderLength, 'k'), 'v'.repeat(LIMITS.cel.maxHeaderLength)])),
  sourceAddress: '2001:db8::1',
  model: 'm'.repeat(64),
};
const worst = [
  'request.headers.map(x, x).exists(y, y == "")',
  'request.headers.map(x, x).map(z, z).exists(y, y == "")',
  '"q" in request.headers.map(x, request.headers[x] + x)',
  'request.headers.filter(x, true).map(y, y)[15] == ""',
  '(request.headers.map(x, x) + request.headers.map(x, x)).all(y, y.contains(request.path + request.path))',
  'request.headers.all(a, request.headers.exists(b, a + b == request.headers[a] + request.host))',
  '(request.path + request.path + request.host).matches("^/v[0-9]+/(a|b)*$")',
  'request.headers.map(x, x) == request.headers.map(y, y)',
  // A concatenation's elements are as large as either list's (once estimated from the first list alone).
  'string(size((["", ""] + [request.path, request.host])[2]))',
];

/** What evaluating `source` on `req` measured, and what compileCel() estimated. */
function measure(source: string, req: RequestInputs, limits = LIMITS): { steps: number; cost: number } | { problem: string } {
  const c = compileCel(source, 'descriptor', limits);
  if (!c.ok) return { problem: c.problem };
  const bound = bindRequest(req, c.value.reads, limits.cel);
  if (!bound.ok) return { problem: bound.problem };
  steps = 0;
  metering = true;
  try {
    c.value.run(bound.bindings);
  } finally {
    metering = false;
  }
  return { steps, cost: c.value.cost };
}

describe('the CEL cost estimate', () => {
  it('bounds what the evaluator does, for any expression and any request within the declared bounds', () => {
    let evaluated = 0;
    let highest = 0;
    const refused: string[] = [];
    fc.assert(
      fc.property(top, requests, (source, req) => {
        const m = measure(source, req);
        if ('problem' in m) {
          refused.push(`${source}: ${m.problem}`);
          return;
        }
        evaluated++;
        highest = Math.max(highest, m.steps);
        // (The measured sum is of tenths: allow for its floating-point error.)
        expect(m.steps, `${source} on ${JSON.stringify(req)}`).toBeLessThanOrEqual(m.cost + 1e-6);
      }),
      { numRuns: 400, examples: worst.map((source) => [source, full] as [string, RequestInputs]) },
    );
    expect(evaluated).toBeGreaterThan(250);
    // Generated expressions type-check and requests are within the bounds: only the result
    // type (a list where a scalar is wanted) may have refused one.
    expect(refused.filter((r) => !/: evaluates to /.test(r))).toEqual([]);
    // Nested macros over the headers were reached, not only constants.
    expect(highest).toBeGreaterThan(200);
  }, 180_000);

  it('bounds reads through the views map() and filter() build, at hundreds of elements', () => {
    // Reading element i of a list built by n appends walks up to n views: quadratic in n,
    // which only shows once n is well past the per-element costs.
    const limits = resolveLimits({ cel: { maxCost: 100_000_000, maxHeaders: 400, maxHeaderLength: 8, maxPathLength: 8 } });
    const headers = Object.fromEntries(Array.from({ length: 400 }, (_, i) => [`h${i}`, 'v']));
    const req: RequestInputs = { method: 'GET', path: '/', host: 'h', headers, sourceAddress: '198.18.0.7', model: null };
    const sources = [
      'request.headers.map(x, x).exists(y, y == "")',
      '"q" in request.headers.filter(x, true)',
      '[request.headers.map(x, x)].exists(l, request.headers.exists(k, l[0] + "!" == k))',
      '[request.headers.map(x, x)].exists(l, request.headers.exists(k, l == [k, k]))',
    ];
    for (const source of sources) {
      const m = measure(source, req, limits);
      if ('problem' in m) throw new Error(m.problem);
      expect(m.steps, source).toBeLessThanOrEqual(m.cost + 1e-6);
      expect(m.steps, source).toBeGreaterThan(400);
    }
  });
});
