// The controller's settings: command-line flags, each with an environment equivalent (a flag
// wins over its variable). Every value is validated before anything starts; a bad one is a
// TG_CONTROLLER_USAGE error naming the flag (or variable), what was wrong and an example of a good value.
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import { isIP } from 'node:net';
import { CatalogError, CelLimitsSchema, DEFAULT_CEL_LIMITS, DEFAULT_REGEX_LIMITS, RegexLimitsSchema, resolveLimits, type EvaluationLimits } from '@tollgate/api';
import { CONTROLLER_ERRORS } from './errors.js';
import { DirectiveError } from '@tollgate/kit';
import { checkDirective } from './log/components.js';
import { parseAllowList, parseImage } from './proxy-settings/image-policy.js';
import { DEFAULT_DENIED_DOMAINS, parseDeniedDomains } from './proxy-settings/infrastructure.js';
import type { HostPort } from './runtime/host-port.js';
import { DEFAULT_STREAM_LIMITS, formatDuration, type StreamLimits } from './snapshots/stream-limits.js';

/** A bad flag or environment variable (exit 2). */
export function usageError(problem: string): CatalogError {
  return CONTROLLER_ERRORS.usage.create({ problem });
}

export function isUsageError(err: unknown): err is CatalogError {
  return err instanceof CatalogError && err.code === CONTROLLER_ERRORS.usage.code;
}

export { formatHostPort, type HostPort } from './runtime/host-port.js';

export interface LeaderElection {
  readonly enabled: boolean;
  readonly leaseName: string;
  /** How long a lease is valid after its last renewal; followers wait this long. */
  readonly leaseDurationMs: number;
  /** The leader stops acting when it could not renew for this long (< leaseDuration). */
  readonly renewDeadlineMs: number;
  /** Interval between attempts to acquire or renew. */
  readonly retryPeriodMs: number;
  readonly identity: string;
}

export interface ControllerOptions {
  readonly kubeconfig: string | undefined;
  readonly namespace: string;
  readonly controllerName: string;
  readonly snapshotAddr: HostPort;
  /**
   * Development only: serve the snapshot stream without TLS and without authenticating
   * proxies. Off by default: the stream is served with TLS (the CA in `snapshotCaSecret`) and
   * each proxy's token is checked with a TokenReview.
   */
  readonly snapshotPlaintext: boolean;
  /** Name of the Secret in `namespace` that holds the stream's CA (made when missing). */
  readonly snapshotCaSecret: string;
  /** Names (DNS or IP) added to the serving certificate beyond the snapshot Service's. */
  readonly snapshotTlsNames: readonly string[];
  readonly metricsAddr: HostPort;
  readonly healthAddr: HostPort;
  readonly adminAddr: HostPort;
  readonly proxyImage: string;
  /** The images and prefixes a Gateway's owner may choose for its proxies (--gateway-proxy-images, checked); empty: none. */
  readonly gatewayProxyImages: readonly string[];
  /** Domains of the infrastructure label and annotation keys a Gateway may not set (--gateway-infrastructure-denied-domains, checked). */
  readonly gatewayInfrastructureDeniedDomains: readonly string[];
  readonly snapshotService: string;
  readonly leaderElection: LeaderElection;
  /** `--log-level`, checked: a level and/or <component>=<level> entries. */
  readonly logDirective: string;
  /** Bounds of the snapshot stream (--snapshot-max-*, --snapshot-reauth-interval). */
  readonly streamLimits: StreamLimits;
  /** TokenReviews of new proxy tokens per second (--snapshot-token-reviews-per-second). */
  readonly tokenReviewsPerSecond: number;
  /** Bounds on routes' regular expressions and policies' CEL expressions (`--regex-*`, `--cel-*`). */
  readonly limits: EvaluationLimits;
}

interface FlagSpec {
  readonly name: string;
  readonly env: string;
  readonly boolean?: boolean;
  readonly arg?: string;
  readonly help: string;
  readonly default?: string;
}

