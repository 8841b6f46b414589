// `tollgate`: the standalone proxy. Exit codes in exit-codes.ts (and docs/tollgate.md); every
// failure is one `tollgate: <message>` line on stderr, never a stack.
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { parseHostPort, ValidationError } from '@tollgate/api';
import { TollgateError } from './errors.js';
import { parseConfig, readConfigText } from './config/load-file.js';
import { EXIT, EXIT_CODE_HELP, type ExitCode } from './exit-codes.js';
import { startStandaloneProxy } from './process/standalone.js';

const HELP = () => `tollgate: the Tollgate gateway proxy, standalone

Usage:
  tollgate --file <config.yaml|config.json> [--admin-addr <ip:port>] [--metrics-addr <ip:port>] [--readiness-addr <ip:port>]
  tollgate --check --file <config.yaml>

Options:
  -f, --file <path>            config file (YAML or JSON); edits are picked up while running, and SIGHUP reloads it
      --check                  validate the config file and exit (0 valid, 2 invalid)
      --admin-addr <addr>      admin server, overriding config.adminAddr (default 127.0.0.1:15000)
      --metrics-addr <addr>    Prometheus /metrics, overriding config.metricsAddr (default 0.0.0.0:15020)
      --readiness-addr <addr>  /healthz/ready, overriding config.readinessAddr (default 0.0.0.0:15021)
  -h, --help                   show this help
  -v, --version                print the version

Signals:
  SIGTERM, SIGINT  stop accepting connections, let in-flight requests finish (up to
                   config.drainTimeout, default 30s) and exit 0; a second one exits 1 at once
  SIGHUP           reload the config file now (edits are also picked up by themselves): a
                   good file is applied, a bad one refused with a log line naming the
                   problem while the last good config keeps serving

${EXIT_CODE_HELP}
Examples:
  tollgate -f examples/standalone.yaml
  tollgate --check -f my-gateway.yaml
`;

function version(): string {
  const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };
  return pkg.version;
}

function fail(message: string, code: ExitCode): never {
  process.stderr.write(`tollgate: ${message}\n`);
  process.exit(code);
}

export async function main(argv: string[]): Promise<void> {
  let values: { file?: string; check?: boolean; 'admin-addr'?: string; 'metrics-addr'?: string; 'readiness-addr'?: string; help?: boolean; version?: boolean };
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        file: { type: 'string', short: 'f' },
        check: { type: 'boolean' },
        'admin-addr': { type: 'string' },
        'metrics-addr': { type: 'string' },
        'readiness-addr': { type: 'string' },
        help: { type: 'boolean', short: 'h' },
        version: { type: 'boolean', short: 'v' },
      },
      strict: true,
      allowPositionals: false,
    }));
  } catch (err) {
    fail(`${(err as Error).message}\nRun "tollgate --help" for usage.`, EXIT.USAGE);
  }
  if (values.help) {
    process.stdout.write(HELP());
    return;
  }
  if (values.version) {
    process.stdout.write(`tollgate ${version()}\n`);
    return;
  }
  if (!values.file) fail('missing --file <config.yaml>; run "tollgate --help" for usage', EXIT.USAGE);
  for (const flag of ['admin-addr', 'metrics-addr', 'readiness-addr'] as const) {
    const v = values[flag];
    const r = v === undefined ? null : parseHostPort(v, { ephemeralPort: true });
    if (r && !r.ok) fail(`--${flag}: got "${v}"; ${r.problem}`, EXIT.USAGE);
  }

  try {
    if (values.check) {
      const loaded = parseConfig(values.file, await readConfigText(values.file));
      process.stdout.write(`${loaded.path}: valid (version ${loaded.snapshot.version})\n`);
      return;
    }
    // SIGHUP reloads the config file (as nginx does). One arriving while the proxy starts is
    // kept and served once it runs, instead of killing the process (the default action).
    let reload: () => void = () => void (hupPending = true);
    let hupPending = false;
    process.on('SIGHUP', () => reload());
    const gateway = await startStandaloneProxy({
      file: values.file,
      adminAddr: values['admin-addr'],
      metricsAddr: values['metrics-addr'],
      readinessAddr: values['readiness-addr'],
    });
    let stopping = false;
    const stop = (signal: string) => {
      if (stopping) {
        process.stderr.write(`tollgate: second ${signal}, exiting without waiting\n`);
        process.exit(EXIT.RUNTIME);
      }
      stopping = true;
      gateway.logs.get('proxy').info(`${signal} received: draining in-flight requests`);
      gateway
        .close()
        .then(() => process.exit(EXIT.OK))
        .catch((err: unknown) => fail(`shutdown failed: ${(err as Error).message}`, EXIT.RUNTIME));
    };
    gateway.onShutdownRequest = (reason) => stop(reason);
    process.on('SIGTERM', () => stop('SIGTERM'));
    process.on('SIGINT', () => stop('SIGINT'));
    reload = () => {
      if (stopping) return;
      gateway.logs.get('config').info(`SIGHUP received: reloading ${gateway.source.path}`);
      // The source logs the outcome: reloaded, refused (naming the problem) or unchanged.
      void gateway.source.reload();
    };
    if (hupPending) reload();
  } catch (err) {
    if (err instanceof ValidationError) fail(err.message, EXIT.USAGE);
    if (err instanceof TollgateError) fail(`${err.message} [${err.code}]`, err.code === 'TG_CONFIG_READ' ? EXIT.USAGE : EXIT.RUNTIME);
    // A bug: one line; TOLLGATE_DEBUG=1 adds the stack.
    if (process.env.TOLLGATE_DEBUG && err instanceof Error) process.stderr.write(`${err.stack}\n`);
    fail(`unexpected error: ${err instanceof Error ? err.message : String(err)}`, EXIT.RUNTIME);
  }
}
