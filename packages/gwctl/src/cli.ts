// gwctl: the command line of Tollgate (interface spec §4.3). Every command is also reachable
// with `proxy` before it (`gwctl proxy trace` is `gwctl trace`). Failures are one
// `gwctl: <message>` line on stderr and a documented exit code (errors.ts, docs/gwctl.md).
import { parseDuration, parsePort } from '@tollgate/api';
import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import { budgets, type BudgetsFlags } from './commands/budgets.js';
import { configAll, configBackends, type BackendsFlags, type ConfigFlags } from './commands/config.js';
import { controllerLog, type ControllerLogFlags } from './commands/controller-log.js';
import { proxyLog, type LogFlags } from './commands/log.js';
import { trace, type TraceFlags } from './commands/trace.js';
import { commanderMessage, resolveCommand } from './command-line.js';
import { EXIT, EXIT_CODE_HELP, GwctlError, describe, usage } from './errors.js';
import { processIo, type Io } from './io.js';
import { CONTROLLER_NAMESPACE } from './target/resolve.js';
import { DEFAULT_TIMEOUT_MS, streamIdleMs, TRACE_KEEPALIVE_MS } from './target/target.js';
import { version } from './version.js';

export { EXIT, GwctlError } from './errors.js';
export type { Io } from './io.js';

/** --timeout: a duration such as 500ms, 10s or 1m, from 1ms to 1h. */
function timeoutMs(value: string): number {
  let ms: number;
  try {
    ms = parseDuration(value);
  } catch {
    throw new InvalidArgumentError('must be a duration such as 500ms, 10s or 1m.');
  }
  if (ms < 1 || ms > 3_600_000) throw new InvalidArgumentError('must be from 1ms to 1h.');
  return ms;
}

function portNumber(value: string): number {
  const r = parsePort(value);
  if (!r.ok) throw new InvalidArgumentError(`${r.problem}.`);
  return r.value;
}

const collect = (value: string, previous: string[] = []) => [...previous, value];

/** --limit of budgets: rows, as the admin server's ?limit= takes them. */
function rowLimit(value: string): number {
  const n = /^[0-9]{1,4}$/.test(value) ? Number(value) : NaN;
  if (!(n >= 1 && n <= 1000)) throw new InvalidArgumentError('must be a whole number from 1 to 1000.');
  return n;
}

const examples = (lines: string[]) => `\nExamples:\n${lines.map((l) => `  ${l}`).join('\n')}\n`;

function targetOptions(cmd: Command, kind: 'gateway' | 'controller'): Command {
  const port = kind === 'gateway' ? 15000 : 9095;
  return cmd
    .option('-n, --namespace <namespace>', kind === 'gateway' ? "namespace of the Gateway (default: the kubeconfig context's namespace)" : `namespace of the controller (default: ${CONTROLLER_NAMESPACE})`)
    .option('--context <name>', 'kubeconfig context to use (default: the current context)')
    .option('--kubeconfig <path>', 'kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)')
    .option('--local', `talk to an admin server on this machine instead of a pod (default address 127.0.0.1:${port})`)
    .option('--admin-addr <host:port>', `admin server address with --local (default: 127.0.0.1:${port})`)
    .option(
      '--timeout <duration>',
      `how long to wait for the admin server to connect, to answer, and between two bytes of an answer (default: ${DEFAULT_TIMEOUT_MS / 1000}s; a trace stream may go ${streamIdleMs(0) / 1000}s without a byte, or --timeout if longer: its keepalives come every ${TRACE_KEEPALIVE_MS / 1000}s)`,
      timeoutMs,
    );
}

type Run = (action: () => Promise<number | void>) => Promise<void>;

