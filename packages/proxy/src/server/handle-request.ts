// A request through the data plane, in the stages of the trace: listener by host,
// gateway-level policies (before routing), route selection by Gateway API precedence,
// route-level policies and filters, then a redirect answer or the upstream call with
// response filters, and finally the LLM tokens charged to the token limits.
// Every step reads the snapshot captured when the request arrived, so a reload never
// changes the rules under a request in flight. `t` (the tracer) is null unless a trace
// session claimed this request.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { ERRORS, type ErrorSpec } from '../errors.js';
import { applyHeaderModifier } from '../filters/header-modifier.js';
import { rewritePath } from '../filters/path.js';
import { redirectLocation } from '../filters/redirect.js';
import { estimateTokens } from '../llm/estimate.js';
import { readLlmRequest, type LlmRequest } from '../llm/request-body.js';
import { UsageMeter } from '../llm/usage-meter.js';
import type { ProxyMetrics } from '../metrics/metrics.js';
import { Admissions, type CompiledPolicy, type Refusal, type RequestFacts } from '../ratelimit/policy.js';
import type { CompiledSnapshot } from '../routing/compile.js';
import { selectRoute } from '../routing/compile.js';
import { normalizeHost } from '../routing/hostname.js';
import { effectivePolicy } from '../trace/effective-policy.js';
import type { RequestTracer } from '../trace/tracer.js';
import { addForwarded, endToEnd } from '../upstream/headers.js';
import { forward, sendError, type ForwardResult } from '../upstream/forward.js';
import type { PoolSet } from '../upstream/pools.js';
import type { EndpointStatsTable } from '../upstream/stats.js';
import type { Logger } from 'pino';
import type { InFlight } from './inflight.js';

export interface DataPlaneDeps {
  readonly pools: PoolSet;
  readonly endpointStats: EndpointStatsTable;
  readonly metrics: ProxyMetrics;
  readonly rateLimitLog: Logger;
  readonly defaultBackendTimeoutMs: number;
  readonly bodyIdleTimeoutMs: number;
}

export interface Outcome {
  readonly status: number;
  readonly route: string | null;
  readonly result: ForwardResult | null;
}

function hasBody(req: IncomingMessage): boolean {
  const len = req.headers['content-length'];
  return req.headers['transfer-encoding'] !== undefined || (len !== undefined && len !== '0');
}

function answer(res: ServerResponse, spec: ErrorSpec, t: RequestTracer | null, route: string | null): Outcome {
  const headers = sendError(res, spec);
  t?.responseSnapshot('final response', spec.status, headers);
  t?.finished();
  return { status: spec.status, route, result: null };
}

/** A request refused by a rate limit: the refusal's answer, never forwarded. */
function refuse(res: ServerResponse, refusal: Refusal, t: RequestTracer | null, route: string | null): Outcome {
  const sent = sendError(res, refusal.spec, refusal.headers);
  t?.responseSnapshot('final response', refusal.spec.status, sent);
  t?.finished();
  return { status: refusal.spec.status, route, result: null };
}

