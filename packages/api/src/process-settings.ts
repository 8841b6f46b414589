// Defaults and cross-field rules of the process settings (`config.*` of a standalone config),
// where they depend on each other: one place, so the config check, the proxy and its
// config_dump agree. Cluster mode has no config file: the settings the cluster's parameters
// give the proxy (PROXY_PROCESS_PARAMETERS) reach it as one JSON object, checked here too.
import { parseDuration } from './duration.js';
import { compile } from './ajv.js';
import { ProcessConfig } from './schema/standalone-config.js';
import { joinPath, ValidationError, type Problem } from './validation-error.js';
import { DEFAULT_COOL_DOWN_MS, DEFAULT_MAX_COOL_DOWN_MS } from './resilience/settings.js';

/** config.maxRequestBodyBytes default. */
export const DEFAULT_MAX_REQUEST_BODY_BYTES = 8 * 1024 * 1024;
/**
 * config.maxBufferedRequestBytes default: eight bodies of the largest size, a few hundred MiB
 * of memory at most once parsed (the body, its decoded text and its parse) within the chart's
 * 512Mi proxy limit.
 */
export const DEFAULT_MAX_BUFFERED_REQUEST_BYTES = 64 * 1024 * 1024;
/** config.requestBodyTimeout default, in milliseconds. */
export const DEFAULT_REQUEST_BODY_TIMEOUT_MS = 60_000;
/** config.maxConnectionsPerBind default. */
export const DEFAULT_MAX_CONNECTIONS_PER_BIND = 4096;
/** config.maxRateLimitKeys default: 17 to 25 MiB per keyed limit when full (docs/rate-limiting.md, "The key table"). */
export const DEFAULT_MAX_RATE_LIMIT_KEYS = 100_000;

/** The process-wide budget of buffered request-body bytes, defaults applied. */
export function bufferedRequestBytes(cfg: Pick<ProcessConfig, 'maxBufferedRequestBytes' | 'maxRequestBodyBytes'>): number {
  return cfg.maxBufferedRequestBytes ?? Math.max(DEFAULT_MAX_BUFFERED_REQUEST_BYTES, cfg.maxRequestBodyBytes ?? DEFAULT_MAX_REQUEST_BODY_BYTES);
}

/** Rules between settings the schema cannot express; `path` is where the settings are (`config`). */
export function checkProcessConfig(cfg: ProcessConfig | undefined, path: string, out: Problem[]): void {
  const budget = cfg?.maxBufferedRequestBytes;
  const body = cfg?.maxRequestBodyBytes ?? DEFAULT_MAX_REQUEST_BODY_BYTES;
  if (budget !== undefined && budget < body) {
    out.push({
      path: joinPath(path, 'maxBufferedRequestBytes'),
      message: `got ${budget}; it must be at least maxRequestBodyBytes (${body}${cfg?.maxRequestBodyBytes === undefined ? ', its default' : ''}), or a body of the largest size a metered route reads could never be held: raise it or lower maxRequestBodyBytes`,
    });
  }
  const retryBody = cfg?.maxRetryBodyBytes;
  if (retryBody !== undefined && retryBody > bufferedRequestBytes(cfg ?? {})) {
    out.push({
      path: joinPath(path, 'maxRetryBodyBytes'),
      message: `got ${retryBody}; it must not be more than maxBufferedRequestBytes (${bufferedRequestBytes(cfg ?? {})}), or a body of that size could never be held: lower it or raise maxBufferedRequestBytes`,
    });
  }
  const coolDown = cfg?.coolDown === undefined ? DEFAULT_COOL_DOWN_MS : parseDuration(cfg.coolDown);
  const maxCoolDown = cfg?.maxCoolDown === undefined ? DEFAULT_MAX_COOL_DOWN_MS : parseDuration(cfg.maxCoolDown);
  if (coolDown > maxCoolDown) {
    out.push({ path: joinPath(path, 'coolDown'), message: `got ${cfg?.coolDown ?? `${DEFAULT_COOL_DOWN_MS}ms`}; it must not be more than maxCoolDown (${cfg?.maxCoolDown ?? `${DEFAULT_MAX_COOL_DOWN_MS / 1000}s`})` });
  }
  const dns = cfg?.dns;
  if (dns?.minTtl !== undefined && dns.maxTtl !== undefined && parseDuration(dns.minTtl) > parseDuration(dns.maxTtl)) {
    out.push({ path: joinPath(joinPath(path, 'dns'), 'minTtl'), message: `got ${dns.minTtl}; it must not be more than maxTtl (${dns.maxTtl})` });
  }
}

/**
 * The process settings a Gateway's parameters may give its proxies in cluster mode: the bounds
 * on what clients may take of a proxy (docs/security.md). Addresses and the log level are the
 * deployer's (its probes and port-forwards rely on them).
 */
export const PROXY_PROCESS_PARAMETERS = [
  'requestHeadersTimeout',
  'requestBodyIdleTimeout',
  'requestBodyTimeout',
  'keepAliveTimeout',
  'backendBodyIdleTimeout',
  'maxRequestBodyBytes',
  'maxBufferedRequestBytes',
  'maxConnectionsPerBind',
  'maxWebSocketConnections',
  'websocketIdleTimeout',
  'tlsClientHelloTimeout',
  'tlsIdleTimeout',
  'maxSseLineBytes',
  'maxTraceSessions',
  'maxModelLabels',
  'maxTokensChargedPerResponse',
  'maxRateLimitKeys',
  'consumerMetricsTopN',
  'retryBudgetPercent',
  'retryBudgetMinConcurrency',
  'maxRetryBodyBytes',
  'coolDown',
  'maxCoolDown',
  'workers',
] as const satisfies readonly (keyof ProcessConfig)[];

/** Which of them are integers (the others are durations). */
export const INTEGER_PROCESS_PARAMETERS: ReadonlySet<string> = new Set(['maxRequestBodyBytes', 'maxBufferedRequestBytes', 'maxConnectionsPerBind', 'maxWebSocketConnections', 'maxSseLineBytes', 'maxTraceSessions', 'maxModelLabels', 'maxTokensChargedPerResponse', 'maxRateLimitKeys', 'consumerMetricsTopN', 'retryBudgetPercent', 'retryBudgetMinConcurrency', 'maxRetryBodyBytes', 'workers']);

const validateProcessSchema = compile(ProcessConfig);

/** Problems of a settings object; paths are relative to it (`maxConnectionsPerBind: ...`). */
export function processSettingsProblems(value: unknown): Problem[] {
  const result = validateProcessSchema(value);
  if (!result.ok) return result.problems;
  const out: Problem[] = [];
  checkProcessConfig(result.value, '', out);
  return out;
}

/** Process settings given as one value (cluster mode), checked as `config:` of a file is; `subject` names where they came from. */
export function validateProcessSettings(value: unknown, subject: string): ProcessConfig {
  const problems = processSettingsProblems(value);
  if (problems.length) throw new ValidationError(subject, problems);
  return value as ProcessConfig;
}