function addProxyCommands(parent: Command, run: Run, curlArgs: readonly string[] | undefined, io: Io, prefix: string): void {
  const noCurl = () => {
    if (curlArgs !== undefined) throw usage('arguments after -- are only for trace inject mode');
  };

  targetOptions(
    parent
      .command('trace')
      .summary('trace the next request through a gateway')
      .description(
        'Arms a trace session on the proxy admin server and shows how the next request is processed: ' +
          'route selection, policies, backend call and response, one event per step.\n\n' +
          'Watch mode (no --port) traces the next request from any client. Inject mode (--port P -- URL ' +
          '[curl args]) sends the request itself to listener port P, with the URL\'s host as Host header, ' +
          'and traces only that request. Curl arguments: -X, -H, -d/--data, --data-raw, --data-binary ' +
          '(with @file), --json, -A, -i (print the response status line and headers), -s.\n\n' +
          'Without --raw an interactive terminal UI opens (tab: switch pane, arrows: move or scroll, ' +
          'e: event JSON, s: request/response state, d: diff against the previous snapshot, q: quit); ' +
          'the response of inject mode is printed after it closes. With --raw, stdout carries only the ' +
          'events as JSON Lines and the response goes to stderr.',
      )
      .argument('[target]', 'gateway/<name>')
      .option('--raw', 'print the events as JSON Lines instead of opening the terminal UI')
      .option('--port <listener_port>', 'inject mode: the listener port to send the request after -- to', portNumber)
      .addHelpText(
        'after',
        examples([
          `gwctl ${prefix}trace gateway/public -n edge`,
          `gwctl ${prefix}trace gateway/public --port 8080 -- http://api.example.com/v1/chat/completions --json '{"model":"m","messages":[]}'`,
          `gwctl ${prefix}trace --local --raw | jq .message.type`,
          `gwctl ${prefix}trace --local --port 3000 --raw -- http://api.example.com/v1/models -H 'x-team: a'`,
        ]),
      ),
    'gateway',
  ).action((target: string | undefined, flags: TraceFlags) => run(() => trace(target, flags, curlArgs, io)));

  const config = parent.command('config').summary('show the loaded configuration of a gateway').description('Shows the configuration the proxy has loaded (its /config_dump).');
  const output = () => new Option('-o, --output <format>', 'output format').choices(['table', 'json', 'yaml']).default('table');
  targetOptions(
    config
      .command('all')
      .summary('routes, backends and policies')
      .description('Summary of the loaded listeners, routes, backends and policies. -o json|yaml prints the whole /config_dump.')
      .argument('[target]', 'gateway/<name>')
      .addOption(output())
      .option('--file <dump.json>', 'render a saved /config_dump JSON file instead of asking a proxy')
      .addHelpText(
        'after',
        examples([
          `gwctl ${prefix}config all gateway/public -n edge`,
          `gwctl ${prefix}config all gateway/public -o yaml`,
          `curl -s 127.0.0.1:15000/config_dump > dump.json && gwctl ${prefix}config all --file dump.json`,
        ]),
      ),
    'gateway',
  ).action((target: string | undefined, flags: ConfigFlags) => run(async () => (noCurl(), configAll(target, flags, io))));
  targetOptions(
    config
      .command('backends')
      .summary('backend and endpoint health table')
      .description(
        'Backends and their endpoints: HEALTH (moving average of success, 0 to 1), REQUESTS and LATENCY (moving average). -o wide adds INFLIGHT (requests in flight) and EJECTED (until when an endpoint that failed to connect is avoided).',
      )
      .argument('[target]', 'gateway/<name>')
      .addOption(new Option('-o, --output <format>', 'output format').choices(['table', 'wide', 'json', 'yaml']).default('table'))
      .option('--file <dump.json>', 'render a saved /config_dump JSON file instead of asking a proxy')
      .addHelpText('after', examples([`gwctl ${prefix}config backends gateway/public -n edge`, `gwctl ${prefix}config backends gateway/public -o wide`, `gwctl ${prefix}config backends --local -o json`])),
    'gateway',
  ).action((target: string | undefined, flags: BackendsFlags) => run(async () => (noCurl(), configBackends(target, flags, io))));

  targetOptions(
    parent
      .command('budgets')
      .summary('budgets of the keyed rate limits per key, most used first')
      .description(
        'The budgets of the keyed rate limits (by consumer, group, claim, header or expression) per key value: ' +
          'USED, LIMIT and REMAINING in the current window and the time to its RESET, most used first (by the share of ' +
          'the limit spent). Local budgets are counted by each proxy: for a Gateway, every Ready proxy is asked and a ' +
          "key's local budget is the sum over them (-o json lists each proxy's numbers). Global budgets are counted by " +
          'the rate limit service: the row is the last answer it gave a proxy for the key (SOURCE global*). Keys a ' +
          'client authenticates with (an API key header, Authorization, Cookie) are shown as a hash, never as sent.',
      )
      .argument('[target]', 'gateway/<name>')
      .addOption(new Option('-o, --output <format>', 'output format').choices(['table', 'wide', 'json', 'yaml']).default('table'))
      .option('--limit <rows>', 'rows to show, 1 to 1000 (default: 100); each proxy is asked for as many', rowLimit)
      .option('--key <value>', 'only this key value, as listed')
      .option('--scope <scope>', 'only the budgets of this route (listener/route) or listener')
      .option('--by <kind>', 'only keys of this kind: consumer, consumer_group, claim.<name>, header.<name> or key')
      .addOption(new Option('--source <source>', 'only local or only global budgets').choices(['local', 'global']))
      .addHelpText(
        'after',
        examples([
          `gwctl ${prefix}budgets gateway/public -n edge`,
          `gwctl ${prefix}budgets gateway/public --by consumer --limit 10`,
          `gwctl ${prefix}budgets gateway/public --key alice -o json`,
          `gwctl ${prefix}budgets --local --admin-addr 127.0.0.1:15000 -o wide`,
        ]),
      ),
    'gateway',
  ).action((target: string | undefined, flags: BudgetsFlags) => run(async () => (noCurl(), budgets(target, flags, io))));

  targetOptions(
    parent
      .command('log')
      .summary("show or set a gateway's log level")
      .description(
        'Without flags prints the current log directive of the proxy. --level sets the global level ' +
          '(module entries are kept); --set <module>=<level> sets one module (repeatable); --reset returns ' +
          'to the start-up directive. Levels: error, warn, info, debug, trace. Modules: proxy, config, ' +
          'routing, upstream, admin, ratelimit, auth, trace.',
      )
      .argument('[target]', 'gateway/<name>')
      .option('--level <level>', 'set the global level')
      .option('--set <module=level>', 'set the level of one module (repeatable)', collect)
      .option('--reset', 'return to the start-up directive')
      .addHelpText(
        'after',
        examples([`gwctl ${prefix}log gateway/public -n edge`, `gwctl ${prefix}log gateway/public --level debug`, `gwctl ${prefix}log --local --set upstream=trace`]),
      ),
    'gateway',
  ).action((target: string | undefined, flags: LogFlags) => run(async () => (noCurl(), proxyLog(target, flags, io))));
}

