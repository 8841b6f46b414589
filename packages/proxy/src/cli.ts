// `tollgate`: the proxy, standalone (`--file`) or in cluster mode (`--controller`). Exit codes in exit-codes.ts (and docs/tollgate.md); every
// failure is one `tollgate: <message>` line on stderr, never a stack.
import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { parseArgs } from 'node:util';
import { parseHostPort, validateProcessSettings, ValidationError, type ProcessConfig } from '@tollgate/api';
import { TollgateError } from './errors.js';
import { parseConfig, readConfigText } from './config/load-file.js';
import { EXIT, EXIT_CODE_HELP, type ExitCode } from './exit-codes.js';
import type { ProxyProcess } from './process/proxy-process.js';
import { startStandaloneProxy } from './process/standalone.js';
import { MAX_WORKERS, type WorkersChoice } from './process/workers/worker-count.js';
import type { ControllerSecurity } from './source/controller-source.js';

const HELP = () => `tollgate: the Tollgate gateway proxy

Usage:
  tollgate --file <config.yaml|config.json> [--admin-addr <ip:port>] [--metrics-addr <ip:port>] [--readiness-addr <ip:port>]
  tollgate --check --file <config.yaml>
  tollgate --controller <host:port> --gateway <namespace>/<name> --controller-ca <ca.crt> [--controller-token <file>] [--admin-addr ...]

Options:
  -f, --file <path>            config file (YAML or JSON); edits are picked up while running, and SIGHUP reloads it
      --check                  validate the config file and exit (0 valid, 2 invalid)
      --controller <host:port> cluster mode: take routing from the controller's snapshot stream (env TOLLGATE_CONTROLLER)
      --gateway <ns>/<name>    the Gateway this proxy serves, in cluster mode (env TOLLGATE_GATEWAY); the pod's
                               name and namespace come from POD_NAME and POD_NAMESPACE (the downward API)
      --controller-ca <file>   cluster mode: the CA the controller's certificate chains to, the ca.crt of the
                               tollgate-ca ConfigMap (env TOLLGATE_CONTROLLER_CA); read again on every connect
      --controller-token <file>
                               cluster mode: the projected ServiceAccount token (audience tollgate) presented to
                               the controller (env TOLLGATE_CONTROLLER_TOKEN; default
                               ${DEFAULT_TOKEN}); read again on every connect
      --controller-plaintext   development only: connect to the controller without TLS and without a token (env
                               TOLLGATE_CONTROLLER_PLAINTEXT=true); the controller must run with --snapshot-plaintext
                               cluster mode's process settings (what config: holds standalone) come from env
                               TOLLGATE_SETTINGS, a JSON object the controller renders from the Gateway's parameters
      --admin-addr <addr>      admin server, overriding config.adminAddr (default 127.0.0.1:15000)
      --metrics-addr <addr>    Prometheus /metrics, overriding config.metricsAddr (default 0.0.0.0:15020)
      --readiness-addr <addr>  /healthz/ready, overriding config.readinessAddr (default 0.0.0.0:15021)
      --workers <n|auto>       threads serving requests, overriding config.workers (default auto: the CPUs the
                               container may use, from its cgroup CPU quota; without a quota the CPUs the process
                               may run on, at most 4). Limits, budgets and connection caps are shared by all
                               threads; one admin API, one /metrics, one readiness
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
  tollgate --controller tollgate-controller.tollgate-system.svc:9978 --gateway default/public --controller-ca /etc/tollgate/ca/ca.crt
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

/** --workers: a count from 1 to MAX_WORKERS, or auto. */
function parseWorkers(text: string): WorkersChoice {
  if (text === 'auto') return 'auto';
  const n = /^[0-9]{1,3}$/.test(text) ? Number(text) : NaN;
  if (!(n >= 1 && n <= MAX_WORKERS)) fail(`--workers: got "${text}"; give a whole number from 1 to ${MAX_WORKERS}, or auto (the CPUs the container may use)`, EXIT.USAGE);
  return n;
}

export async function main(argv: string[]): Promise<void> {
  let values: {
    file?: string;
    check?: boolean;
    controller?: string;
    gateway?: string;
    'controller-plaintext'?: boolean;
    'controller-ca'?: string;
    'controller-token'?: string;
    'admin-addr'?: string;
    'metrics-addr'?: string;
    'readiness-addr'?: string;
    workers?: string;
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
        'controller-ca': { type: 'string' },
        'controller-token': { type: 'string' },
        'admin-addr': { type: 'string' },
        'metrics-addr': { type: 'string' },
        'readiness-addr': { type: 'string' },
        workers: { type: 'string' },
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

  const workers = values.workers === undefined ? undefined : parseWorkers(values.workers);

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
    // SIGTERM or SIGINT while the proxy starts (a pod stopped as it comes up) is kept too, and
    // drains once it runs: the default action would kill it with binds already listening.
    let stopPending: string | null = null;
    let onStop: (signal: string) => void = (signal) => void (stopPending ??= signal);
    process.on('SIGTERM', () => onStop('SIGTERM'));
    process.on('SIGINT', () => onStop('SIGINT'));
    // compactMemory: the process gives back what start-up and each config compile left behind.
    // Unless --workers or config.workers says how many, every CPU the container may use serves.
    const addrs = { adminAddr: values['admin-addr'], metricsAddr: values['metrics-addr'], readinessAddr: values['readiness-addr'], compactMemory: true, workers, defaultWorkers: 'auto' as const };
    const standalone = cluster ? null : await startStandaloneProxy({ file: values.file!, ...addrs });
    // Cluster mode's snapshot stream client (gRPC) is loaded only in cluster mode.
    const gateway: ProxyProcess = standalone ?? (await (await import('./process/cluster.js')).startClusterProxy({ ...cluster!, ...addrs }));
    if (cluster?.security.kind === 'plaintext') gateway.logs.get('proxy').warn(`cluster mode: the snapshot stream to ${cluster.controller} is neither encrypted nor authenticated (--controller-plaintext); for development only`);
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
    onStop = stop;
    if (stopPending !== null) stop(stopPending);
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
/** Where the deployer mounts the projected token (audience tollgate). */
const DEFAULT_TOKEN = '/var/run/secrets/tollgate/token';

interface ClusterSettings {
  readonly controller: string;
  readonly gateway: string;
  readonly pod: string;
  readonly podNamespace: string;
  readonly security: ControllerSecurity;
  /** Process settings (TOLLGATE_SETTINGS), as `config:` of a standalone file. */
  readonly settings: ProcessConfig;
}

/** Longer than any settings object of the parameters (a few hundred bytes). */
const MAX_SETTINGS_CHARS = 16 * 1024;

/**
 * Cluster mode's process settings: the JSON object the deployer renders from the Gateway's
 * parameters into TOLLGATE_SETTINGS, checked as the `config:` of a standalone file is.
 */
function processSettings(env: NodeJS.ProcessEnv): ProcessConfig {
  const text = env.TOLLGATE_SETTINGS;
  if (text === undefined || text === '') return {};
  if (text.length > MAX_SETTINGS_CHARS) fail(`TOLLGATE_SETTINGS: ${text.length} characters; process settings are a small JSON object (at most ${MAX_SETTINGS_CHARS} characters)`, EXIT.USAGE);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    fail(`TOLLGATE_SETTINGS: not JSON (${(err as Error).message}); expected an object of process settings, e.g. {"maxBufferedRequestBytes":134217728}`, EXIT.USAGE);
  }
  try {
    return validateProcessSettings(value, 'TOLLGATE_SETTINGS');
  } catch (err) {
    if (err instanceof ValidationError) fail(`TOLLGATE_SETTINGS: ${err.problems.map((p) => `${p.path || '(root)'}: ${p.message}`).join('; ')}`, EXIT.USAGE);
    throw err;
  }
}

interface ClusterFlags {
  controller?: string;
  gateway?: string;
  'controller-plaintext'?: boolean;
  'controller-ca'?: string;
  'controller-token'?: string;
}

/** Cluster mode's settings (flags win over their variables), or null in standalone mode. */
function clusterSettings(values: ClusterFlags, env: NodeJS.ProcessEnv): ClusterSettings | null {
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
  const identity = { controller, gateway, pod: env.POD_NAME || hostname(), podNamespace: env.POD_NAMESPACE || '', settings: processSettings(env) };
  const ca = values['controller-ca'] ?? (env.TOLLGATE_CONTROLLER_CA || undefined);
  const caFrom = values['controller-ca'] !== undefined ? '--controller-ca' : 'TOLLGATE_CONTROLLER_CA';
  if (values['controller-plaintext'] ?? plaintextEnv === 'true') {
    if (ca !== undefined) fail(`${caFrom} and --controller-plaintext (TOLLGATE_CONTROLLER_PLAINTEXT) contradict each other: give the CA for TLS, or plaintext for development, not both`, EXIT.USAGE);
    return { ...identity, security: { kind: 'plaintext' } };
  }
  if (ca === undefined) {
    fail("cluster mode needs --controller-ca <file> (or TOLLGATE_CONTROLLER_CA): the CA of the controller's snapshot stream, the ca.crt of the tollgate-ca ConfigMap; --controller-plaintext connects without TLS, for development only", EXIT.USAGE);
  }
  const tokenFile = values['controller-token'] ?? (env.TOLLGATE_CONTROLLER_TOKEN || DEFAULT_TOKEN);
  const tokenFrom = values['controller-token'] !== undefined ? '--controller-token' : env.TOLLGATE_CONTROLLER_TOKEN ? 'TOLLGATE_CONTROLLER_TOKEN' : '--controller-token (default)';
  // Checked now, so a pod without its volumes says so at once instead of retrying forever.
  const caText = readable(ca, caFrom, 'mount the tollgate-ca ConfigMap (key ca.crt) and point the flag at it');
  try {
    new X509Certificate(caText);
  } catch {
    fail(`${caFrom}: ${ca} is not a PEM certificate; it is the ca.crt of the tollgate-ca ConfigMap`, EXIT.USAGE);
  }
  if (!readable(tokenFile, tokenFrom, 'the pod needs a projected ServiceAccount token volume with audience tollgate').trim()) {
    fail(`${tokenFrom}: ${tokenFile} is empty; it holds the projected ServiceAccount token (audience tollgate)`, EXIT.USAGE);
  }
  return { ...identity, security: { kind: 'tls', caFile: ca, tokenFile } };
}

/**
 * Outside a pod the host name stands in for the pod's in the hello; the controller takes pod
 * names only (lower-case letters, digits, '-', '.'), so a host name like `Dev_Box` is sent as
 * `dev-box`.
 */
export function hostAsPodName(host: string): string {
  return host.toLowerCase().replace(/[^a-z0-9-]+/g, '-').slice(0, 63).replace(/^-+|-+$/g, '') || 'proxy';
}

function readable(file: string, from: string, fix: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    fail(`${from}: cannot read ${file} (${code === 'ENOENT' ? 'no such file' : (code ?? (err as Error).message)}); ${fix}`, EXIT.USAGE);
  }
}
