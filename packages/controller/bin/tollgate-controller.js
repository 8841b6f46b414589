#!/usr/bin/env node
// Runs the compiled CLI; `pnpm build` produces dist/.
import { nodeTooOld } from '@tollgate/kit/node-version';

const tooOld = nodeTooOld('tollgate-controller');
if (tooOld) {
  process.stderr.write(`${tooOld}\n`);
  process.exit(1);
}

const { main } = await import('../dist/cli.js');
await main(process.argv.slice(2));
