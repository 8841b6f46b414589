// Cost of one full-string regular-expression match per engine: V8's backtracking RegExp,
// re2js (the linear-time engine route matches use) and, when RE2_NATIVE names an installed
// `re2` package directory, the native RE2 binding. Prints ns per match for typical route
// patterns and the time one pathological input takes.
//   node bench/regex-engines.mjs
//   RE2_NATIVE=/path/to/node_modules/re2 node bench/regex-engines.mjs
import { createRequire } from 'node:module';
import { performance } from 'node:perf_hooks';
// re2js is a dependency of @tollgate/api, which compiles route patterns with it.
const { RE2JS } = createRequire(new URL('../packages/api/package.json', import.meta.url))('re2js');
const require = createRequire(import.meta.url);
const Native = process.env.RE2_NATIVE ? require(process.env.RE2_NATIVE) : null;

const CASES = [
  { name: 'path /v1/[a-z]+/completions', pattern: '/v1/[a-z]+/completions', input: '/v1/chat/completions' },
  { name: 'path /svc/[0-9]+/items/.*', pattern: '/svc/[0-9]+/items/.*', input: '/svc/05000/items/abc/def?x' },
  { name: 'header (gpt-4o|gpt-4o-mini|o3)', pattern: '(gpt-4o|gpt-4o-mini|o3)', input: 'gpt-4o-mini' },
  { name: 'no match, 200-char path', pattern: '/api/v[0-9]+/.*\\.json', input: `/api/${'x'.repeat(195)}` },
];
const PATHOLOGICAL = { pattern: '(a+)+$', lengths: [20, 24, 28] };

const engines = [
  { name: 'V8 RegExp', compile: (p) => { const re = new RegExp(`^(?:${p})$`); return (s) => re.test(s); } },
  { name: 're2js', compile: (p) => { const re = RE2JS.compile(p); return (s) => re.testExact(s); } },
  ...(Native ? [{ name: 're2 (native)', compile: (p) => { const re = new Native(`^(?:${p})$`); return (s) => re.test(s); } }] : []),
];

function nsPerMatch(test, input) {
  for (let i = 0; i < 20_000; i++) test(input); // warm-up
  const n = 200_000;
  const t0 = performance.now();
  let hits = 0;
  for (let i = 0; i < n; i++) if (test(input)) hits++;
  const ns = ((performance.now() - t0) * 1e6) / n;
  return { ns, hits };
}

console.log(`node ${process.version}; ns per full match (200,000 matches after warm-up)\n`);
console.log(['case', ...engines.map((e) => e.name)].join(' | '));
for (const c of CASES) {
  const row = engines.map((e) => nsPerMatch(e.compile(c.pattern), c.input).ns.toFixed(0));
  console.log([c.name, ...row].join(' | '));
}
console.log(`\npathological ${PATHOLOGICAL.pattern} against "a"*n + "!": ms for one match`);
console.log(['n', ...engines.map((e) => e.name)].join(' | '));
for (const n of PATHOLOGICAL.lengths) {
  const input = `/${'a'.repeat(n)}!`;
  const row = engines.map((e) => {
    const test = e.compile(`/${PATHOLOGICAL.pattern}`);
    const t0 = performance.now();
    test(input);
    return (performance.now() - t0).toFixed(2);
  });
  console.log([n, ...row].join(' | '));
}
// Node's HTTP parser bounds a request line and headers at 16 KiB; 100,000 characters is past any path.
const long = `/${'a'.repeat(100_000)}!`;
for (const e of engines.slice(1)) {
  const test = e.compile(`/${PATHOLOGICAL.pattern}`);
  const t0 = performance.now();
  test(long);
  console.log(`${e.name}: the same pattern on a 100,000-character path: ${(performance.now() - t0).toFixed(1)} ms`);
}
