// The /config_dump body: the loaded snapshot flattened into top-level collections, so a
// reader (or `gwctl config all --file`) can list routes or backends without walking binds.
// Secrets serialise as "[redacted]" (they are Secret objects in the snapshot), and so do the
// values routes match on when they are credentials: a header of the redaction list, a query
// parameter whose value is a credential. A TLS listener shows its certificates' subject, names
// and validity, never the key. Authentication policies show summarized (auth/summary.ts).
import { caBundleInfo, certificateInfo, DEFAULT_LIMITS, isSensitiveHeader, isSensitiveQueryParam, REDACTED, type BackendIR, type ListenerTlsIR, type PolicyIR, type ProxySnapshot, type RouteMatchIR, type ValueMatchIR } from '@tollgate/api';
import type { EndpointView } from '../upstream/endpoints.js';
import { upstreamNames } from '../routing/backend-picker.js';
import { endpointsByName } from '../routing/service-endpoints.js';
import { tlsView } from '../upstream/backend-tls.js';
import { backendKey, type CoolDowns } from '../upstream/cool-downs.js';
import type { RetrySettingsView } from '../routing/retry-budget.js';
import { withAuthSummarized } from '../auth/summary.js';

function round(n: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(n * f) / f;
}

function redactValues(list: readonly ValueMatchIR[], sensitive: (name: string) => boolean): ValueMatchIR[] {
  return list.map((m) => (sensitive(m.name) ? { ...m, value: REDACTED } : m));
}

function dumpMatch(m: RouteMatchIR): RouteMatchIR {
  return { ...m, headers: redactValues(m.headers, isSensitiveHeader), queryParams: redactValues(m.queryParams, isSensitiveQueryParam) };
}

// What an operator needs to check a certificate (whose it is, for which names, until when):
// public facts parsed from the PEM; the key is not dumped in any form.
function dumpTls(tls: ListenerTlsIR) {
  return {
    mode: tls.mode,
    certificates: tls.certificates.map((c) => ({ origin: c.origin, ...(certificateInfo(c.certificate) ?? { subject: '(unparsable certificate)' }) })),
    // The CAs a client certificate must chain to, as facts (the bundle itself is public, but long).
    ...(tls.clientValidation
      ? { clientValidation: { mode: tls.clientValidation.mode, origins: tls.clientValidation.origins, caCertificates: caBundleInfo(tls.clientValidation.caCertificates) } }
      : {}),
  };
}

/** Process settings that bound what a client may take; shown so an operator can check them. */
export interface DumpSettings {
  readonly requestHeadersTimeoutMs: number;
  readonly requestBodyIdleTimeoutMs: number;
  readonly requestBodyTimeoutMs: number;
  readonly keepAliveTimeoutMs: number;
  readonly backendBodyIdleTimeoutMs: number;
  readonly maxRequestBodyBytes: number;
  readonly maxBufferedRequestBytes: number;
  readonly maxConnectionsPerBind: number;
  readonly maxWebSocketConnections: number;
  readonly websocketIdleTimeoutMs: number;
  /** config.tlsClientHelloTimeout and config.tlsIdleTimeout (TLS listeners). */
  readonly tlsClientHelloTimeoutMs: number;
  readonly tlsIdleTimeoutMs: number;
  readonly maxTraceSessions: number;
  readonly maxTokensChargedPerResponse: number;
  readonly maxRateLimitKeys: number;
  /** config.consumerMetricsTopN in force. */
  readonly consumerMetricsTopN: number;
  /** The HTTP/2 settings every listener's HTTP/2 connections get (server/http2.ts), and what HTTPS listeners offer in ALPN. */
  readonly http2: { readonly maxConcurrentStreams: number; readonly maxHeaderListBytes: number; readonly alpnProtocols: readonly string[] };
  /** config.basicAuth with its defaults applied. */
  readonly basicAuth: { readonly workers: number; readonly maxQueue: number; readonly cacheEntries: number };
  /** config.retryBudgetPercent, retryBudgetMinConcurrency, maxRetryBodyBytes, coolDown and maxCoolDown in force. */
  readonly retries: RetrySettingsView;
  /** Threads serving requests, the main thread included (config.workers or --workers). */
  readonly workers: number;
}

/** The live state config_dump and /backends read besides the snapshot. */
export interface BackendState {
  /** Each endpoint's state by endpointKey(), every thread's merged (upstream/endpoints.ts). */
  readonly endpoints: ReadonlyMap<string, EndpointView>;
  readonly coolDowns: CoolDowns;
}