export const FLAGS: readonly FlagSpec[] = [
  { name: 'kubeconfig', env: 'KUBECONFIG', arg: 'path', help: 'kubeconfig file; without it and without KUBECONFIG, the in-cluster ServiceAccount' },
  { name: 'namespace', env: 'TOLLGATE_NAMESPACE', arg: 'name', help: 'release namespace: the leader election Lease lives here', default: 'tollgate-system' },
  { name: 'gateway-class-controller', env: 'TOLLGATE_GATEWAY_CLASS_CONTROLLER', arg: 'name', help: 'GatewayClass spec.controllerName served by this controller', default: 'tollgate.dev/gateway-controller' },
  { name: 'snapshot-addr', env: 'TOLLGATE_SNAPSHOT_ADDR', arg: 'addr', help: 'address of the snapshot stream proxies connect to', default: ':9978' },
  {
    name: 'snapshot-plaintext',
    env: 'TOLLGATE_SNAPSHOT_PLAINTEXT',
    boolean: true,
    help: 'development only: serve the snapshot stream without TLS and without checking proxies\' tokens',
    default: 'false',
  },
  { name: 'snapshot-ca-secret', env: 'TOLLGATE_SNAPSHOT_CA_SECRET', arg: 'name', help: 'Secret in --namespace holding the snapshot stream\'s CA; created on first start, reused after', default: 'tollgate-ca' },
  {
    name: 'snapshot-tls-names',
    env: 'TOLLGATE_SNAPSHOT_TLS_NAMES',
    arg: 'names',
    help: 'comma-separated DNS names or IP addresses added to the stream\'s serving certificate (the --snapshot-service host and its .svc forms are always in it)',
  },
  { name: 'snapshot-max-message-bytes', env: 'TOLLGATE_SNAPSHOT_MAX_MESSAGE_BYTES', arg: 'bytes', help: 'largest message a proxy may send on the stream (1024-4194304)', default: String(DEFAULT_STREAM_LIMITS.maxMessageBytes) },
  { name: 'snapshot-max-streams', env: 'TOLLGATE_SNAPSHOT_MAX_STREAMS', arg: 'count', help: 'snapshot streams open at once, authenticated or not (1-1000000)', default: String(DEFAULT_STREAM_LIMITS.maxStreams) },
  {
    name: 'snapshot-max-streams-per-gateway',
    env: 'TOLLGATE_SNAPSHOT_MAX_STREAMS_PER_GATEWAY',
    arg: 'count',
    help: 'streams of one Gateway at once: the most proxy replicas a Gateway may have (1-100000)',
    default: String(DEFAULT_STREAM_LIMITS.maxStreamsPerGateway),
  },
  { name: 'snapshot-max-stream-age', env: 'TOLLGATE_SNAPSHOT_MAX_STREAM_AGE', arg: 'duration', help: 'a stream ends after this long and the proxy reconnects (1s-1440m)', default: formatDuration(DEFAULT_STREAM_LIMITS.maxStreamAgeMs) },
  {
    name: 'snapshot-reauth-interval',
    env: 'TOLLGATE_SNAPSHOT_REAUTH_INTERVAL',
    arg: 'duration',
    help: 'an open stream\'s token is reviewed again this often; a refusal (ServiceAccount deleted, token revoked) ends it (1s-1440m)',
    default: formatDuration(DEFAULT_STREAM_LIMITS.reauthIntervalMs),
  },
  { name: 'snapshot-token-reviews-per-second', env: 'TOLLGATE_SNAPSHOT_TOKEN_REVIEWS_PER_SECOND', arg: 'count', help: 'TokenReviews of tokens not seen recently, per second; more are refused with UNAVAILABLE and retried (1-10000)', default: '50' },
  { name: 'metrics-addr', env: 'TOLLGATE_METRICS_ADDR', arg: 'addr', help: 'Prometheus /metrics', default: ':9092' },
  { name: 'health-addr', env: 'TOLLGATE_HEALTH_ADDR', arg: 'addr', help: '/healthz and /readyz (ready once every watch has synced)', default: ':9093' },
  { name: 'admin-addr', env: 'TOLLGATE_ADMIN_ADDR', arg: 'addr', help: 'admin API (/logging, /snapshots, /debug/pprof); keep it on loopback', default: '127.0.0.1:9095' },
  { name: 'proxy-image', env: 'TOLLGATE_PROXY_IMAGE', arg: 'image', help: 'image of the proxies deployed for each Gateway', default: 'ghcr.io/tollgate-dev/tollgate:<version>' },
  {
    name: 'gateway-proxy-images',
    env: 'TOLLGATE_GATEWAY_PROXY_IMAGES',
    arg: 'images',
    help: 'comma-separated images and prefixes a Gateway may choose for its proxies (registry.example.com/, registry.example.com/canary/, registry.example.com/tollgate, ...:tag); empty: none, a Gateway naming an image is refused',
  },
  {
    name: 'gateway-infrastructure-denied-domains',
    env: 'TOLLGATE_GATEWAY_INFRASTRUCTURE_DENIED_DOMAINS',
    arg: 'domains',
    help: `comma-separated domains (subdomains included) of the label and annotation keys a Gateway may not set in spec.infrastructure, beyond kubernetes.io, k8s.io and tollgate.dev (always refused); empty: those only`,
    default: DEFAULT_DENIED_DOMAINS.join(','),
  },
  { name: 'snapshot-service', env: 'TOLLGATE_SNAPSHOT_SERVICE', arg: 'host:port', help: 'address proxies are given to reach the snapshot stream', default: 'tollgate-controller.<namespace>.svc:9978' },
  { name: 'leader-elect', env: 'TOLLGATE_LEADER_ELECT', boolean: true, help: 'elect a leader among replicas with a Lease; only the leader writes status', default: 'false' },
  { name: 'leader-elect-lease-name', env: 'TOLLGATE_LEADER_ELECT_LEASE_NAME', arg: 'name', help: 'name of the Lease', default: 'tollgate-controller' },
  { name: 'leader-elect-lease-duration', env: 'TOLLGATE_LEADER_ELECT_LEASE_DURATION', arg: 'duration', help: 'how long followers wait after the last renewal before taking over', default: '15s' },
  { name: 'leader-elect-renew-deadline', env: 'TOLLGATE_LEADER_ELECT_RENEW_DEADLINE', arg: 'duration', help: 'the leader steps down when it could not renew for this long', default: '10s' },
  { name: 'leader-elect-retry-period', env: 'TOLLGATE_LEADER_ELECT_RETRY_PERIOD', arg: 'duration', help: 'interval between acquire and renew attempts', default: '2s' },
  { name: 'log-level', env: 'TOLLGATE_LOG_LEVEL', arg: 'levels', help: 'a level, or <component>=<level> entries, e.g. info,tollgate/syncer=debug', default: 'info' },
  ...limitFlags('regex', RegexLimitsSchema.properties, DEFAULT_REGEX_LIMITS),
  ...limitFlags('cel', CelLimitsSchema.properties, DEFAULT_CEL_LIMITS),
];

