// Standalone config: text -> validated StandaloneConfig -> ProxySnapshot.
// Pure functions: reading the file and watching it belong to the proxy.
import { createHash } from 'node:crypto';
import { compile } from './ajv.js';
import { parseDuration } from './duration.js';
import { requireHostPort } from './host-port.js';
import { isDefaultLimits, resolveLimits, type EvaluationLimits } from './limits.js';
import { checkRouteRule, checkTrafficPolicy, checkUnique } from './rules.js';
import { checkProcessConfig } from './process-settings.js';
import { StandaloneConfig, type BackendConfig, type ClientValidationConfig, type ListenerConfig, type RouteConfig } from './schema/standalone-config.js';
import { checkProvider, toProviderIR } from './provider/convert.js';
import { backendTlsIR, checkSubjectAltNames, readCaBundle } from './backend-tls.js';
import { toRetryIR } from './resilience/retry.js';
import { clientValidationIR, DEFAULT_CLIENT_VALIDATION_MODE } from './client-validation.js';
import type { HTTPHeaderFilter, HTTPPathModifier, HTTPRouteFilter, HTTPRouteMatch } from './schema/gateway-api.js';
import { LOCAL_MONTHS_MESSAGE, type GlobalDescriptor, type LocalRateLimit, type PolicySet, type RateLimitKey } from './schema/traffic-policy.js';
import { isSensitiveHeader, Secret } from './secret.js';
import { withVersion } from './snapshot-wire.js';
import { checkTlsBinds, tlsCertificateEntries, toTlsBinds } from './standalone-tls.js';
import type {
  BackendIR,
  CertificateIR,
  ClientValidationIR,
  FilterIR,
  HeaderModifierIR,
  ListenerIR,
  LocalRateLimitIR,
  PathModifierIR,
  PolicyIR,
  PolicyOriginIR,
  ProxySnapshot,
  RateLimitDescriptorIR,
  RateLimitKeyIR,
  RouteIR,
  RouteMatchIR,
  SnapshotSource,
  StaticBackendIR,
} from './snapshot.js';
import { joinPath, ValidationError, type Problem } from './validation-error.js';
import { parseConfigText } from './parse-text.js';

export { parseConfigText };
import { NO_AUTH, toAuthIR } from './auth/convert.js';
import { toTransformationIR } from './transformation/transformation-ir.js';
import { toCorsIR } from './traffic/cors-ir.js';
import { NO_TRAFFIC_KINDS, toTrafficKindsIR } from './traffic/kinds.js';
import { toExtProcIR } from './traffic/ext-proc-ir.js';
import { NO_SOURCES, type PolicySources } from './auth/sources.js';

const validateSchema = compile(StandaloneConfig);

