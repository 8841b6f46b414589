// The runtime's options from the process settings (config.* of the config file, or the
// Gateway's parameters): the same for the main thread and every worker thread, so each
// worker's runtime is the main thread's in everything but the thread it runs on.
import {
  bufferedRequestBytes,
  DEFAULT_COOL_DOWN_MS,
  DEFAULT_MAX_COOL_DOWN_MS,
  DEFAULT_RETRY_BUDGET_MIN_CONCURRENCY,
  DEFAULT_RETRY_BUDGET_PERCENT,
  parseDuration,
  type ProcessConfig,
} from '@tollgate/api';
import type { LogControl } from '../log/logger.js';
import type { Clock } from '../ratelimit/clock.js';
import { DEFAULT_PATH_SETTINGS } from '../pipeline/request-target.js';
import { DEFAULT_CLIENT_TIMEOUTS, DEFAULT_DRAIN_IDLE_MS, type RuntimeOptions } from '../server/runtime.js';
import { DEFAULT_DNS, type DnsSettings } from '../upstream/dns-cache.js';

/** config.dns over the defaults. */
function dnsSettings(c: ProcessConfig['dns']): DnsSettings {
  if (!c) return DEFAULT_DNS;
  const ms = (text: string | undefined, fallback: number) => (text === undefined ? fallback : parseDuration(text));
  return {
    ...DEFAULT_DNS,
    minTtlMs: ms(c.minTtl, DEFAULT_DNS.minTtlMs),
    maxTtlMs: ms(c.maxTtl, DEFAULT_DNS.maxTtlMs),
    staleMs: ms(c.staleFor, DEFAULT_DNS.staleMs),
    maxNames: c.maxNames ?? DEFAULT_DNS.maxNames,
  };
}

export function runtimeOptions(settings: ProcessConfig, logs: LogControl, clock?: Clock): RuntimeOptions {
  const log = logs.get('proxy');
return {
    connectTimeoutMs: parseDuration(settings.connectTimeout ?? '5s'),
    backendRequestTimeoutMs: parseDuration(settings.backendRequestTimeout ?? '60s'),
    connectAttempts: settings.connectAttempts,
    retryBudget: { percent: settings.retryBudgetPercent ?? DEFAULT_RETRY_BUDGET_PERCENT, minConcurrency: settings.retryBudgetMinConcurrency ?? DEFAULT_RETRY_BUDGET_MIN_CONCURRENCY },
    maxRetryBodyBytes: settings.maxRetryBodyBytes,
    coolDown: {
      defaultMs: settings.coolDown === undefined ? DEFAULT_COOL_DOWN_MS : parseDuration(settings.coolDown),
      maxMs: settings.maxCoolDown === undefined ? DEFAULT_MAX_COOL_DOWN_MS : parseDuration(settings.maxCoolDown),
    },
    drainTimeoutMs: parseDuration(settings.drainTimeout ?? '30s'),
    drainIdleMs: settings.drainIdleTimeout ? parseDuration(settings.drainIdleTimeout) : DEFAULT_DRAIN_IDLE_MS,
    maxTraceSessions: settings.maxTraceSessions ?? 32,
    paths: { ...DEFAULT_PATH_SETTINGS, ...settings.paths },
    maxSseLineBytes: settings.maxSseLineBytes,
    maxRequestBodyBytes: settings.maxRequestBodyBytes,
    maxBufferedRequestBytes: bufferedRequestBytes(settings),
    maxConnectionsPerBind: settings.maxConnectionsPerBind,
    websockets: { maxConnections: settings.maxWebSocketConnections, idleMs: settings.websocketIdleTimeout ? parseDuration(settings.websocketIdleTimeout) : undefined },
    tlsStreams: {
      helloTimeoutMs: settings.tlsClientHelloTimeout ? parseDuration(settings.tlsClientHelloTimeout) : undefined,
      idleMs: settings.tlsIdleTimeout ? parseDuration(settings.tlsIdleTimeout) : undefined,
    },
    maxTokensChargedPerResponse: settings.maxTokensChargedPerResponse,
    maxRateLimitKeys: settings.maxRateLimitKeys,
    passwords: settings.basicAuth,
    dns: dnsSettings(settings.dns),
    clientTimeouts: {
      requestHeadersMs: settings.requestHeadersTimeout ? parseDuration(settings.requestHeadersTimeout) : DEFAULT_CLIENT_TIMEOUTS.requestHeadersMs,
      requestBodyIdleMs: settings.requestBodyIdleTimeout ? parseDuration(settings.requestBodyIdleTimeout) : DEFAULT_CLIENT_TIMEOUTS.requestBodyIdleMs,
      requestBodyMs: settings.requestBodyTimeout ? parseDuration(settings.requestBodyTimeout) : DEFAULT_CLIENT_TIMEOUTS.requestBodyMs,
      keepAliveMs: settings.keepAliveTimeout ? parseDuration(settings.keepAliveTimeout) : DEFAULT_CLIENT_TIMEOUTS.keepAliveMs,
    },
    backendBodyIdleTimeoutMs: settings.backendBodyIdleTimeout ? parseDuration(settings.backendBodyIdleTimeout) : undefined,
    maxModelLabels: settings.maxModelLabels,
    consumerMetricsTopN: settings.consumerMetricsTopN,
    log,
    rateLimitLog: logs.get('ratelimit'),
    authLog: logs.get('auth'),
    upstreamLog: logs.get('upstream'),
    clock,
  };
}