interface LimitFlag extends FlagSpec {
  readonly group: 'regex' | 'cel';
  readonly field: string;
  readonly minimum: number;
  readonly maximum: number;
}

/** One flag per expression bound (--regex-max-program-size, --cel-max-cost, ...), from the schema the standalone config uses too. */
function limitFlags(group: 'regex' | 'cel', fields: Record<string, { minimum?: number; maximum?: number; description?: string }>, defaults: object): LimitFlag[] {
  return Object.entries(fields).map(([field, schema]) => {
    const kebab = field.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
    return {
      group,
      field,
      name: `${group}-${kebab}`,
      env: `TOLLGATE_${group.toUpperCase()}_${kebab.replace(/-/g, '_').toUpperCase()}`,
      arg: 'n',
      help: (schema.description ?? '').replace(/\. Default \d+\.$/, ''),
      default: String((defaults as Record<string, number>)[field]),
      minimum: schema.minimum ?? 1,
      maximum: schema.maximum ?? Number.MAX_SAFE_INTEGER,
    };
  });
}

const LIMIT_FLAGS = FLAGS.filter((f): f is LimitFlag => 'group' in f);

export interface ParsedArgs {
  readonly help: boolean;
  readonly version: boolean;
  readonly values: ReadonlyMap<string, string>;
}