/** Validates a parsed config: schema first, then the cross-field rules. */
export function validateStandaloneConfig(value: unknown, subject = 'config'): StandaloneConfig {
  const result = validateSchema(value);
  if (!result.ok) throw new ValidationError(subject, result.problems);
  const cfg = result.value;
  const out: Problem[] = [];
  const limits = configLimits(cfg);
  // config.logLevel is checked by the proxy, which knows its module names.
  checkProcessConfig(cfg.config, 'config', out);
  checkUnique(cfg.binds, (b) => String(b.port), (i) => `binds[${i}].port`, 'port', out);
  // Default names take part: a listener named like another's default is a duplicate too.
  const allListeners = cfg.binds.flatMap((b, bi) => b.listeners.map((l, li) => ({ name: listenerName(b.port, l, li), path: `binds[${bi}].listeners[${li}]` })));
  checkUnique(allListeners, (x) => x.name, (i) => `${allListeners[i]!.path}.name`, 'listener name', out);
  cfg.binds.forEach((bind, bi) => {
    checkUnique(bind.listeners, (l) => l.hostname ?? '*', (li) => `binds[${bi}].listeners[${li}].hostname`, 'listener hostname on one port', out);
    const protocol = bind.listeners[0]?.protocol;
    bind.listeners.forEach((listener, li) => {
      const lp = `binds[${bi}].listeners[${li}]`;
      if (listener.protocol !== protocol) {
        out.push({ path: `${lp}.protocol`, message: `got ${listener.protocol}; every listener on port ${bind.port} must be ${protocol} (a port is one plain or one TLS socket); move it to another bind` });
      }
      if (listener.protocol === 'HTTPS' && !listener.tls) out.push({ path: `${lp}.tls`, message: 'required field is missing: an HTTPS listener needs tls.certificates' });
      if (listener.protocol === 'HTTP' && listener.tls) out.push({ path: `${lp}.tls`, message: 'is set on an HTTP listener; set protocol: HTTPS or remove tls' });
      checkTrafficPolicy(listener.policies?.traffic, joinPath(joinPath(lp, 'policies'), 'traffic'), 'standalone', limits, out);
      checkUnique(listener.routes, (r) => r.name, (ri) => `${lp}.routes[${ri}].name`, 'route name', out);
      listener.routes.forEach((route, ri) => {
        const rp = `${lp}.routes[${ri}]`;
        // A direct response (the route's, or every route's from the listener) needs no backend.
        const answersItself = route.policies?.traffic?.directResponse !== undefined || listener.policies?.traffic?.directResponse !== undefined;
        checkRouteRule({ ...route, backends: route.backends ?? [], answersItself }, rp, limits, out);
        route.backends?.forEach((b, bi) => {
          if (b.provider) checkProvider(b.provider, `${rp}.backends[${bi}].provider`, out);
          checkSubjectAltNames(b.tls?.subjectAltNames, `${rp}.backends[${bi}].tls.subjectAltNames`, out);
          if (b.protocol === 'H2C' && b.tls) out.push({ path: `${rp}.backends[${bi}].protocol`, message: 'H2C is HTTP/2 over cleartext and cannot go with tls; set protocol: H2 for HTTP/2 over TLS, or remove tls' });
          if (b.protocol === 'H2' && !b.tls) out.push({ path: `${rp}.backends[${bi}].protocol`, message: 'H2 is HTTP/2 over TLS and needs tls; add tls (tls: {} for the system roots), or set protocol: H2C for HTTP/2 over cleartext' });
        });
        checkTrafficPolicy(route.policies?.traffic, joinPath(joinPath(rp, 'policies'), 'traffic'), 'standalone', limits, out);
      });
    });
  });
  if (cfg.tlsBinds) checkTlsBinds(cfg.tlsBinds, cfg.binds.map((b) => b.port), allListeners.map((l) => l.name), out);
  if (out.length) throw new ValidationError(subject, out);
  return cfg;
}

/** The expression bounds of a config: its `config.regex` and `config.cel` over the defaults. */
export function configLimits(cfg: StandaloneConfig): EvaluationLimits {
  return resolveLimits({ regex: cfg.config?.regex, cel: cfg.config?.cel });
}

export function contentVersion(value: unknown): string {
  return createHash('sha256').update(JSON.stringify(value)).digest('hex').slice(0, 12);
}

/**
 * The certificate and key read from the files of `tls.certificates[i]` at JSON path `path`
 * (the proxy reads and checks them; this module does no I/O).
 */
export type CertificateLookup = (path: string) => { readonly certificate: string; readonly key: Secret; readonly certFile: string; readonly keyFile: string };

const noCertificates: CertificateLookup = (path) => {
  throw new Error(`${path}: certificate files were not read`);
};

/**
 * The snapshot of a validated config. `sources` reads the files the policies name (keys,
 * htpasswd, JWKS); a source that cannot be read or parsed throws a ValidationError naming
 * every such field.
 */
export function standaloneToSnapshot(cfg: StandaloneConfig, source: SnapshotSource, certificates: CertificateLookup = noCertificates, sources: PolicySources = NO_SOURCES): ProxySnapshot {
  const limits = configLimits(cfg);
  const problems: Problem[] = [];
  const conv: Conversion = { certificates, sources, problems };
  const snapshot = withVersion({
    source,
    ...(isDefaultLimits(limits) ? {} : { limits }),
    binds: cfg.binds.map((bind, bi) => ({
      port: bind.port,
      address: bind.address ?? '0.0.0.0',
      listeners: bind.listeners.map((l, li) => toListener(listenerName(bind.port, l, li), l, `binds[${bi}].listeners[${li}]`, conv)),
    })),
    ...(cfg.tlsBinds?.length ? { tlsBinds: toTlsBinds(cfg.tlsBinds, (at) => certificateAt(at, conv)) } : {}),
  });
  if (problems.length) throw new ValidationError(source.kind === 'file' ? source.path : '', problems);
  return snapshot;
}

interface Conversion {
  readonly certificates: CertificateLookup;
  readonly sources: PolicySources;
  readonly problems: Problem[];
}

