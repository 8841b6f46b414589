// `gwctl controller log` against a server that follows the controller's /logging contract
// (docs/admin-api.md, "Controller admin API"): the spec §4.3 output, --level, --set, and the
// server's refusals.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { renderLevels } from '../src/commands/controller-log.js';
import { gwctl, startFakeController } from './helpers.js';

let controller: Awaited<ReturnType<typeof startFakeController>>;
let local: string[];

beforeAll(async () => {
  controller = await startFakeController();
  local = ['--local', '--admin-addr', controller.addr];
});
afterAll(async () => {
  await controller.close();
});

const ALL_INFO = [
  'current log level is info,tollgate/syncer=info,tollgate/translator=info,gateway-controller=info,deployer=info',
  '---',
  'tollgate/syncer: info',
  'tollgate/translator: info',
  'gateway-controller: info',
  'deployer: info',
  'default: info',
  '',
].join('\n');

describe('gwctl controller log', () => {
  it('shows the per-component levels, then ---, then <component>: <level> lines', async () => {
    expect(await gwctl(['controller', 'log', ...local])).toEqual({ code: 0, stdout: ALL_INFO, stderr: '' });
  });

  it('--set sets one component, --level all of them', async () => {
    const one = await gwctl(['controller', 'log', ...local, '--set', 'tollgate/translator=debug', '--set', 'deployer=warn']);
    expect(one.code).toBe(0);
    expect(one.stdout).toContain('tollgate/translator: debug\n');
    expect(one.stdout).toContain('deployer: warn\n');
    expect(one.stdout).toMatch(/^current log level is info,tollgate\/syncer=info,tollgate\/translator=debug,gateway-controller=info,deployer=warn\n/);
    expect(controller.levels).toMatchObject({ 'tollgate/translator': 'debug', deployer: 'warn', default: 'info' });
    const all = await gwctl(['controller', 'log', ...local, '--level', 'error']);
    expect(all.stdout).toBe(ALL_INFO.replaceAll('info', 'error'));
    await gwctl(['controller', 'log', ...local, '--level', 'info']);
  });

  it('an unknown component is the controller\'s 400 (exit 8); a bad level never reaches it (exit 2)', async () => {
    const r = await gwctl(['controller', 'log', ...local, '--set', 'nosuch=debug']);
    expect(r.code).toBe(8);
    expect(r.stderr).toBe('gwctl: POST /logging answered 400: unknown component "nosuch"; components: tollgate/syncer, tollgate/translator, gateway-controller, deployer, default\n');
    const bad = await gwctl(['controller', 'log', ...local, '--set', 'deployer=verbose']);
    expect(bad).toEqual({ code: 2, stdout: '', stderr: "gwctl: --set deployer must be one of error, warn, info, debug, trace, got 'verbose'\n" });
    const noEq = await gwctl(['controller', 'log', ...local, '--set', 'deployer']);
    expect(noEq.stderr).toBe("gwctl: --set needs <name>=<level>, got 'deployer'\n");
  });

  it('components the controller adds later are listed after the known ones', () => {
    expect(renderLevels({ default: 'warn', zeta: 'debug', 'tollgate/syncer': 'info' })).toBe(
      'current log level is warn,tollgate/syncer=info,zeta=debug\n---\ntollgate/syncer: info\ndefault: warn\nzeta: debug\n',
    );
  });

  it('an unreachable controller admin server is exit 7', async () => {
    const r = await gwctl(['controller', 'log', '--local', '--admin-addr', '127.0.0.1:1']);
    expect(r.code).toBe(7);
    expect(r.stderr).toMatch(/^gwctl: cannot reach the admin server at 127\.0\.0\.1:1: connect ECONNREFUSED/);
  });
});
