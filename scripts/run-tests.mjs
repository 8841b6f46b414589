#!/usr/bin/env node
// Runs vitest and ends with one plain summary line ("N passed, N failed, N skipped"), read from
// vitest's JSON report, so any CI reader can count the tests. Exit code is vitest's (non-zero
// when any run failed).
//
// A full run (no arguments besides --checks) is two vitest processes at once: the `machine`
// project (the suites on the one e2e node and on podman, one file after another: the longest
// chain) and the `default` project (every other suite, two files at a time). Vitest runs
// its projects' groups one after the other, so in one process the machine chain would only
// start once every other suite had finished. The machine run's lines are prefixed with
// `[machine]`; both JSON reports are merged into .test-results/vitest.json. With arguments
// (files, --project, ...) it is one vitest process, as given.
//
// Then the suites of what must hold across the proxy's threads run once more with every
// in-process gateway on two threads (THREADED_SUITES, lines prefixed `[threads]`).
//
// --checks (`pnpm test`) also runs `pnpm typecheck` and `pnpm lint` beside the tests, their
// output held back and printed at the end, and fails when either fails: they need only the
// build, which is done before.
//
// In CI (CI=true) a skipped test fails the run unless scripts/allowed-skips.mjs lists it: a suite
// that stopped running fails CI instead of passing with less.
//
// The Gateway API conformance run (e2e/node/conformance.test.ts) is one of the node suites: in
// CI (CI=true) it always runs; elsewhere only with `pnpm conformance` (TOLLGATE_CONFORMANCE=1),
// as it holds the machine's one node for a quarter of an hour (docs/conformance.md). When it
// ran, its report's verdicts are printed after the summary. In a full run it comes last, alone,
// once the other two runs have finished: the upstream suite waits at most 60 s for a status it
// expects, and with the default suites' API servers and proxies sharing the two cores its own
// API server answered too slowly for that (a CI run failed so; the same tree passed alone).
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { ALLOWED_SKIPS } from './allowed-skips.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
const CONFORMANCE_SUITE = 'e2e/node/conformance.test.ts';
const resultsDir = `${root}.test-results`;
const report = `${resultsDir}/vitest.json`;
mkdirSync(resultsDir, { recursive: true });
const started = Date.now();
const checks = process.argv.includes('--checks');
const args = process.argv.slice(2).filter((a) => a !== '--checks');

const runs = args.length
  ? [{ name: undefined, report, args }]
  : [
      { name: 'machine', report: `${resultsDir}/vitest-machine.json`, args: ['--project', 'machine', '--exclude', CONFORMANCE_SUITE] },
      { name: 'default', report: `${resultsDir}/vitest-default.json`, args: ['--project', 'default'] },
    ];
/**
 * The suites of what must hold across the proxy's threads (local limits and budgets, traces,
 * reloads, client bounds, the drain on SIGTERM, snapshot sources) once more with every
 * in-process proxy, and every tollgate process they start, on two threads (test/helpers.ts
 * reads TOLLGATE_TEST_PROXY_WORKERS).
 */
const THREADED_SUITES = ['ratelimit-local', 'ratelimit-keyed', 'ratelimit-keyed-consumers', 'ratelimit-reservation', 'ratelimit-overrides', 'ratelimit-gateway-shared', 'admin-budgets', 'trace', 'trace-sessions-cap', 'reload', 'client-bounds', 'drain', 'snapshot-source', 'cluster-mode', 'backend-timeout'].map((f) => `packages/proxy/test/${f}.test.ts`);
/** After the others, alone (a full run only). */
const lastRuns = args.length
  ? []
  : [
      { name: 'threads', report: `${resultsDir}/vitest-threads.json`, args: ['--project', 'default', ...THREADED_SUITES], env: { TOLLGATE_TEST_PROXY_WORKERS: '2' } },
      { name: 'machine', report: `${resultsDir}/vitest-conformance.json`, args: ['--project', 'machine', CONFORMANCE_SUITE] },
    ];
for (const run of [...runs, ...lastRuns]) rmSync(run.report, { force: true });