/**
 * JSON paths of every certificate of a config with its files: each listener's
 * `tls.certificates[i]` and each backend's `tls.clientCertificate`.
 */
export function certificateEntries(cfg: StandaloneConfig): { path: string; certFile: string; keyFile: string }[] {
  return [...tlsCertificateEntries(cfg.tlsBinds ?? []), ...httpCertificateEntries(cfg)];
}

function httpCertificateEntries(cfg: StandaloneConfig): { path: string; certFile: string; keyFile: string }[] {
  return cfg.binds.flatMap((b, bi) =>
    b.listeners.flatMap((l, li) => {
      const lp = `binds[${bi}].listeners[${li}]`;
      const listener = (l.tls?.certificates ?? []).map((c, ci) => ({ path: `${lp}.tls.certificates[${ci}]`, ...c }));
      const backends = l.routes.flatMap((r, ri) =>
        (r.backends ?? []).flatMap((x, xi) => (x.tls?.clientCertificate ? [{ path: `${lp}.routes[${ri}].backends[${xi}].tls.clientCertificate`, ...x.tls.clientCertificate }] : [])),
      );
      return [...listener, ...backends];
    }),
  );
}

/** A certificate the proxy read (conv.certificates) at JSON path `at`, as the IR carries it. */
function certificateAt(at: string, conv: Conversion): CertificateIR {
  const c = conv.certificates(at);
  return { origin: { kind: 'config', path: at, certFile: c.certFile, keyFile: c.keyFile }, certificate: c.certificate, key: c.key };
}

/** A listener's name, or its default: listener-<port>-<index in the bind>. */
export function listenerName(port: number, l: { readonly name?: string }, index: number): string {
  return l.name ?? `listener-${port}-${index}`;
}

function toListener(name: string, l: ListenerConfig, path: string, conv: Conversion): ListenerIR {
  const hostname = l.hostname ?? null;
  const policy = toPolicy(l.policies, { kind: 'config', path: `${path}.policies` }, conv.sources, conv.problems);
  const routes = l.routes.map((r, ri) => toRoute(name, r, `${path}.routes[${ri}]`, conv));
  // validateStandaloneConfig has checked that HTTPS comes with tls.
  if (l.protocol === 'HTTP' || !l.tls) return { name, protocol: 'HTTP', hostname, policy, routes };
  const certs = l.tls.certificates.map((_, ci) => certificateAt(`${path}.tls.certificates[${ci}]`, conv));
  const validation = l.tls.clientValidation ? toClientValidation(l.tls.clientValidation, `${path}.tls.clientValidation`, conv) : null;
  return { name, protocol: 'HTTPS', hostname, tls: { mode: 'Terminate', certificates: certs, ...(validation ? { clientValidation: validation } : {}) }, policy, routes };
}

/** A listener's client validation: its CA file read through the policy sources (so a reload follows an edit of it). */
function toClientValidation(v: ClientValidationConfig, at: string, conv: Conversion): ClientValidationIR | null {
  const pem = readCaBundle(conv.sources, `${at}.caFile`, { file: v.caFile }, conv.problems);
  if (pem === null) return null;
  const r = clientValidationIR([{ origin: `file ${v.caFile}`, pem }], v.mode ?? DEFAULT_CLIENT_VALIDATION_MODE);
  if (!r.ok) conv.problems.push({ path: `${at}.caFile`, message: r.problem });
  return r.ok ? r.ir : null;
}

/** A route timeout in ms; 0s means none (Gateway API), which the IR says with null. */
function timeoutMs(text: string | undefined): number | null {
  if (text === undefined) return null;
  const ms = parseDuration(text);
  return ms === 0 ? null : ms;
}

function toRoute(listener: string, r: RouteConfig, path: string, conv: Conversion): RouteIR {
  const route: RouteIR = {
    name: `${listener}/${r.name}`,
    origin: { kind: 'config', path },
    hostnames: r.hostnames ?? [],
    matches: toMatches(r.matches),
    filters: (r.filters ?? []).map(toFilter),
    policy: toPolicy(r.policies, { kind: 'config', path: `${path}.policies` }, conv.sources, conv.problems),
    backends: (r.backends ?? []).map((b, bi) => toBackend(b, `${path}.backends[${bi}]`, conv)),
    timeouts: {
      requestMs: timeoutMs(r.timeouts?.request),
      // 0 rather than null: null falls back to config.backendRequestTimeout, 0 waits without limit.
      backendRequestMs: r.timeouts?.backendRequest === undefined ? null : parseDuration(r.timeouts.backendRequest),
    },
  };
  return r.retry ? { ...route, retry: toRetryIR(r.retry) } : route;
}