export async function handleRequest(
  snapshot: CompiledSnapshot,
  port: number,
  req: IncomingMessage,
  res: ServerResponse,
  deps: DataPlaneDeps,
  entry: InFlight,
  t: RequestTracer | null,
): Promise<Outcome> {
  const rawHost = req.headers.host;
  const host = normalizeHost(rawHost);
  const url = req.url ?? '/';
  const q = url.indexOf('?');
  const path = q < 0 ? url : url.slice(0, q);
  const query = q < 0 ? '' : url.slice(q + 1);
  const method = req.method ?? 'GET';
  if (t) {
    t.started();
    t.requestSnapshot('initial request', { method, path, query, headers: req.headers });
  }

  // The LLM body is read only when a limit needs it: the model for global descriptors, or the
  // token count of a route that counts tokens. Rate-limit state exists only when a policy does.
  let llm: LlmRequest | null = null;
  const readBody = async () => {
    if (!llm && hasBody(req)) llm = await readLlmRequest(req);
  };
  const facts = (): RequestFacts => ({ method, path, host, headers: req.headers, sourceAddress: req.socket.remoteAddress ?? '', model: llm?.model ?? null });
  let limits: Admissions | null = null;
  const runPolicy = async (policy: CompiledPolicy): Promise<Refusal | null> => {
    if (policy.global) await readBody();
    limits ??= new Admissions(deps.metrics);
    return limits.admit(policy, facts);
  };

  const listener = snapshot.binds.get(port)?.listeners.first(host);
  const gatewayRefusal = listener?.policy ? await runPolicy(listener.policy) : null;
  if (t) t.requestSnapshot('gateway policies', { method, path, query, headers: req.headers });
  if (gatewayRefusal) {
    deps.rateLimitLog.debug({ level: 'gateway', listener: listener!.ir.name }, 'request refused by a gateway-level rate limit');
    return refuse(res, gatewayRefusal, t, null);
  }
  const evaluated: string[] | undefined = t ? [] : undefined;
  const hit = listener ? selectRoute(listener, host, { method, path, query, headers: req.headers }, evaluated) : null;
  if (t) t.routeSelection(hit?.route.ir.name ?? null, evaluated!);
  if (!hit) return answer(res, ERRORS.noRoute, t, null);
  const { route, matched } = hit;
  const ir = route.ir;
  entry.route = ir.name;
  if (t) t.policySelection(effectivePolicy(route.listener.ir, ir));

  if (route.countsTokens) await readBody();
  if (route.policy) {
    const refused = await runPolicy(route.policy);
    if (refused) {
      deps.rateLimitLog.debug({ level: 'route', route: ir.name }, 'request refused by a route-level rate limit');
      return refuse(res, refused, t, ir.name);
    }
  }
  // `limits` and `llm` are assigned inside the closures above, which TypeScript's narrowing
  // does not follow; the casts below restore their declared types.
  const admitted = limits as Admissions | null;
  const limitHeaders = admitted?.responseHeaders() ?? null;

  if (route.redirect) {
    const location = redirectLocation(route.redirect, { scheme: 'http', host, listenerPort: port, path, query, matched });
    const headers = { ...limitHeaders, location, 'content-length': '0' };
    res.writeHead(route.redirect.statusCode, headers);
    res.end();
    t?.responseSnapshot('final response', route.redirect.statusCode, headers);
    t?.finished();
    return { status: route.redirect.statusCode, route: ir.name, result: null };
  }

  const headers = endToEnd(req.headers);
  if (admitted) Object.assign(headers, admitted.requestHeaders);
  let upstreamPath = path;
  for (const f of ir.filters) {
    if (f.type === 'RequestHeaderModifier') applyHeaderModifier(headers, f);
    else if (f.type === 'URLRewrite') {
      if (f.hostname) headers.host = f.hostname;
      if (f.path) upstreamPath = rewritePath(path, f.path, matched);
    }
  }
  const body = llm ? (llm as LlmRequest).body : hasBody(req) ? req : null;
  if (Buffer.isBuffer(body)) {
    headers['content-length'] = String(body.length);
    delete headers['transfer-encoding'];
  }
  if (t) t.requestSnapshot('route policies', { method, path: upstreamPath, query, headers });
  addForwarded(headers, req.socket.remoteAddress, 'http', rawHost);

  const backend = route.pickBackend();
  if (!backend) return answer(res, ERRORS.noBackend, t, ir.name);
  if (t) {
    t.requestSnapshot('final request', { method, path: upstreamPath, query, headers }, { name: backend.name, type: 'service', protocol: 'http' });
    t.backendCallStart(backend.name);
  }
  entry.stage = 'upstream';
  entry.upstream = backend.name;
  const modifiers = route.responseModifiers;
  const meter = route.countsTokens ? new UsageMeter((llm as LlmRequest | null)?.injectedUsage ?? false) : null;
  const callStart = performance.now();
  let headersAt = 0;
  const result = await forward(
    deps.pools.get(backend.name, backend.host, backend.port),
    {
      method,
      path: query ? `${upstreamPath}?${query}` : upstreamPath,
      headers,
      body,
      headersTimeoutMs: ir.timeouts.backendRequestMs ?? deps.defaultBackendTimeoutMs,
      bodyTimeoutMs: deps.bodyIdleTimeoutMs,
      requestTimeoutMs: ir.timeouts.requestMs,
    },
    res,
    {
      onResponseHeaders: (status, h) => {
        headersAt = performance.now();
        entry.stage = 'responding';
        if (t) {
          t.backendCallResult(status, null);
          t.responseSnapshot('backend response ready', status, h);
        }
        for (const m of modifiers) applyHeaderModifier(h, m);
        if (limitHeaders) Object.assign(h, limitHeaders);
        if (meter) {
          const ct = h['content-type'];
          meter.onHeaders(Array.isArray(ct) ? ct[0] : ct);
          if (meter.rewrites) delete h['content-length'];
        }
        t?.responseSnapshot('final response', status, h);
      },
      ...(meter ? { transform: (c: Buffer) => meter.transform(c), flush: () => meter.flush() } : {}),
    },
  );
  const latencyMs = (headersAt || performance.now()) - callStart;
  if (result.error?.kind !== 'TG_CLIENT_GONE') {
    deps.endpointStats.record(backend.name, result.error === null && result.status < 500, latencyMs);
  }
  if (headersAt) deps.metrics.observeUpstreamLatency(ir.name, latencyMs / 1000);
  if (result.error && !result.responded) {
    const spec = result.error.spec ?? ERRORS.upstreamReset;
    t?.backendCallResult(spec.status, { kind: result.error.kind, message: result.error.message });
    return { ...answer(res, spec, t, ir.name), result };
  }
  const up = result.upstreamStatus;
  if (meter && up !== null && up >= 200 && up < 300) {
    const charged = await chargeTokens(meter, llm, admitted, deps, ir.name);
    t?.finished(charged);
  } else {
    t?.finished();
  }
  return { status: result.status, route: ir.name, result };
}

/** Charges a finished LLM response to every token limit that admitted it (spec §3.1). */
async function chargeTokens(
  meter: UsageMeter,
  llm: LlmRequest | null,
  admitted: Admissions | null,
  deps: DataPlaneDeps,
  route: string,
): Promise<{ total: number; estimated: boolean; model: string | null }> {
  const usage = meter.result();
  const model = llm?.model ?? null;
  let total = usage.reported;
  const estimated = total === null;
  if (total === null) total = await estimateTokens(llm?.promptText ?? '', usage.completionText);
  if (llm?.unparsed) deps.rateLimitLog.debug({ route, reason: llm.unparsed }, 'LLM request body not parsed; tokens estimated');
  admitted?.charge(total);
  deps.metrics.tokens.inc({ route, model: model ?? 'unknown', source: estimated ? 'estimated' : 'reported' }, total);
  return { total, estimated, model };
}