const children = [];
/** The signal that interrupted the run: no later run starts, and the run exits with it. */
let interrupted = null;
// An interrupted run stops both vitest processes, so each tears down what it started (the e2e
// node's teardown runs in the machine run's worker on SIGINT/SIGTERM), and starts none of the
// runs that would have come after (the threaded suites, the conformance run).
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.on(signal, () => {
    interrupted ??= signal;
    for (const child of children) if (child.exitCode === null) child.kill(signal);
  });
}

const checkRuns = checks ? ['typecheck', 'lint'].map((script) => check(script)) : [];
const codes = await Promise.all(runs.map((run) => vitest(run)));
for (const run of lastRuns) {
  if (interrupted) break;
  codes.push(await vitest(run));
  runs.push(run);
}
const checkResults = await Promise.all(checkRuns);
if (interrupted) {
  process.stdout.write(`\nTest run interrupted (${interrupted}): the runs started were stopped, the later ones not started\n`);
  process.exit(1);
}
const inCI = process.env.CI === 'true' || process.env.CI === '1';
let code = [...codes, ...checkResults.map((c) => c.code)].find((c) => c !== 0) ?? 0;
for (const c of checkResults) if (c.code !== 0) process.stdout.write(`\n${c.output}`);

const reports = runs.map((run) => readReport(run.report)).filter((r) => r !== undefined);
let unexplainedSkips = [];
if (reports.length === runs.length) {
  const merged = runs.length === 1 ? reports[0] : mergeReports(reports);
  if (runs.length > 1) writeFileSync(report, JSON.stringify(merged));
  const skipped = (merged.numPendingTests ?? 0) + (merged.numTodoTests ?? 0);
  process.stdout.write(`\nTests: ${merged.numPassedTests} passed, ${merged.numFailedTests} failed, ${skipped} skipped\n`);
  // The failures again at the very end: a CI log is often read from its tail only.
  const failed = testsWithStatus(merged, ['failed']);
  if (failed.length) process.stdout.write(`Failed (${failed.length}):\n${failed.map((t) => `  ${t.file}: ${t.name}`).join('\n')}\n`);
  if (inCI) unexplainedSkips = skippedTests(merged).filter((t) => !ALLOWED_SKIPS.some((a) => a.file === t.file && (t.name === a.test || (a.test.endsWith(' > ') && t.name.startsWith(a.test)))));
  if (unexplainedSkips.length) {
    process.stdout.write(`Skipped in CI and not in scripts/allowed-skips.mjs (${unexplainedSkips.length}): every suite runs in CI\n${unexplainedSkips.map((t) => `  ${t.file}: ${t.name}`).join('\n')}\n`);
  }
} else {
  process.stdout.write('\nTests: no report was written (vitest did not finish)\n');
}
conformanceSummary();
if (checkResults.length) process.stdout.write(`Checks: ${checkResults.map((c) => `${c.script} ${c.code === 0 ? 'passed' : `failed (exit ${c.code})`} in ${c.seconds} s`).join(', ')}\n`);
process.stdout.write(`Test run: ${Math.round((Date.now() - started) / 1000)} s${lastRuns.length ? ' (machine and default at once, then the threaded suites, then the conformance run)' : ''}\n`);
if (unexplainedSkips.length && code === 0) code = 1;
process.exit(code);

