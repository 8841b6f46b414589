// Defaults and cross-field rules of the process settings (`config.*` of a standalone config),
// where they depend on each other: one place, so the config check, the proxy and its
// config_dump agree.
import type { ProcessConfig } from './schema/standalone-config.js';
import type { Problem } from './validation-error.js';

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
      path: `${path}.maxBufferedRequestBytes`,
      message: `got ${budget}; it must be at least maxRequestBodyBytes (${body}${cfg?.maxRequestBodyBytes === undefined ? ', its default' : ''}), or a body of the largest size a metered route reads could never be held: raise it or lower maxRequestBodyBytes`,
    });
  }
}