function build(io: Io, curlArgs: readonly string[] | undefined, setCode: (code: number) => void): Command {
  const run: Run = async (action) => {
    const code = await action();
    setCode(typeof code === 'number' ? code : EXIT.OK);
  };
  const program = new Command('gwctl')
    .description('Inspect and debug Tollgate gateways: trace a request, show the loaded config and the budgets in use, set log levels.')
    .version(version())
    // Root options (--version, --help) only before the command: `gwctl config all -V` is an
    // unknown option of `config all`, not the version.
    .enablePositionalOptions()
    .exitOverride()
    .showSuggestionAfterError(true)
    .configureOutput({
      writeOut: (s) => void io.stdout.write(s),
      writeErr: (s) => void io.stderr.write(s),
      outputError: () => undefined,
    })
    .addHelpText(
      'after',
      `\nTargets:\n  gateway/<name>   the Gateway <name> (-n, --context, --kubeconfig): finds a Running and Ready pod labelled\n                   gateway.networking.k8s.io/gateway-name=<name> and port-forwards to its admin port 15000\n  --local          a standalone proxy's admin server on 127.0.0.1:15000 (--admin-addr changes it)\n\n` +
        `Every command is also available as 'gwctl proxy <command>'.\n\n${EXIT_CODE_HELP}\n` +
        examples(['gwctl trace gateway/public -n edge', 'gwctl config backends --local', 'gwctl log gateway/public --set upstream=debug', 'gwctl controller log --set tollgate/translator=debug']),
    );

  addProxyCommands(program, run, curlArgs, io, '');
  addProxyCommands(program.command('proxy').description('The proxy commands (the same as without "proxy").'), run, curlArgs, io, 'proxy ');

  const controller = program.command('controller').description('Commands for the Tollgate controller.');
  targetOptions(
    controller
      .command('log')
      .summary("show or set the controller's log levels")
      .description(
        'Prints the per-component log levels of the controller (as a --log-level directive), then ---, ' +
          'then one <component>: <level> line per component. --level sets every component; --set ' +
          '<component>=<level> sets one (repeatable). Components: tollgate/syncer, tollgate/translator, ' +
          'gateway-controller, deployer, default. The controller pod is found in tollgate-system by the ' +
          'labels app.kubernetes.io/name=tollgate,app.kubernetes.io/component=controller and reached ' +
          'through a port-forward to its admin port 9095.',
      )
      .option('--level <level>', 'set every component to this level')
      .option('--set <component=level>', 'set one component (repeatable)', collect)
      .addHelpText(
        'after',
        examples(['gwctl controller log', 'gwctl controller log --level debug', 'gwctl controller log --set tollgate/syncer=debug --set deployer=warn', 'gwctl controller log --local --admin-addr 127.0.0.1:9095']),
      ),
    'controller',
  ).action((flags: ControllerLogFlags) =>
    run(async () => {
      if (curlArgs !== undefined) throw usage('arguments after -- are only for trace inject mode');
      await controllerLog(flags, io);
    }),
  );
  return program;
}