/** Runs `pnpm <script>` with its output held; resolves to its exit code, output and duration. */
function check(script) {
  const t0 = Date.now();
  const child = spawn('pnpm', ['--silent', 'run', script], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  let output = '';
  child.stdout.on('data', (d) => (output += d));
  child.stderr.on('data', (d) => (output += d));
  return new Promise((resolve) =>
    child.on('close', (c, signal) => resolve({ script, code: c ?? (signal ? 1 : 0), output: `${script}:\n${output}`, seconds: Math.round((Date.now() - t0) / 1000) })),
  );
}

/** Runs one vitest process; resolves to its exit code (1 when it died of a signal). */
function vitest(run) {
  const prefix = run.name === 'machine' || run.name === 'threads' ? `[${run.name}] ` : undefined;
  const child = spawn(
    process.execPath,
    [`${root}node_modules/vitest/vitest.mjs`, 'run', '--reporter=default', '--reporter=json', `--outputFile.json=${run.report}`, ...run.args],
    { cwd: root, env: { ...process.env, ...run.env }, stdio: prefix ? ['ignore', 'pipe', 'pipe'] : ['ignore', 'inherit', 'inherit'] },
  );
  children.push(child);
  if (prefix) {
    // Whole lines, prefixed, so the two runs' output interleaves readably.
    createInterface({ input: child.stdout }).on('line', (line) => process.stdout.write(`${prefix}${line}\n`));
    createInterface({ input: child.stderr }).on('line', (line) => process.stderr.write(`${prefix}${line}\n`));
  }
  return new Promise((resolve) => child.on('exit', (c, signal) => resolve(c ?? (signal ? 1 : 0))));
}

function readReport(file) {
  try {
    return JSON.parse(readFileSync(file, 'utf8'));
  } catch {
    return undefined;
  }
}

/** Every skipped or todo test of a vitest JSON report: its file (from the repository root) and full name. */
function skippedTests(merged) {
  return testsWithStatus(merged, ['skipped', 'pending', 'todo']);
}

/** The tests of a merged report whose status is one of `statuses`, by file (relative) and full name. */
function testsWithStatus(merged, statuses) {
  const out = [];
  for (const file of merged.testResults ?? []) {
    const rel = file.name.startsWith(root) ? file.name.slice(root.length) : file.name;
    for (const t of file.assertionResults ?? []) {
      if (statuses.includes(t.status)) out.push({ file: rel, name: [...(t.ancestorTitles ?? []), t.title].join(' > ') });
    }
    // A file that failed before any test ran (import error, hook failure) has no failed test.
    if (statuses.includes('failed') && file.status === 'failed' && !(file.assertionResults ?? []).some((t) => t.status === 'failed')) {
      out.push({ file: rel, name: `(file) ${String(file.message ?? '').split('\n')[0].slice(0, 200)}` });
    }
  }
  return out;
}

/** One report of the shape vitest's JSON reporter writes, from several. */
function mergeReports(list) {
  const sum = (key) => list.reduce((n, r) => n + (r[key] ?? 0), 0);
  const merged = { ...list[0] };
  for (const key of Object.keys(merged)) if (typeof merged[key] === 'number' && key.startsWith('num')) merged[key] = sum(key);
  merged.startTime = Math.min(...list.map((r) => r.startTime ?? Infinity));
  merged.success = list.every((r) => r.success);
  merged.testResults = list.flatMap((r) => r.testResults ?? []);
  return merged;
}

/** One line per profile of the conformance report this run wrote, if it wrote one. */
function conformanceSummary() {
  const tools = JSON.parse(readFileSync(`${root}e2e/tools.json`, 'utf8'));
  const version = JSON.parse(readFileSync(`${root}packages/proxy/package.json`, 'utf8')).version;
  const file = `${resultsDir}/conformance/tollgate-v${version}-report.yaml`;
  if (!existsSync(file) || statSync(file).mtimeMs < started) return;
  const text = readFileSync(file, 'utf8');
  // The report is YAML written by the suite (keys sorted): each entry of `profiles:` has its
  // name and two result lines, which is all this needs.
  const entries = text.slice(text.indexOf('\nprofiles:\n')).split(/\n(?=- )/).slice(1);
  let any = false;
  for (const entry of entries) {
    const name = /^(?:- | {2})name: (\S+)$/m.exec(entry)?.[1];
    if (!name) continue; // another list after the profiles (succeededProvisionalTests)
    any = true;
    const results = [...entry.matchAll(/^(?:- | {2})(core|extended):\n(?: {4}failedTests:\n(?: {4}- .*\n)+)? {4}result: (\w+)$/gm)].map((m) => `${m[1]} ${m[2]}`);
    process.stdout.write(`Conformance (${name}, Gateway API ${tools.gatewayApi}): ${results.join(', ') || 'no result in the report'}; ${file}\n`);
  }
  if (!any) process.stdout.write(`Conformance (Gateway API ${tools.gatewayApi}): no profile in the report; ${file}\n`);
}