export function toMatches(matches: readonly HTTPRouteMatch[] | undefined): RouteMatchIR[] {
  const list = matches?.length ? matches : [{}];
  return list.map((m) => ({
    path: { type: m.path?.type ?? 'PathPrefix', value: m.path?.value ?? '/' },
    method: m.method ?? null,
    headers: (m.headers ?? []).map((h) => ({ type: h.type ?? 'Exact', name: h.name.toLowerCase(), value: h.value })),
    queryParams: (m.queryParams ?? []).map((q) => ({ type: q.type ?? 'Exact', name: q.name, value: q.value })),
  }));
}

function toHeaderModifier(f: HTTPHeaderFilter): HeaderModifierIR {
  const values = (list: HTTPHeaderFilter['set']) =>
    (list ?? []).map((h) => {
      const name = h.name.toLowerCase();
      return { name, value: isSensitiveHeader(name) ? new Secret(h.value) : h.value };
    });
  return { set: values(f.set), add: values(f.add), remove: (f.remove ?? []).map((n) => n.toLowerCase()) };
}

function toPathModifier(p: HTTPPathModifier | undefined): PathModifierIR | null {
  if (!p) return null;
  return p.type === 'ReplaceFullPath'
    ? { type: 'ReplaceFullPath', value: p.replaceFullPath ?? '/' }
    : { type: 'ReplacePrefixMatch', value: p.replacePrefixMatch ?? '/' };
}

// The rules have checked that the field named by `type` is present.
export function toFilter(f: HTTPRouteFilter): FilterIR {
  switch (f.type) {
    case 'RequestHeaderModifier':
      return { type: f.type, ...toHeaderModifier(f.requestHeaderModifier ?? {}) };
    case 'ResponseHeaderModifier':
      return { type: f.type, ...toHeaderModifier(f.responseHeaderModifier ?? {}) };
    case 'RequestRedirect': {
      const r = f.requestRedirect ?? {};
      return {
        type: f.type,
        scheme: r.scheme ?? null,
        hostname: r.hostname ?? null,
        path: toPathModifier(r.path),
        port: r.port ?? null,
        statusCode: r.statusCode ?? 302,
      };
    }
    case 'URLRewrite': {
      const r = f.urlRewrite ?? {};
      return { type: f.type, hostname: r.hostname ?? null, path: toPathModifier(r.path) };
    }
    case 'CORS':
      return { type: f.type, ...toCorsIR(f.cors ?? {}) };
  }
}

function toBackend(b: BackendConfig, path: string, conv: Conversion): BackendIR {
  const { host, port } = requireHostPort(b.host, 'backends[].host');
  // A priority only when not the default: configs without failover keep their snapshot versions.
  const backend: StaticBackendIR = { kind: 'static', name: b.host, host, port, weight: b.weight ?? 1, ...(b.priority ? { priority: b.priority } : {}), ...(b.protocol === 'H2C' ? { protocol: 'h2c' as const } : b.protocol === 'H2' ? { protocol: 'h2' as const } : {}) };
  const provider = b.provider ? toProviderIR(b.provider, `${path}.provider`, b.provider.apiKey ? { at: `${path}.provider.apiKey`, ref: { file: b.provider.apiKey.file } } : null, conv.sources, conv.problems) : null;
  const withProvider = provider ? { ...backend, provider } : backend;
  if (!b.tls) return withProvider;
  const at = `${path}.tls`;
  const ca = b.tls.caFile === undefined ? null : readCaBundle(conv.sources, `${at}.caFile`, { file: b.tls.caFile }, conv.problems);
  const tls = backendTlsIR({
    caCertificates: ca,
    hostname: b.tls.hostname ?? host,
    subjectAltNames: b.tls.subjectAltNames,
    clientCertificate: b.tls.clientCertificate ? certificateAt(`${at}.clientCertificate`, conv) : null,
    minVersion: b.tls.minVersion,
  });
  return { ...withProvider, tls };
}