function report(err: unknown, io: Io, command: Command): number {
  if (err instanceof CommanderError) {
    if (err.code === 'commander.helpDisplayed' || err.code === 'commander.version') return EXIT.OK;
    if (err.code === 'commander.help') return err.exitCode === 0 ? EXIT.OK : EXIT.USAGE;
    io.stderr.write(`gwctl: ${commanderMessage(err, command)}\n`);
    return EXIT.USAGE;
  }
  if (err instanceof GwctlError) {
    io.stderr.write(`gwctl: ${err.message.split('\n')[0]}\n`);
    return err.exitCode;
  }
  io.stderr.write(`gwctl: unexpected error: ${describe(err).split('\n')[0]}\n`);
  if (io.env.GWCTL_DEBUG && err instanceof Error) io.stderr.write(`${err.stack}\n`);
  return EXIT.INTERNAL;
}

/** Runs gwctl with `argv` (without node and the script); resolves with the exit code. */
export async function main(argv: readonly string[], io: Io = processIo()): Promise<number> {
  const dd = argv.indexOf('--');
  const args = dd >= 0 ? argv.slice(0, dd) : [...argv];
  const curlArgs = dd >= 0 ? argv.slice(dd + 1) : undefined;
  let code: number = EXIT.OK;
  const program = build(io, curlArgs, (c) => (code = c));
  let command = program;
  try {
    const resolved = resolveCommand(program, args);
    command = resolved.command;
    if (resolved.kind === 'help') {
      command.outputHelp();
      return EXIT.OK;
    }
    await program.parseAsync(args, { from: 'user' });
    return code;
  } catch (err) {
    return report(err, io, command);
  }
}
