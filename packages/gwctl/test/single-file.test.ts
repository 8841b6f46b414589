// gwctl for users: `pnpm gwctl:build` (scripts/gwctl-build.mjs, after `pnpm build`) writes one
// executable file and an npm package of it; `pnpm gwctl:install --prefix DIR` copies the file
// to DIR/bin. Both run here outside the repository: from a temporary directory, with a PATH of
// only the install's bin directory and the node binary's (no node_modules of the repository
// reachable), against a real standalone proxy, a refused Kubernetes API server and, for the
// terminal UI (ink and its WebAssembly layout engine), a real terminal in tmux.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHAT_BODY, freePort, requireBuild, runProgram, startProxy, type Proxy } from './helpers.js';
import { tmuxAvailable, tmuxServer } from './tmux-pane.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const VERSION = (JSON.parse(readFileSync(join(ROOT, 'packages/gwctl/package.json'), 'utf8')) as { version: string }).version;
const TGZ = join(ROOT, `dist/gwctl/tollgate-gwctl-${VERSION}.tgz`);
const NODE_DIR = dirname(process.execPath);
const CI = process.env.CI === 'true' || process.env.CI === '1';

const run = (command: string, args: readonly string[], opts: { cwd?: string; env?: NodeJS.ProcessEnv } = {}) => runProgram(command, args, { cwd: ROOT, ...opts });

/** A node binary older than 26 on this machine, if there is one (Debian's, say). */
function olderNode(): string | undefined {
  for (const node of ['/usr/bin/node', '/usr/local/bin/node']) {
    const r = spawnSync(node, ['-p', 'process.versions.node.split(".")[0]'], { encoding: 'utf8' });
    if (r.status === 0 && Number(r.stdout.trim()) < 26) return node;
  }
  return undefined;
}

function npmAvailable(): boolean {
  if (spawnSync('npm', ['--version'], { encoding: 'utf8' }).status === 0) return true;
  const message = 'npm is not installed: the test of `npm install -g <tgz>` needs it (Debian: apt-get install -y npm)';
  if (CI) throw new Error(message);
  console.warn(`skipping the npm install test: ${message}`);
  return false;
}

