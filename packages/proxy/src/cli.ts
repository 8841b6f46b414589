// `tollgate`: the proxy, standalone (`--file`) or in cluster mode (`--controller`). Exit codes in exit-codes.ts (and docs/tollgate.md); every
// failure is one `tollgate: <message>` line on stderr, never a stack.
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { parseArgs } from 'node:util';
import { parseHostPort, ValidationError } from '@tollgate/api';
import { TollgateError } from './errors.js';
import { parseConfig, readConfigText } from './config/load-file.js';
import { EXIT, EXIT_CODE_HELP, type ExitCode } from './exit-codes.js';
import type { ProxyProcess } from './process/proxy-process.js';
import { startStandaloneProxy } from './process/standalone.js';

const HELP = () => `tollgate: the Tollgate gateway proxy

Usage:
  tollgate --file <config.yaml|config.json> [--admin-addr <ip:port>] [--metrics-addr <ip:port>] [--readiness-addr <ip:port>]
  tollgate --check --file <config.yaml>
  tollgate --controller <host:port> --gateway <namespace>/<name> --controller-plaintext [--admin-addr ...]

Options:
  -f, --file <path>            config file (YAML or JSON); edits are picked up while running, and SIGHUP reloads it
      --check                  validate the config file and exit (0 valid, 2 invalid)
      --controller <host:port> cluster mode: take routing from the controller's snapshot stream (env TOLLGATE_CONTROLLER)
      --gateway <ns>/<name>    the Gateway this proxy serves, in cluster mode (env TOLLGATE_GATEWAY); the pod's
                               name and namespace come from POD_NAME and POD_NAMESPACE (the downward API)
      --controller-plaintext   development only: connect to the controller without TLS (env
                               TOLLGATE_CONTROLLER_PLAINTEXT=true); required, as the stream has no TLS yet
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
  tollgate --controller 127.0.0.1:9978 --gateway default/public --controller-plaintext
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
  let values: {
    file?: string;
    check?: boolean;
    controller?: string;
    gateway?: string;
    'controller-plaintext'?: boolean;
    'admin-addr'?: string;
    'metrics-addr'?: string;
    'readiness-addr'?: string;
    help?: boolean;
    version?: boolean;
  };
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        file: { type: 'string', short: 'f' },
        check: { type: 'boolean' },
        controller: { type: 'string' },
        gateway: { type: 'string' },
        'controller-plaintext': { type: 'boolean' },
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
  const cluster = clusterSettings(values, process.env);
  if (cluster && values.file) fail('--file and --controller are two modes; give one (standalone: --file, cluster: --controller and --gateway)', EXIT.USAGE);
  if (cluster && values.check) fail('--check validates a config file; it takes --file, not --controller', EXIT.USAGE);
  if (!cluster && !values.file) fail('missing --file <config.yaml> (standalone) or --controller <host:port> (cluster mode); run "tollgate --help" for usage', EXIT.USAGE);
  for (const flag of ['admin-addr', 'metrics-addr', 'readiness-addr'] as const) {
    const v = values[flag];
    const r = v === undefined ? null : parseHostPort(v, { ephemeralPort: true });
    if (r && !r.ok) fail(`--${flag}: got "${v}"; ${r.problem}`, EXIT.USAGE);
  }

  try {
    if (values.check && values.file) {
      const loaded = parseConfig(values.file, await readConfigText(values.file));
      process.stdout.write(`${loaded.path}: valid (version ${loaded.snapshot.version})\n`);
      for (const w of loaded.warnings) process.stderr.write(`tollgate: warning: ${w}\n`);
      return;
    }
    // SIGHUP reloads the config file (as nginx does). One arriving while the proxy starts is
    // kept and served once it runs, instead of killing the process (the default action).
    let reload: () => void = () => void (hupPending = true);
    let hupPending = false;
    process.on('SIGHUP', () => reload());
    const addrs = { adminAddr: values['admin-addr'], metricsAddr: values['metrics-addr'], readinessAddr: values['readiness-addr'] };
    const standalone = cluster ? null : await startStandaloneProxy({ file: values.file!, ...addrs });
    // Cluster mode's snapshot stream client (gRPC) is loaded only in cluster mode.
    const gateway: ProxyProcess = standalone ?? (await (await import('./process/cluster.js')).startClusterProxy({ ...cluster!, ...addrs }));
    if (cluster) gateway.logs.get('proxy').warn(`cluster mode: the snapshot stream to ${cluster.controller} is not encrypted (--controller-plaintext); for development only`);
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
      if (!standalone) {
        gateway.logs.get('config').info('SIGHUP received: nothing to reload in cluster mode (the controller pushes every change)');
        return;
      }
      gateway.logs.get('config').info(`SIGHUP received: reloading ${standalone.source.path}`);
      // The source logs the outcome: reloaded, refused (naming the problem) or unchanged.
      void standalone.source.reload();
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

const GATEWAY_NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?\/[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;

interface ClusterSettings {
  readonly controller: string;
  readonly gateway: string;
  readonly pod: string;
  readonly podNamespace: string;
}

/** Cluster mode's settings (flags win over their variables), or null in standalone mode. */
function clusterSettings(values: { controller?: string; gateway?: string; 'controller-plaintext'?: boolean }, env: NodeJS.ProcessEnv): ClusterSettings | null {
  const controller = values.controller ?? (env.TOLLGATE_CONTROLLER || undefined);
  const gateway = values.gateway ?? (env.TOLLGATE_GATEWAY || undefined);
  if (controller === undefined) {
    if (gateway !== undefined) fail('--gateway is for cluster mode; give --controller <host:port> too', EXIT.USAGE);
    return null;
  }
  const from = values.controller !== undefined ? '--controller' : 'TOLLGATE_CONTROLLER';
  const hp = parseHostPort(controller);
  if (!hp.ok || hp.value.port === 0) fail(`${from}: got "${controller}"; ${hp.ok ? 'the port must not be 0' : hp.problem} (e.g. tollgate-controller.tollgate-system.svc:9978)`, EXIT.USAGE);
  if (gateway === undefined) fail('cluster mode needs --gateway <namespace>/<name> (or TOLLGATE_GATEWAY): the Gateway whose snapshot this proxy serves', EXIT.USAGE);
  if (!GATEWAY_NAME.test(gateway)) fail(`${values.gateway !== undefined ? '--gateway' : 'TOLLGATE_GATEWAY'}: got "${gateway}"; expected <namespace>/<name>, e.g. default/public`, EXIT.USAGE);
  const plaintextEnv = env.TOLLGATE_CONTROLLER_PLAINTEXT;
  if (plaintextEnv !== undefined && plaintextEnv !== '' && plaintextEnv !== 'true' && plaintextEnv !== 'false') {
    fail(`TOLLGATE_CONTROLLER_PLAINTEXT: got "${plaintextEnv}"; use true or false`, EXIT.USAGE);
  }
  if (!(values['controller-plaintext'] ?? plaintextEnv === 'true')) {
    fail('the snapshot stream has no TLS yet; --controller-plaintext (or TOLLGATE_CONTROLLER_PLAINTEXT=true) connects without it, for development only', EXIT.USAGE);
  }
  return { controller, gateway, pod: env.POD_NAME || hostname(), podNamespace: env.POD_NAMESPACE || '' };
}
