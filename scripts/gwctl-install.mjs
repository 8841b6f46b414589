#!/usr/bin/env node
// `pnpm gwctl:install [--prefix DIR]`: copies the single-file gwctl that `pnpm gwctl:build`
// wrote (dist/gwctl/gwctl) to DIR/bin/gwctl, then runs it once (`gwctl --version`) to show
// that it works there. DIR defaults to /usr/local when its bin directory can be written.
import { spawnSync } from 'node:child_process';
import { accessSync, chmodSync, constants, copyFileSync, existsSync, mkdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const BUILT = join(ROOT, 'dist/gwctl/gwctl');
const DEFAULT_PREFIX = '/usr/local';

const USAGE = `Usage: pnpm gwctl:install [--prefix DIR]

Copies the single-file gwctl (dist/gwctl/gwctl, written by pnpm gwctl:build) to DIR/bin/gwctl.
It needs only Node.js 26 or newer on the machine.

Options:
  --prefix DIR   install into DIR/bin (default: ${DEFAULT_PREFIX}, when it can be written;
                 for yourself: --prefix ~/.local)
  -h, --help     this text
`;

function fail(message, code = 1) {
  process.stderr.write(`gwctl:install: ${message}\n`);
  process.exit(code);
}

/** `~` and `~/x` (a shell expands them only at the start of a word, not in --prefix=~/x). */
function expandHome(path) {
  return path === '~' || path.startsWith('~/') ? join(homedir(), path.slice(1)) : path;
}

function options() {
  let values;
  try {
    ({ values } = parseArgs({ options: { prefix: { type: 'string' }, help: { type: 'boolean', short: 'h' } }, strict: true, allowPositionals: false }));
  } catch (err) {
    return fail(`${err.message} (see --help)`, 2);
  }
  if (values.help) {
    process.stdout.write(USAGE);
    process.exit(0);
  }
  if (values.prefix === '') fail('--prefix needs a directory (see --help)', 2);
  return { prefix: values.prefix === undefined ? undefined : resolve(expandHome(values.prefix)) };
}

function writable(dir) {
  try {
    accessSync(dir, constants.W_OK);
    return true;
  } catch {
    return false;
  }
}

/** DIR/bin, created if missing; fails with what to do when it cannot be written. */
function binDir(prefix) {
  const bin = join(prefix ?? DEFAULT_PREFIX, 'bin');
  const hint = prefix === undefined ? 'run as root, or install for yourself: pnpm gwctl:install --prefix ~/.local' : 'choose a directory you can write';
  try {
    mkdirSync(bin, { recursive: true });
  } catch (err) {
    fail(`cannot create ${bin}: ${err.code ?? err.message} (${hint})`);
  }
  if (!statSync(bin).isDirectory()) fail(`${bin} is not a directory (${hint})`);
  if (!writable(bin)) fail(`${bin} is not writable (${hint})`);
  return bin;
}

function main() {
  const { prefix } = options();
  if (!existsSync(BUILT)) fail('dist/gwctl/gwctl is missing: run pnpm gwctl:build first');
  const bin = binDir(prefix);
  const target = join(bin, 'gwctl');
  // A copy beside the target, renamed over it: a gwctl running meanwhile keeps its file.
  const partial = join(bin, `.gwctl.${process.pid}.tmp`);
  try {
    copyFileSync(BUILT, partial);
    chmodSync(partial, 0o755);
    renameSync(partial, target);
  } catch (err) {
    rmSync(partial, { force: true });
    fail(`cannot write ${target}: ${err.code ?? err.message}`);
  }
  const run = spawnSync(process.execPath, [target, '--version'], { encoding: 'utf8' });
  if (run.status !== 0) fail(`installed ${target}, but \`gwctl --version\` failed: ${(run.stderr || run.stdout).trim()}`);
  process.stdout.write(`gwctl ${run.stdout.trim()} installed: ${target}\n`);
  const onPath = (process.env.PATH ?? '').split(delimiter).some((d) => d && resolve(d) === bin);
  if (!onPath) process.stdout.write(`${bin} is not on your PATH; add it, e.g. export PATH="${bin}:$PATH"\n`);
}

main();
