#!/usr/bin/env node
// Summarises a V8 .cpuprofile (node --cpu-prof): top functions by self time, and self time
// grouped by where the code lives (tollgate package, npm package, node internals).
//   node bench/lib/profile-summary.mjs <file.cpuprofile> [--top 30] [--inclusive <text>] [--skip <s>]
// --skip leaves out the first <s> seconds of the profile (start-up: module loading, schema
// compiles), so a profile taken under load shows the request path only.
// --inclusive lists functions whose location contains <text> (e.g. packages/proxy) by total
// time: their own plus everything they call.
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

const USAGE = 'usage: node bench/lib/profile-summary.mjs <file.cpuprofile> [--top 30] [--inclusive <text>] [--skip <seconds>]\n';
let parsed;
try {
  parsed = parseArgs({ options: { top: { type: 'string', default: '30' }, inclusive: { type: 'string' }, skip: { type: 'string', default: '0' }, help: { type: 'boolean', short: 'h' } }, allowPositionals: true });
} catch (err) {
  process.stderr.write(`profile-summary: ${err.message}\n${USAGE}`);
  process.exit(2);
}
const { values, positionals } = parsed;
if (values.help) {
  process.stdout.write(USAGE);
  process.exit(0);
}
if (positionals.length !== 1) {
  process.stderr.write(USAGE);
  process.exit(2);
}
const profile = JSON.parse(readFileSync(positionals[0], 'utf8'));
const top = Number(values.top);

const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
const selfUs = new Map();
const { samples, timeDeltas } = profile;
const skipUs = Number(values.skip) * 1e6;
if (!Number.isFinite(skipUs) || skipUs < 0) throw new Error(`--skip must be a number of seconds >= 0, got '${values.skip}'`);
let at = 0;
for (let i = 0; i < samples.length; i++) {
  at += timeDeltas[i] ?? 0;
  if (at < skipUs) continue;
  // A sample lasts until the next one.
  const dt = timeDeltas[i + 1] ?? 0;
  selfUs.set(samples[i], (selfUs.get(samples[i]) ?? 0) + dt);
}
const IDLE = new Set();
for (const n of profile.nodes) if (n.callFrame.functionName === '(idle)') IDLE.add(n.id);
const sampledUs = [...selfUs.values()].reduce((a, b) => a + b, 0);
// Percentages are of busy time: idle (waiting on sockets) is reported but not counted.
const totalUs = [...selfUs].reduce((a, [id, us]) => (IDLE.has(id) ? a : a + us), 0);

function where(url) {
  if (!url) return '(native/vm)';
  if (url.startsWith('wasm://')) return 'undici (llhttp wasm)';
  if (url.startsWith('node:')) return 'node internals';
  const pkg = /node_modules\/(?:\.pnpm\/[^/]+\/node_modules\/)?((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg) return pkg[1];
  const ws = /\/packages\/([^/]+)\//.exec(url);
  if (ws) return `@tollgate/${ws[1]}`;
  return url.replace(/^file:\/\//, '');
}

function short(url) {
  return url.replace(/^file:\/\//, '').replace(/^.*node_modules\/(?:\.pnpm\/[^/]+\/node_modules\/)?/, '').replace(/^.*\/packages\//, 'packages/');
}

const byFn = new Map();
const byWhere = new Map();
for (const [id, us] of selfUs) {
  if (IDLE.has(id)) continue;
  const { callFrame: f } = nodes.get(id);
  const name = f.functionName || '(anonymous)';
  const key = f.url ? `${name}  ${short(f.url)}:${f.lineNumber + 1}` : name;
  byFn.set(key, (byFn.get(key) ?? 0) + us);
  const w = ['(program)', '(garbage collector)'].includes(name) ? name : where(f.url);
  byWhere.set(w, (byWhere.get(w) ?? 0) + us);
}

const pct = (us) => `${((100 * us) / totalUs).toFixed(1).padStart(5)}%`;
const ms = (us) => `${(us / 1000).toFixed(0).padStart(7)} ms`;
console.log(`${positionals[0]}: ${(sampledUs / 1e6).toFixed(1)} s sampled, ${(totalUs / 1e6).toFixed(1)} s busy (percentages are of busy time)`);
console.log('\nself time by location:');
for (const [w, us] of [...byWhere].sort((a, b) => b[1] - a[1]).slice(0, 20)) console.log(`${pct(us)} ${ms(us)}  ${w}`);
console.log(`\ntop ${top} functions by self time:`);
for (const [k, us] of [...byFn].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`${pct(us)} ${ms(us)}  ${k}`);

if (values.inclusive) {
  // Total time of each node's subtree, counted once per function even when it recurses.
  const parent = new Map();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const keyOf = (id) => {
    const f = nodes.get(id).callFrame;
    return f.url ? `${f.functionName || '(anonymous)'}  ${short(f.url)}:${f.lineNumber + 1}` : null;
  };
  const incl = new Map();
  for (const [id, us] of selfUs) {
    if (IDLE.has(id)) continue;
    const seen = new Set();
    for (let cur = id; cur !== undefined; cur = parent.get(cur)) {
      const key = keyOf(cur);
      if (!key || seen.has(key) || !key.includes(values.inclusive)) continue;
      seen.add(key);
      incl.set(key, (incl.get(key) ?? 0) + us);
    }
  }
  console.log(`\ntop ${top} functions matching '${values.inclusive}' by total time (self + callees):`);
  for (const [k, us] of [...incl].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`${pct(us)} ${ms(us)}  ${k}`);
}