describe('the single-file gwctl, installed outside the repository', () => {
  let dir: string;
  let prefix: string;
  let proxy: Proxy;
  /** Runs the installed gwctl by name, found on a PATH of its bin directory and node's. */
  const gwctl = (args: readonly string[], bin = join(prefix, 'bin')) =>
    run('gwctl', args, { cwd: join(dir, 'cwd'), env: { PATH: `${bin}${delimiter}${NODE_DIR}`, HOME: join(dir, 'home') } });

  beforeAll(async () => {
    requireBuild();
    dir = mkdtempSync(join(tmpdir(), 'gwctl-single-file-'));
    prefix = join(dir, 'prefix');
    for (const sub of ['cwd', 'home']) mkdirSync(join(dir, sub));
    const built = await run(process.execPath, [join(ROOT, 'scripts/gwctl-build.mjs')]);
    if (built.code !== 0 || built.stderr) throw new Error(`scripts/gwctl-build.mjs exited with ${built.code}: ${built.stderr}`);
    proxy = await startProxy();
  }, 180_000);
  afterAll(async () => {
    await proxy?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('pnpm gwctl:install --prefix DIR copies it to DIR/bin/gwctl and says so, with the PATH hint', async () => {
    const r = await run(process.execPath, [join(ROOT, 'scripts/gwctl-install.mjs'), '--prefix', prefix], { env: { PATH: NODE_DIR, HOME: join(dir, 'home') } });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(`gwctl ${VERSION} installed: ${prefix}/bin/gwctl\n${prefix}/bin is not on your PATH; add it, e.g. export PATH="${prefix}/bin:$PATH"\n`);
    expect(readFileSync(join(prefix, 'bin/gwctl'), 'utf8').slice(0, 20)).toBe('#!/usr/bin/env node\n');
  });

  it('--version is the package version, --help the root help, from a directory with no node_modules', async () => {
    expect(existsSync(join(dir, 'node_modules')) || existsSync(join(tmpdir(), 'node_modules'))).toBe(false);
    const version = await gwctl(['--version']);
    expect(version).toEqual({ code: 0, stdout: `${VERSION}\n`, stderr: '' });
    const help = await gwctl(['--help']);
    expect(help.code).toBe(0);
    expect(help.stderr).toBe('');
    expect(help.stdout).toMatch(/^Usage: gwctl \[options\] \[command\]\n/);
    expect(help.stdout).toContain('Exit codes:\n  0    success');
  });

  it('config all, log and a raw trace against a real standalone proxy', async () => {
    const config = await gwctl(['config', 'all', '--local', '--admin-addr', proxy.adminAddr]);
    expect(config.stderr).toBe('');
    expect(config.code).toBe(0);
    expect(config.stdout).toContain('LISTENERS');
    expect(config.stdout).toMatch(/^main\/chat +api\.example\.com +\/v1\* /m);
    const log = await gwctl(['log', '--local', '--admin-addr', proxy.adminAddr, '--set', 'upstream=debug']);
    expect(log).toEqual({ code: 0, stdout: 'current log level is info,upstream=debug\n', stderr: '' });
    await gwctl(['log', '--local', '--admin-addr', proxy.adminAddr, '--reset']);
    // The trace stream's events are read by the bundled SSE parser and checked against the
    // TraceEvent schema by the bundled ajv.
    const trace = await gwctl(['trace', '--local', '--admin-addr', proxy.adminAddr, '--raw', '--port', String(proxy.port), '--', 'http://api.example.com/v1/chat/completions', '--json', CHAT_BODY]);
    expect(trace.code, trace.stderr).toBe(0);
    const types = trace.stdout.trimEnd().split('\n').map((l) => (JSON.parse(l) as { message: { type: string } }).message.type);
    expect(types[0]).toBe('requestStarted');
    expect(types.at(-1)).toBe('requestFinished');
    expect(types).toContain('backendCallResult');
  });

  it('a cluster target loads the bundled Kubernetes client: a refused API server is exit 4', async () => {
    const port = await freePort();
    const kubeconfig = join(dir, 'kubeconfig');
    writeFileSync(
      kubeconfig,
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [{ name: 'c', cluster: { server: `https://127.0.0.1:${port}`, 'insecure-skip-tls-verify': true } }],
        users: [{ name: 'u', user: { token: 't' } }],
        contexts: [{ name: 'ctx', context: { cluster: 'c', user: 'u', namespace: 'edge' } }],
        'current-context': 'ctx',
      }),
    );
    const r = await gwctl(['config', 'all', 'gateway/public', '--kubeconfig', kubeconfig]);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(new RegExp(`^gwctl: cannot get Gateway public in namespace "edge" \\(server https://127\\.0\\.0\\.1:${port}\\): .*ECONNREFUSED.*\\n$`));
    expect(r.code).toBe(4);
  });

  const older = olderNode();
  it.skipIf(older === undefined)(`an older Node.js (${older ?? 'none on this machine'}) gets one line: exit 1`, async () => {
    const r = await run(older!, [join(prefix, 'bin/gwctl'), '--version'], { cwd: join(dir, 'cwd'), env: { PATH: NODE_DIR, HOME: join(dir, 'home') } });
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/^gwctl: needs Node\.js 26 or newer; this is Node\.js v\d+\.\d+\.\d+ \(https:\/\/nodejs\.org\)\n$/);
    expect(r.code).toBe(1);
  });

  describe.skipIf(!tmuxAvailable())('the terminal UI in a real terminal (tmux, 80x24)', () => {
    const tmux = tmuxServer('single-file');
    afterAll(() => tmux.kill());

    it('inject mode shows the traced request; q prints the response and exits 0 (DEV=true, ink\'s DevTools switch, changes nothing)', async () => {
      const env = ['env', '-i', `PATH=${join(prefix, 'bin')}${delimiter}${NODE_DIR}`, `HOME=${join(dir, 'home')}`, 'TERM=xterm-256color', 'DEV=true'];
      const pane = tmux.startPane('inject', [...env, 'gwctl', 'trace', '--local', '--admin-addr', proxy.adminAddr, '--port', String(proxy.port), '--', 'http://api.example.com/v1/chat/completions', '--json', CHAT_BODY]);
      const screen = await pane.until((s) => s.includes('Traced 12 events; response 200 OK'), 'the traced request');
      expect(screen.split('\n')[0]).toMatch(/^gwctl trace 127\.0\.0\.1:\d+ {2}12 events +tab\/↑↓\/←→ e\/s\/d q:quit$/);
      expect(screen).toMatch(/Backend Result {2}status=200 in /);
      pane.keys('q');
      await pane.until(() => pane.exitStatus() !== null, 'gwctl to exit');
      expect(pane.exitStatus()).toBe(0);
      expect(pane.screen()).toContain('"object":"chat.completion"');
    });
  });

  describe.skipIf(!npmAvailable())('npm install -g of the package', () => {
    it('installs offline from the .tgz (one file, no dependencies); the installed gwctl runs', async () => {
      const npmPrefix = join(dir, 'npm-prefix');
      const r = await run('npm', ['install', '-g', '--prefix', npmPrefix, '--offline', '--no-audit', '--no-fund', '--cache', join(dir, 'npm-cache'), TGZ], {
        cwd: join(dir, 'cwd'),
        env: { ...process.env, PATH: `${NODE_DIR}${delimiter}${process.env.PATH ?? ''}`, HOME: join(dir, 'home') },
      });
      expect(r.code, r.stderr).toBe(0);
      const installed = join(npmPrefix, 'lib/node_modules/@tollgate/gwctl');
      const manifest = JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8')) as Record<string, unknown>;
      expect(manifest).toMatchObject({ name: '@tollgate/gwctl', version: VERSION, license: 'Apache-2.0', bin: { gwctl: 'gwctl.js' }, engines: { node: '>=26' } });
      expect(manifest.dependencies).toBeUndefined();
      expect(readFileSync(join(installed, 'LICENSE'), 'utf8')).toContain('Apache License\n                           Version 2.0, January 2004');
      expect(readFileSync(join(installed, 'README.md'), 'utf8')).toContain(`npm install -g ./tollgate-gwctl-${VERSION}.tgz`);
      expect(readFileSync(join(installed, 'THIRD-PARTY-LICENSES.txt'), 'utf8')).toMatch(/^@kubernetes\/client-node \S+ \(Apache-2\.0\)$/m);
      const version = await gwctl(['--version'], join(npmPrefix, 'bin'));
      expect(version).toEqual({ code: 0, stdout: `${VERSION}\n`, stderr: '' });
    });
  });

  describe('pnpm gwctl:install: its own flags', () => {
    const install = (args: string[]) => run(process.execPath, [join(ROOT, 'scripts/gwctl-install.mjs'), ...args], { env: { PATH: NODE_DIR } });

    it('--help prints the usage, exit 0; an unknown option or an argument is exit 2', async () => {
      const help = await install(['--help']);
      expect(help.code).toBe(0);
      expect(help.stdout).toMatch(/^Usage: pnpm gwctl:install \[--prefix DIR\]\n/);
      expect(help.stdout).toContain('--prefix ~/.local');
      const bogus = await install(['--bogus']);
      expect(bogus).toEqual({ code: 2, stdout: '', stderr: "gwctl:install: Unknown option '--bogus' (see --help)\n" });
      const extra = await install(['somewhere']);
      expect(extra.code).toBe(2);
      expect(extra.stderr).toMatch(/^gwctl:install: Unexpected argument 'somewhere'/);
    });

    it('a prefix whose bin cannot be made is exit 1 naming it', async () => {
      writeFileSync(join(dir, 'file'), '');
      const r = await install(['--prefix', join(dir, 'file')]);
      expect(r).toEqual({ code: 1, stdout: '', stderr: `gwctl:install: cannot create ${join(dir, 'file')}/bin: ENOTDIR (choose a directory you can write)\n` });
    });
  });
});
