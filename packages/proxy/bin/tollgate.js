#!/usr/bin/env node
// Runs the compiled CLI; `pnpm build` produces dist/. The V8 defaults are set before the
// proxy's modules load (dist/process/v8-defaults.js says which and why).
import { refuseOldNode } from '@tollgate/kit/node-version';
import { applyV8Defaults } from '../dist/process/v8-defaults.js';

refuseOldNode('tollgate');

applyV8Defaults();
const { main } = await import('../dist/cli.js');
await main(process.argv.slice(2));
