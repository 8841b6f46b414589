#!/usr/bin/env node
// Runs the compiled CLI; `pnpm build` produces dist/. Imported statically: scripts/gwctl-build.mjs
// bundles this file and everything it imports into one.
import { refuseOldNode } from '@tollgate/kit/node-version';
import { main } from '../dist/cli.js';

refuseOldNode('gwctl');

// A closed pipe (`gwctl trace --local --raw | head -1`) ends gwctl quietly, like other tools.
process.stdout.on('error', (err) => {
  if (err.code === 'EPIPE') process.exit(0);
  throw err;
});

const code = await main(process.argv.slice(2));
// Port-forward sockets and kube clients may keep the loop alive; exit once stdout is flushed.
process.stdout.write('', () => process.exit(code));
