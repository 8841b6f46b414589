// The words before a command's own arguments: every one must name a command, a group given a
// target or nothing says which subcommands it has, and --help prints help only for a command
// line that is valid apart from it. Each failure is one `gwctl: ...` line on stderr and exit 2.
import { describe, expect, it } from 'vitest';
import { gwctl, gwctlBin, requireBuild } from './helpers.js';

async function usageError(args: string[]): Promise<string> {
  const r = await gwctl(args);
  expect(r.code, `gwctl ${args.join(' ')}: ${r.stderr}`).toBe(2);
  expect(r.stdout, `gwctl ${args.join(' ')}`).toBe('');
  expect(r.stderr.split('\n'), `gwctl ${args.join(' ')}`).toHaveLength(2);
  return r.stderr.trimEnd();
}

describe('a command group given a target or nothing names its subcommands', () => {
  const cases: [string[], string][] = [
    [['config', 'gateway/public'], 'gwctl: config needs a subcommand: all or backends (gwctl config all gateway/public)'],
    [['config', 'gateway/public', '-n', 'edge'], 'gwctl: config needs a subcommand: all or backends (gwctl config all gateway/public ...)'],
    [['proxy', 'config', 'gateway/x'], 'gwctl: proxy config needs a subcommand: all or backends (gwctl proxy config all gateway/x)'],
    [['proxy', 'gateway/x'], 'gwctl: proxy needs a subcommand: trace, config, budgets or log (gwctl proxy trace gateway/x)'],
    [['controller', 'gateway/x'], 'gwctl: controller needs a subcommand: log (gwctl controller log)'],
    [['gateway/x'], 'gwctl: a command is needed: trace, config, budgets, log, proxy or controller (gwctl trace gateway/x)'],
    [['config'], 'gwctl: config needs a subcommand: all or backends (see gwctl config --help)'],
    [['proxy', 'config'], 'gwctl: proxy config needs a subcommand: all or backends (see gwctl proxy config --help)'],
    [['controller'], 'gwctl: controller needs a subcommand: log (see gwctl controller --help)'],
  ];
  for (const [args, message] of cases) {
    it(`gwctl ${args.join(' ')}`, async () => {
      expect(await usageError(args)).toBe(message);
    });
  }
});

describe('an unknown command is exit 2, with or without --help', () => {
  const root = "gwctl: unknown command 'bogus' for gwctl: the commands are trace, config, budgets, log, proxy and controller (see gwctl --help)";
  const config = "gwctl: unknown command 'bogus' for gwctl config: its subcommands are all and backends (see gwctl config --help)";
  const cases: [string[], string][] = [
    [['bogus'], root],
    [['bogus', '--help'], root],
    [['--help', 'bogus'], root],
    [['bogus', '-h'], root],
    [['help', 'bogus'], root],
    [['config', 'bogus', '--help'], config],
    [['help', 'config', 'bogus'], config],
    [['proxy', 'config', 'bogus', '--help'], "gwctl: unknown command 'bogus' for gwctl proxy config: its subcommands are all and backends (see gwctl proxy config --help)"],
    [['controller', 'bogus', '--help'], "gwctl: unknown command 'bogus' for gwctl controller: its subcommands are log (see gwctl controller --help)"],
  ];
  for (const [args, message] of cases) {
    it(`gwctl ${args.join(' ')}`, async () => {
      expect(await usageError(args)).toBe(message);
    });
  }

  it('the binary exits 2 for gwctl bogus --help', async () => {
    requireBuild();
    const r = await gwctlBin(['bogus', '--help']);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe(`${root}\n`);
  });
});

describe('--help of a command that exists prints its help, exit 0', () => {
  const cases: [string[], string][] = [
    [['--help'], 'Usage: gwctl [options] [command]'],
    [['-h'], 'Usage: gwctl [options] [command]'],
    [['help'], 'Usage: gwctl [options] [command]'],
    [['config', '--help'], 'Usage: gwctl config [options] [command]'],
    [['help', 'config'], 'Usage: gwctl config [options] [command]'],
    [['config', 'all', '--help'], 'Usage: gwctl config all [options] [target]'],
    [['help', 'config', 'all'], 'Usage: gwctl config all [options] [target]'],
    [['config', 'all', 'gateway/public', '-n', 'edge', '--help'], 'Usage: gwctl config all [options] [target]'],
    [['proxy', 'config', 'backends', '-h'], 'Usage: gwctl proxy config backends [options] [target]'],
    [['controller', '--help'], 'Usage: gwctl controller [options] [command]'],
    [['controller', 'log', '--help'], 'Usage: gwctl controller log [options]'],
  ];
  for (const [args, usage] of cases) {
    it(`gwctl ${args.join(' ')}`, async () => {
      const r = await gwctl(args);
      expect(r.code).toBe(0);
      expect(r.stderr).toBe('');
      expect(r.stdout.split('\n')[0]).toBe(usage);
    });
  }
});

describe('options and arguments of a command: exit 2 with one line naming the command', () => {
  const cases: [string[], string][] = [
    [['config', 'all', '--bogus'], "gwctl: unknown option '--bogus' for gwctl config all (see gwctl config all --help)"],
    [['config', 'all', '--bogus', '--help'], "gwctl: unknown option '--bogus' for gwctl config all (see gwctl config all --help)"],
    [['config', 'all', '--help', '--bogus'], "gwctl: unknown option '--bogus' for gwctl config all (see gwctl config all --help)"],
    [['config', 'all', '--locl'], "gwctl: unknown option '--locl' for gwctl config all (did you mean --local?)"],
    [['controller', 'log', '--raw'], "gwctl: unknown option '--raw' for gwctl controller log (see gwctl controller log --help)"],
    [['config', 'all', 'gateway/x', '-V'], "gwctl: unknown option '-V' for gwctl config all (see gwctl config all --help)"],
    [['config', 'all', '-o', 'xml', '--help'], "gwctl: option '-o, --output <format>' argument 'xml' is invalid. Allowed choices are table, json, yaml (see gwctl config all --help)"],
    [['log', '--local', '--level'], "gwctl: option '--level <level>' argument missing (see gwctl log --help)"],
    [['-n', 'edge', 'config', 'all'], "gwctl: unknown option '-n' for gwctl: options go after the command (trace, config, budgets, log, proxy or controller)"],
    [['config', '--local', 'all'], "gwctl: unknown option '--local' for gwctl config: options go after the subcommand (all or backends)"],
    [['config', 'all', 'gateway/a', 'gateway/b'], 'gwctl: too many arguments for gwctl config all: it takes one, the target; remove gateway/b (see gwctl config all --help)'],
    [['proxy', 'trace', 'gateway/a', 'extra', 'more'], 'gwctl: too many arguments for gwctl proxy trace: it takes one, the target; remove extra more (see gwctl proxy trace --help)'],
    [['controller', 'log', 'gateway/x'], 'gwctl: too many arguments for gwctl controller log: it takes none; remove gateway/x (see gwctl controller log --help)'],
    [['config', 'all'], 'gwctl: missing target: gateway/<name> (in a cluster) or --local (a standalone proxy)'],
  ];
  for (const [args, message] of cases) {
    it(`gwctl ${args.join(' ')}`, async () => {
      expect(await usageError(args)).toBe(message);
    });
  }
});

it('a long word is cut in the message', async () => {
  const word = `gateway/${'a'.repeat(5000)}`;
  const message = await usageError(['config', word]);
  expect(message.length).toBeLessThan(200);
  expect(message).toBe(`gwctl: config needs a subcommand: all or backends (gwctl config all ${word.slice(0, 60)}…)`);
});