/** `--flag=value`, `--flag value`, bare `--flag` for booleans; no positionals. */
export function parseArgv(argv: readonly string[]): ParsedArgs {
  const values = new Map<string, string>();
  let help = false;
  let version = false;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '-h' || arg === '--help') {
      help = true;
      continue;
    }
    if (arg === '-v' || arg === '--version') {
      version = true;
      continue;
    }
    if (!arg.startsWith('--')) throw usageError(`unexpected argument "${arg}"; every setting is a --flag`);
    const eq = arg.indexOf('=');
    const name = arg.slice(2, eq < 0 ? undefined : eq);
    const spec = FLAGS.find((f) => f.name === name);
    if (!spec) throw usageError(`unknown flag --${name}`);
    if (values.has(name)) throw usageError(`--${name} given more than once`);
    if (eq >= 0) values.set(name, arg.slice(eq + 1));
    else if (spec.boolean) values.set(name, 'true');
    else {
      const next = argv[i + 1];
      if (next === undefined || next.startsWith('--')) throw usageError(`--${name} needs a value (${spec.arg})`);
      values.set(name, next);
      i++;
    }
  }
  return { help, version, values };
}

export function helpText(version: string): string {
  const lines = FLAGS.map((f) => {
    const left = `  --${f.name}${f.arg ? ` <${f.arg}>` : ''}`;
    const def = f.default ? ` (default ${f.default})` : '';
    return `${left.padEnd(46)} ${f.help}${def}; env ${f.env}`;
  });
  return `tollgate-controller ${version}: the Tollgate control plane

Watches GatewayClasses, Gateways, HTTPRoutes, GRPCRoutes, ReferenceGrants, GatewayPolicies, Services,
EndpointSlices and Namespaces, translates them to one snapshot per Gateway of its class and
writes their status.

Usage:
  tollgate-controller [flags]

Flags (each also read from the environment variable named; a flag wins):
${lines.join('\n')}
${'  -h, --help'.padEnd(46)} show this help
${'  -v, --version'.padEnd(46)} print the version

Addresses are <host>:<port>, [<ipv6>]:<port> or :<port> (every interface); port 0 picks a
free port (the bound address is logged). Durations: 500ms, 15s, 1m.

Exit codes: 0 stopped by SIGTERM or SIGINT, 1 runtime failure, 2 bad flag or environment.
`;
}

function source(spec: FlagSpec, fromFlag: boolean): string {
  return fromFlag ? `--${spec.name}` : spec.env;
}

export function parseHostPort(text: string, what: string): HostPort {
  const m = /^(?:\[([0-9A-Fa-f:.]+)\]|([A-Za-z0-9.-]*)):([0-9]{1,5})$/.exec(text);
  const port = m ? Number(m[3]) : NaN;
  if (!m || port > 65535) throw usageError(`${what} "${text}" is not <host>:<port>, [<ipv6>]:<port> or :<port> (port 0-65535), e.g. 127.0.0.1:9095 or :9092`);
  return { host: m[1] ?? m[2] ?? '', port };
}

export function parseDuration(text: string, what: string): number {
  const m = /^([0-9]+(?:\.[0-9]+)?)(ms|s|m)$/.exec(text);
  if (!m) throw usageError(`${what} "${text}" is not a duration; use e.g. 500ms, 15s or 1m`);
  const ms = Number(m[1]) * (m[2] === 'ms' ? 1 : m[2] === 's' ? 1000 : 60_000);
  if (ms <= 0) throw usageError(`${what} must be greater than zero`);
  return ms;
}