/** A key as the proxy reads it; header names lower-cased. The schema has checked the fields each type needs. */
function toKeyIR(by: RateLimitKey): RateLimitKeyIR {
  switch (by.type) {
    case 'Consumer':
    case 'ConsumerGroup':
    case 'ClientCertificate':
      return { type: by.type };
    case 'Claim':
      return { type: 'Claim', name: by.name ?? '' };
    case 'Header':
      return { type: 'Header', name: (by.name ?? '').toLowerCase() };
    case 'Expression':
      return { type: 'Expression', expression: by.expression ?? '' };
  }
}

/** A local limit; null (and a problem) for Months, which checkTrafficPolicy and the CRD's rule refuse before conversion. */
function toLocalLimit(e: LocalRateLimit, at: string, problems: Problem[]): LocalRateLimitIR | null {
  if (e.unit === 'Months') {
    problems.push({ path: `${at}.unit`, message: LOCAL_MONTHS_MESSAGE });
    return null;
  }
  const by = e.by ? { by: toKeyIR(e.by) } : {};
  const name = e.name !== undefined ? { name: e.name } : {};
  const o = e.overrides;
  // checkTrafficPolicy and the CRD's rules have made every override of the entry's kind.
  return e.requests !== undefined
    ? {
        kind: 'requests',
        requests: e.requests,
        burst: e.burst ?? 0,
        unit: e.unit,
        ...by,
        ...(o ? { overrides: o.map((x) => ({ key: x.key, requests: x.requests ?? 0, burst: x.burst ?? 0 })) } : {}),
        ...name,
      }
    : { kind: 'tokens', tokens: e.tokens ?? 0, unit: e.unit, ...by, ...(o ? { overrides: o.map((x) => ({ key: x.key, tokens: x.tokens ?? 0 })) } : {}), ...name };
}

function toDescriptor(d: GlobalDescriptor): RateLimitDescriptorIR {
  return {
    entries: (d.entries ?? []).map((e) => ({ ...e })),
    unit: d.unit,
    ...(d.by ? { by: toKeyIR(d.by) } : {}),
    ...(d.limit ? { limit: { requestsPerUnit: d.limit.requestsPerUnit, unit: d.limit.unit } } : {}),
    ...(d.overrides ? { overrides: d.overrides.map((x) => ({ key: x.key, requestsPerUnit: x.requestsPerUnit })) } : {}),
    ...(d.name !== undefined ? { name: d.name } : {}),
  };
}

/**
 * A policy as the proxy runs it; null when it sets nothing. The sources its authentication
 * kinds name are read through `sources`; what cannot be read goes to `problems`, relative to
 * `<origin path>.traffic` (standalone) or `spec.traffic` (a GatewayPolicy).
 */
export function toPolicy(p: PolicySet | undefined, origin: PolicyOriginIR, sources: PolicySources = NO_SOURCES, problems: Problem[] = []): PolicyIR | null {
  const at = origin.kind === 'config' ? `${origin.path}.traffic` : 'spec.traffic';
  const auth = toAuthIR(p?.traffic, at, sources, problems);
  const t = p?.traffic?.transformation;
  const transformation = t ? toTransformationIR(t) : null;
  const kinds = toTrafficKindsIR(p?.traffic, at, problems);
  const ep = p?.traffic?.extProc;
  const extProc = ep ? toExtProcIR(ep, `${at}.extProc`, sources, problems) : null;
  const rl = p?.traffic?.rateLimit;
  if (!rl) return auth === NO_AUTH && !transformation && !extProc && kinds === NO_TRAFFIC_KINDS ? null : { origin, localRateLimit: null, remoteRateLimit: null, ...auth, transformation, ...kinds, extProc };
  const converted = rl.local?.flatMap((e, i) => toLocalLimit(e, `${at}.rateLimit.local[${i}]`, problems) ?? []);
  const local = converted?.length ? converted : null;
  const g = rl.global;
  const remote = g
    ? {
        service: g.service.host ?? '',
        domain: g.domain,
        descriptors: g.descriptors.map(toDescriptor),
        failureMode: g.failureMode ?? 'FailOpen',
        timeoutMs: g.timeout ? parseDuration(g.timeout) : 100,
        tokenReservation: g.tokenReservation ?? 'Estimate',
      }
    : null;
  if (!local && !remote && auth === NO_AUTH && !transformation && !extProc && kinds === NO_TRAFFIC_KINDS) return null;
  return { origin, localRateLimit: local, remoteRateLimit: remote, ...auth, transformation, ...kinds, extProc };
}
