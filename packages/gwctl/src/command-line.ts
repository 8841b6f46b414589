// Which command a command line names, decided before commander runs it. Commander prints the
// help of the nearest command it knows when `--help` is given (`gwctl bogus --help` printed the
// root help and exited 0) and answers `unknown command` when a group is given a target
// (`gwctl config gateway/x`); here every word up to the runnable command must be a known
// command, and help is printed only for a command line that is valid apart from `--help`.
import { CommanderError, type Command } from 'commander';
import { usage } from './errors.js';

export type Resolved =
  /** Commander parses and runs the line: `command` is the runnable one (or the root, for --version and no arguments). */
  | { readonly kind: 'run'; readonly command: Command }
  /** Print the help of `command` and exit 0. */
  | { readonly kind: 'help'; readonly command: Command };

const isHelpFlag = (arg: string) => arg === '-h' || arg === '--help';
const isVersionFlag = (arg: string) => arg === '-V' || arg === '--version';

/** `gwctl config all`: the words that name `command`, for messages. */
export function commandPath(command: Command): string {
  const words: string[] = [];
  for (let c: Command | null = command; c; c = c.parent) words.unshift(c.name());
  return words.join(' ');
}

/** A word of the command line as shown in a message: long ones are cut. */
function shown(arg: string): string {
  return arg.length > 60 ? `${arg.slice(0, 60)}…` : arg;
}

/** `a`, `a or b`, `a, b or c` (or with `and`). */
function list(words: readonly string[], last: 'or' | 'and' = 'or'): string {
  return words.length <= 1 ? (words[0] ?? '') : `${words.slice(0, -1).join(', ')} ${last} ${words.at(-1)}`;
}

function subcommands(group: Command): string[] {
  return group.commands.map((c) => c.name());
}

/** The first runnable command under `group`, and whether it takes a target. */
function firstRunnable(group: Command): { path: string; takesTarget: boolean } {
  let c = group;
  while (c.commands.length) c = c.commands.find((s) => !s.commands.length && s.registeredArguments.length) ?? c.commands[0]!;
  return { path: commandPath(c), takesTarget: c.registeredArguments.length > 0 };
}

/** What a group says when `arg` (or nothing) comes where one of its subcommands should. */
function notASubcommand(group: Command, arg: string | undefined, more: boolean): Error {
  const isRoot = !group.parent;
  const names = subcommands(group);
  const path = commandPath(group);
  const needs = isRoot ? `a command is needed: ${list(names)}` : `${path.replace(/^gwctl /, '')} needs a subcommand: ${list(names)}`;
  if (arg === undefined) return usage(`${needs} (see ${path} --help)`);
  if (arg.includes('/')) {
    // A target where a subcommand belongs: show the command line that was probably meant.
    const example = firstRunnable(group);
    return usage(`${needs} (${example.path}${example.takesTarget ? ` ${shown(arg)}` : ''}${more ? ' ...' : ''})`);
  }
  return usage(`unknown command '${shown(arg)}' for ${path}: ${isRoot ? 'the commands are' : 'its subcommands are'} ${list(names, 'and')} (see ${path} --help)`);
}

/**
 * Walks `args` (without the curl arguments after `--`) down the command groups of `root`.
 * Throws a usage error (exit 2) for an unknown command, a target given to a group, a group
 * without its subcommand, an option before the command it belongs to, or an unknown option
 * of a command whose help is asked for.
 */
export function resolveCommand(root: Command, args: readonly string[]): Resolved {
  let command = root;
  let help = false;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (!command.commands.length) return leaf(command, args.slice(i), help);
    if (isHelpFlag(arg) || arg === 'help') {
      // `gwctl help config all` is `gwctl config all --help`.
      help = true;
      continue;
    }
    if (!command.parent && isVersionFlag(arg)) return { kind: 'run', command };
    if (arg.length > 1 && arg.startsWith('-')) {
      const where = command.parent ? 'subcommand' : 'command';
      throw usage(`unknown option '${shown(arg)}' for ${commandPath(command)}: options go after the ${where} (${list(subcommands(command))})`);
    }
    const sub = command.commands.find((c) => c.name() === arg || c.aliases().includes(arg));
    if (!sub) throw notASubcommand(command, arg, i + 1 < args.length);
    command = sub;
  }
  if (!command.commands.length) return leaf(command, [], help);
  if (help) return { kind: 'help', command };
  // No arguments at all: commander prints the root help (on stderr, exit 2).
  if (!command.parent) return { kind: 'run', command };
  throw notASubcommand(command, undefined, false);
}

/**
 * A runnable command with its arguments. With `--help`, its options are parsed first, so that
 * an unknown one (or a bad value) is the usage error it would be without `--help`.
 */
function leaf(command: Command, rest: readonly string[], helpBefore: boolean): Resolved {
  const help = helpBefore || rest.some(isHelpFlag);
  if (!help) return { kind: 'run', command };
  // The help flag is not one of the command's own options: parseOptions leaves it (and
  // everything after the first unknown option) in `unknown`.
  let unknown: string[];
  try {
    ({ unknown } = command.parseOptions([...rest]));
  } catch (err) {
    // A missing or invalid option value.
    if (err instanceof CommanderError) throw usage(commanderMessage(err, command));
    throw err;
  }
  const bad = unknown.find((a) => a.length > 1 && a.startsWith('-') && !isHelpFlag(a));
  if (bad !== undefined) throw usage(`unknown option '${shown(bad)}' for ${commandPath(command)} (see ${commandPath(command)} --help)`);
  return { kind: 'help', command };
}

/** Commander's own message, one line: its suggestion (`(Did you mean --local?)`) joins the first line. */
export function commanderMessage(err: CommanderError, command: Command): string {
  const [first = '', ...rest] = err.message.replace(/^error: /, '').split('\n');
  const path = commandPath(command);
  if (err.code === 'commander.excessArguments') {
    const takes = command.registeredArguments.map((a) => a.name());
    const given = command.args.slice(takes.length).map(shown);
    return `too many arguments for ${path}: it takes ${takes.length === 0 ? 'none' : takes.length === 1 ? `one, the ${takes[0]}` : `${takes.length}: ${takes.join(' ')}`}; remove ${given.join(' ')} (see ${path} --help)`;
  }
  const suggestion = rest.find((l) => l.startsWith('(Did you mean'));
  const where = err.code === 'commander.unknownOption' ? ` for ${path}` : '';
  return `${first.replace(/\.$/, '')}${where} ${suggestion ? suggestion.replace('(Did', '(did') : `(see ${path} --help)`}`;
}