export function parseCount(text: string, what: string, min: number, max: number): number {
  const n = /^[0-9]{1,10}$/.test(text) ? Number(text) : NaN;
  if (!(n >= min && n <= max)) throw usageError(`${what} "${text}" is not a whole number from ${min} to ${max}`);
  return n;
}

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
// GatewayClass spec.controllerName: a domain-prefixed path (the Gateway API's pattern).
const CONTROLLER_NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/[A-Za-z0-9/\-._~%!$&'()*+,;=:]+$/;

function parseBool(text: string, what: string): boolean {
  if (text === 'true') return true;
  if (text === 'false') return false;
  throw usageError(`${what} "${text}" is not a boolean; use true or false`);
}

/** Flags first, then the environment, then defaults. Throws the usage error of the catalog. */
export function resolveOptions(args: ParsedArgs, env: NodeJS.ProcessEnv, version: string): ControllerOptions {
  const get = (name: string): { value: string | undefined; from: string } => {
    const spec = FLAGS.find((f) => f.name === name)!;
    const flag = args.values.get(name);
    if (flag !== undefined) return { value: flag, from: source(spec, true) };
    const fromEnv = env[spec.env];
    if (fromEnv !== undefined && fromEnv !== '') return { value: fromEnv, from: source(spec, false) };
    return { value: undefined, from: `--${name}` };
  };
  const str = (name: string, fallback: string) => get(name).value ?? fallback;

  const kubeconfig = get('kubeconfig').value;

  const ns = get('namespace');
  const namespace = ns.value ?? 'tollgate-system';
  if (namespace.length > 63 || !DNS_LABEL.test(namespace)) throw usageError(`${ns.from} "${namespace}" is not a namespace name (lower-case letters, digits and '-', at most 63)`);

  const cn = get('gateway-class-controller');
  const controllerName = cn.value ?? 'tollgate.dev/gateway-controller';
  if (controllerName.length > 253 || !CONTROLLER_NAME.test(controllerName)) {
    throw usageError(`${cn.from} "${controllerName}" is not a controller name; it is a domain-prefixed path such as tollgate.dev/gateway-controller`);
  }

  const addr = (name: string, fallback: string) => {
    const g = get(name);
    return parseHostPort(g.value ?? fallback, g.from);
  };
  const snapshotAddr = addr('snapshot-addr', ':9978');
  const metricsAddr = addr('metrics-addr', ':9092');
  const healthAddr = addr('health-addr', ':9093');
  const adminAddr = addr('admin-addr', '127.0.0.1:9095');

  const pi = get('proxy-image');
  const proxyImage = pi.value ?? `ghcr.io/tollgate-dev/tollgate:${version}`;
  if (!parseImage(proxyImage)) throw usageError(`${pi.from} "${proxyImage}" is not an image reference; e.g. ghcr.io/tollgate-dev/tollgate:0.1.0`);
  const gi = get('gateway-proxy-images');
  const gatewayProxyImages = (gi.value ?? '').split(',').map((n) => n.trim()).filter(Boolean);
  const allowList = parseAllowList(gatewayProxyImages);
  if (!allowList.ok) throw usageError(`${gi.from}: ${allowList.problem}`);

  const dd = get('gateway-infrastructure-denied-domains');
  const denied = parseDeniedDomains(dd.value === undefined ? DEFAULT_DENIED_DOMAINS : dd.value.split(',').map((n) => n.trim()).filter(Boolean));
  if (!denied.ok) throw usageError(`${dd.from}: ${denied.problem}`);

  const ss = get('snapshot-service');
  const snapshotService = ss.value ?? `tollgate-controller.${namespace}.svc:9978`;
  const ssParsed = parseHostPort(snapshotService, ss.from);
  if (!ssParsed.host || !DNS_SUBDOMAIN.test(ssParsed.host.toLowerCase()) || ssParsed.port === 0) {
    throw usageError(`${ss.from} "${snapshotService}" must be <host>:<port> with a host name and a port, e.g. tollgate-controller.tollgate-system.svc:9978`);
  }

  const sp = get('snapshot-plaintext');
  const snapshotPlaintext = sp.value === undefined ? false : parseBool(sp.value, sp.from);

  const cs = get('snapshot-ca-secret');
  const snapshotCaSecret = cs.value ?? 'tollgate-ca';
  if (snapshotCaSecret.length > 253 || !DNS_SUBDOMAIN.test(snapshotCaSecret)) throw usageError(`${cs.from} "${snapshotCaSecret}" is not a Secret name (lower-case DNS subdomain), e.g. tollgate-ca`);
  const tn = get('snapshot-tls-names');
  const snapshotTlsNames = (tn.value ?? '').split(',').map((n) => n.trim()).filter(Boolean);
  for (const n of snapshotTlsNames) {
    if (!isIP(n) && (n.length > 253 || !DNS_SUBDOMAIN.test(n.toLowerCase()))) throw usageError(`${tn.from}: "${n}" is neither a DNS name nor an IP address; give names separated by commas, e.g. tollgate.example.com,198.18.0.10`);
  }

  const le = get('leader-elect');
  const enabled = le.value === undefined ? false : parseBool(le.value, le.from);
  const ln = get('leader-elect-lease-name');
  const leaseName = ln.value ?? 'tollgate-controller';
  if (leaseName.length > 253 || !DNS_SUBDOMAIN.test(leaseName)) throw usageError(`${ln.from} "${leaseName}" is not an object name (lower-case DNS subdomain)`);
  const dur = (name: string, fallback: string) => {
    const g = get(name);
    return parseDuration(g.value ?? fallback, g.from);
  };
  const leaseDurationMs = dur('leader-elect-lease-duration', '15s');
  const renewDeadlineMs = dur('leader-elect-renew-deadline', '10s');
  const retryPeriodMs = dur('leader-elect-retry-period', '2s');
  if (renewDeadlineMs >= leaseDurationMs) throw usageError(`--leader-elect-renew-deadline (${renewDeadlineMs}ms) must be shorter than --leader-elect-lease-duration (${leaseDurationMs}ms), or two replicas could both act as leader`);
  if (retryPeriodMs >= renewDeadlineMs) throw usageError(`--leader-elect-retry-period (${retryPeriodMs}ms) must be shorter than --leader-elect-renew-deadline (${renewDeadlineMs}ms)`);

  const ll = get('log-level');
  const logDirective = str('log-level', 'info');
  try {
    checkDirective(logDirective);
  } catch (err) {
    if (err instanceof DirectiveError) throw usageError(`${ll.from}: ${err.message}`);
    throw err;
  }

  const count = (name: string, fallback: number, min: number, max: number) => {
    const g = get(name);
    return g.value === undefined ? fallback : parseCount(g.value, g.from, min, max);
  };
  const bounded = (name: string, fallback: number) => {
    const g = get(name);
    if (g.value === undefined) return fallback;
    const ms = parseDuration(g.value, g.from);
    if (ms < 1000 || ms > 1440 * 60_000) throw usageError(`${g.from} "${g.value}" is out of range; give 1s to 1440m`);
    return ms;
  };
  const maxStreams = count('snapshot-max-streams', DEFAULT_STREAM_LIMITS.maxStreams, 1, 1_000_000);
  const streamLimits: StreamLimits = {
    maxMessageBytes: count('snapshot-max-message-bytes', DEFAULT_STREAM_LIMITS.maxMessageBytes, 1024, 4 * 1024 * 1024),
    maxStreams,
    maxStreamsPerGateway: count('snapshot-max-streams-per-gateway', Math.min(DEFAULT_STREAM_LIMITS.maxStreamsPerGateway, maxStreams), 1, 100_000),
    maxStreamAgeMs: bounded('snapshot-max-stream-age', DEFAULT_STREAM_LIMITS.maxStreamAgeMs),
    reauthIntervalMs: bounded('snapshot-reauth-interval', DEFAULT_STREAM_LIMITS.reauthIntervalMs),
  };
  const tokenReviewsPerSecond = count('snapshot-token-reviews-per-second', 50, 1, 10_000);

  const overrides: { regex: Record<string, number>; cel: Record<string, number> } = { regex: {}, cel: {} };
  for (const f of LIMIT_FLAGS) {
    const g = get(f.name);
    if (g.value === undefined) continue;
    overrides[f.group][f.field] = parseCount(g.value, g.from, f.minimum, f.maximum);
  }
  const limits = resolveLimits(overrides);

  const identity = env.POD_NAME || `${hostname()}-${randomBytes(4).toString('hex')}`;
  return {
    kubeconfig,
    namespace,
    controllerName,
    snapshotAddr,
    snapshotPlaintext,
    snapshotCaSecret,
    snapshotTlsNames,
    metricsAddr,
    healthAddr,
    adminAddr,
    proxyImage,
    gatewayProxyImages,
    gatewayInfrastructureDeniedDomains: denied.domains,
    snapshotService,
    leaderElection: { enabled, leaseName, leaseDurationMs, renewDeadlineMs, retryPeriodMs, identity },
    logDirective,
    streamLimits,
    tokenReviewsPerSecond,
    limits,
  };
}
