#!/usr/bin/env node
// Runs the compiled CLI; `pnpm build` produces dist/.
import { refuseOldNode } from '@tollgate/kit/node-version';

refuseOldNode('tollgate-controller');

const { main } = await import('../dist/cli.js');
await main(process.argv.slice(2));
