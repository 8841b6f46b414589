#!/usr/bin/env node
// Runs vitest and ends with one plain summary line ("N passed, N failed, N skipped"), read from
// vitest's JSON report, so any CI reader can count the tests. Exit code is vitest's.
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const report = `${root}.test-results/vitest.json`;
mkdirSync(`${root}.test-results`, { recursive: true });
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
  process.exit(code ?? (signal ? 1 : 0));
});
