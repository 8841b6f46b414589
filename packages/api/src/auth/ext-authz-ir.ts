// ExtAuthzConfig to ExtAuthzIR: the service's address (through PolicySources, so a cluster
// reaches it by backendRef only), the defaults written out, header names lower-cased (HTTP/1.1
// and HTTP/2 header names are case-insensitive; the proxy compares them in lower case).
import { parseDuration } from '../duration.js';
import { joinPath, type Problem } from '../validation-error.js';
import type { ExtAuthzConfig, ExtAuthzIR } from './ext-authz.js';
import type { PolicySources } from './sources.js';

export type { ExtAuthzIR };

export const EXT_AUTHZ_DEFAULT_TIMEOUT_MS = 200;
/** A request waits at most this long for its authorization service. */
export const EXT_AUTHZ_MAX_TIMEOUT_MS = 60_000;

const lower = (names: readonly string[]): string[] => [...new Set(names.map((n) => n.toLowerCase()))];

export function toExtAuthzIR(config: ExtAuthzConfig, at: string, sources: PolicySources, problems: Problem[]): ExtAuthzIR | null {
  const failureMode = config.failureMode ?? 'FailClosed';
  const protocol = config.protocol ?? 'GRPC';
  const before = problems.length;
  if (protocol === 'GRPC' && config.http !== undefined) {
    problems.push({ path: joinPath(at, 'http'), message: 'applies to protocol HTTP only; remove it or set protocol: HTTP' });
  }
  if (protocol === 'GRPC' && config.headersToUpstream !== undefined) {
    problems.push({ path: joinPath(at, 'headersToUpstream'), message: 'applies to protocol HTTP only (a gRPC service names the headers it adds in its OK response); remove it or set protocol: HTTP' });
  }
  const timeoutMs = config.timeout === undefined ? EXT_AUTHZ_DEFAULT_TIMEOUT_MS : parseDuration(config.timeout);
  if (timeoutMs > EXT_AUTHZ_MAX_TIMEOUT_MS) {
    problems.push({ path: joinPath(at, 'timeout'), message: `got ${JSON.stringify(config.timeout)}: at most 60s; every request of the route waits for the service (default 200ms)` });
  }
  const service = sources.outbound(joinPath(at, 'service'), config.service, 'external authorization service', failureMode);
  if (!service.ok) problems.push(service.problem);
  if (!service.ok || problems.length > before) return null;
  return {
    service: service.value,
    protocol,
    pathPrefix: config.http?.pathPrefix ?? '',
    includeRequestHeaders: config.includeRequestHeaders ? lower(config.includeRequestHeaders) : null,
    headersToUpstream: lower(config.headersToUpstream ?? []),
    headersToClient: config.headersToClient ? lower(config.headersToClient) : null,
    withBody: config.withBody ? { maxBytes: config.withBody.maxBytes, allowPartial: config.withBody.allowPartial ?? false } : null,
    timeoutMs,
    failureMode,
  };
}
