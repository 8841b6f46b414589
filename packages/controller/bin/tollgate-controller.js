#!/usr/bin/env node
// Runs the compiled CLI; `pnpm build` produces dist/.
import { main } from '../dist/cli.js';

await main(process.argv.slice(2));
