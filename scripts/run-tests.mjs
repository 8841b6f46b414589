#!/usr/bin/env node
// Runs vitest and ends with one plain summary line ("N passed, N failed, N skipped"), read from
// vitest's JSON report, so any CI reader can count the tests. Exit code is vitest's.
//
// The Gateway API conformance run (e2e/node/conformance.test.ts) is one of the node suites: in
// CI (CI=true) it always runs; elsewhere only with `pnpm conformance` (TOLLGATE_CONFORMANCE=1),
// as it holds the machine's one node for a quarter of an hour (docs/conformance.md). When it
// ran, its report's verdicts are printed after the summary.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const report = `${root}.test-results/vitest.json`;
mkdirSync(`${root}.test-results`, { recursive: true });
const started = Date.now();
const child = spawn(
  process.execPath,
  [`${root}node_modules/vitest/vitest.mjs`, 'run', '--reporter=default', '--reporter=json', `--outputFile.json=${report}`, ...process.argv.slice(2)],
  { cwd: root, stdio: 'inherit' },
);
child.on('exit', (code, signal) => {
  try {
    const r = JSON.parse(readFileSync(report, 'utf8'));
    const skipped = (r.numPendingTests ?? 0) + (r.numTodoTests ?? 0);
    process.stdout.write(`\nTests: ${r.numPassedTests} passed, ${r.numFailedTests} failed, ${skipped} skipped\n`);
  } catch {
    process.stdout.write('\nTests: no report was written (vitest did not finish)\n');
  }
  conformanceSummary();
  process.exit(code ?? (signal ? 1 : 0));
});

/** One line per profile of the conformance report this run wrote, if it wrote one. */
function conformanceSummary() {
  const tools = JSON.parse(readFileSync(`${root}e2e/tools.json`, 'utf8'));
  const version = JSON.parse(readFileSync(`${root}packages/proxy/package.json`, 'utf8')).version;
  const file = `${root}conformance/reports/${tools.gatewayApi}/tollgate-v${version}-GATEWAY-HTTP-report.yaml`;
  if (!existsSync(file) || statSync(file).mtimeMs < started) return;
  const text = readFileSync(file, 'utf8');
  // The report is YAML written by the suite; the two result lines are all this needs.
  const results = [...text.matchAll(/^(?:- | {2})(core|extended):\n(?: {4}failedTests:\n(?: {4}- .*\n)+)? {4}result: (\w+)$/gm)].map((m) => `${m[1]} ${m[2]}`);
  process.stdout.write(`Conformance (GATEWAY-HTTP, Gateway API ${tools.gatewayApi}): ${results.join(', ') || 'no result in the report'}; ${file}\n`);
}