export function configDump(ir: ProxySnapshot, loadedAt: number, state: BackendState, settings: DumpSettings) {
  const listeners = ir.binds.flatMap((b) =>
    b.listeners.map((l) => ({
      name: l.name,
      bind: `${b.address}:${b.port}`,
      protocol: l.protocol,
      hostname: l.hostname,
      ...(l.protocol === 'HTTPS' ? { tls: dumpTls(l.tls) } : {}),
      routes: l.routes.map((r) => r.name),
    })),
  );
  const routes = ir.binds.flatMap((b) =>
    b.listeners.flatMap((l) =>
      l.routes.map((r) => ({
        name: r.name,
        listener: l.name,
        hostnames: r.hostnames,
        matches: r.matches.map(dumpMatch),
        filters: r.filters,
        origin: r.origin,
        backends: r.backends.map((x) => ({ name: x.name, weight: x.weight, ...(x.priority ? { priority: x.priority } : {}), ...('provider' in x && x.provider ? { provider: x.provider } : {}) })),
        timeouts: r.timeouts,
        retry: r.retry ?? null,
      })),
    ),
  );
  const backends = backendHealth(ir, state);
  // The origin (the GatewayPolicy or config path it came from) beside the policy, whose keys
  // stay the policy kinds; the authentication kinds summarized as the trace shows them (no
  // list that grows with the consumers: a policy of 100,000 keys is a count).
  const policyEntry = (target: { kind: string; name: string }, level: string, { origin, ...policy }: PolicyIR) => ({ target, level, origin, policy: withAuthSummarized(policy) });
  const policies = ir.binds.flatMap((b) =>
    b.listeners.flatMap((l) => [
      ...(l.policy ? [policyEntry({ kind: 'listener', name: l.name }, 'gateway', l.policy)] : []),
      ...l.routes.flatMap((r) => (r.policy ? [policyEntry({ kind: 'route', name: r.name }, 'route', r.policy)] : [])),
    ]),
  );
  return {
    version: ir.version,
    source: ir.source,
    loadedAt: new Date(loadedAt).toISOString(),
    settings,
    // The bounds this snapshot's regular expressions and CEL expressions were checked with,
    // and that requests are held to (the defaults when the snapshot names none).
    limits: ir.limits ?? DEFAULT_LIMITS,
    binds: ir.binds.map((b) => ({ port: b.port, address: b.address, listeners: b.listeners.map((l) => l.name) })),
    listeners,
    routes,
    backends,
    workloads: [] as unknown[],
    services: [] as unknown[],
    policies,
  };
}

// A snapshot's distinct backends, by backendKey(), kept by snapshot: /backends, polled while
// endpoints change, walks the routes once per snapshot rather than once per call.
const distinctBackends = new WeakMap<ProxySnapshot, readonly (readonly [string, BackendIR])[]>();

function backendsOf(ir: ProxySnapshot): readonly (readonly [string, BackendIR])[] {
  let out = distinctBackends.get(ir);
  if (out === undefined) {
    const byKey = new Map<string, BackendIR>();
    for (const b of ir.binds)
      for (const l of b.listeners)
        for (const r of l.routes)
          // In first-seen order, the last one seen of a key shown (as the dump always showed it).
          for (const x of r.backends) byKey.set(backendKey(x), x);
    distinctBackends.set(ir, (out = [...byKey]));
  }
  return out;
}

/**
 * The backends of a snapshot with the live state of their endpoints (the `backends` of
 * /config_dump and the body of /backends): a standalone backend is one endpoint (its
 * address); a Service has one per ready endpoint. Backends at one address with different TLS
 * settings are listed apart (they have pools of their own).
 */
export function backendHealth(ir: ProxySnapshot, { endpoints, coolDowns }: BackendState) {
  const endpoint = (key: string): EndpointView => {
    const v = endpoints.get(key) ?? { address: key.split('#')[0]!, health: 1, requests: 0, latencyMs: 0, inFlight: 0, ejectedUntil: null };
    return { ...v, health: round(v.health, 4), latencyMs: round(v.latencyMs, 3) };
  };
  const ready = endpointsByName(ir.endpoints);
  const endpointsOf = (name: string) => ready.get(name) ?? [];
  return backendsOf(ir).map(([key, x]) => {
    // Null unless the backend answered 429 or 503 to a route that fails over or retries, moments ago.
    const coolDown = coolDowns.view(key);
    switch (x.kind) {
      case 'static':
        return { type: 'Backend', name: x.name, namespace: '', host: x.host, port: x.port, ...(x.provider ? { provider: x.provider } : {}), tls: tlsView(x.tls), coolDown, endpoints: upstreamNames(x, endpointsOf).map(endpoint) };
      case 'service':
        return { type: 'Service', name: x.name, namespace: x.namespace, host: x.service, port: x.port, tls: tlsView(x.tls), coolDown, endpoints: upstreamNames(x, endpointsOf).map(endpoint) };
      case 'external':
        return { type: 'Backend', name: x.name, namespace: x.namespace, host: x.hostname, port: x.port, ...(x.provider ? { provider: x.provider } : {}), tls: tlsView(x.tls), coolDown, endpoints: upstreamNames(x, endpointsOf).map(endpoint) };
      case 'invalid':
        return { type: 'Invalid', name: x.name, namespace: '', host: '', port: 0, reason: x.reason, coolDown: null, endpoints: [] };
    }
  });
}
