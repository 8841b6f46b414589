// A request through the data plane, in the stages of the trace: listener by host,
// gateway-level policies, route selection by Gateway API precedence, route-level policies
// and filters, then a redirect answer or the upstream call with response filters.
// Every step reads the snapshot captured when the request arrived, so a reload never
// changes the rules under a request in flight. `t` (the tracer) is null unless a trace
// session claimed this request.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { ERRORS, type ErrorSpec } from '../errors.js';
import { applyHeaderModifier } from '../filters/header-modifier.js';
import { rewritePath } from '../filters/path.js';
import { redirectLocation } from '../filters/redirect.js';
import type { CompiledSnapshot } from '../routing/compile.js';
import { selectRoute } from '../routing/compile.js';
import { normalizeHost } from '../routing/hostname.js';
import { effectivePolicy } from '../trace/effective-policy.js';
import type { RequestTracer } from '../trace/tracer.js';
import { addForwarded, endToEnd } from '../upstream/headers.js';
import { forward, sendError, type ForwardResult } from '../upstream/forward.js';
import type { PoolSet } from '../upstream/pools.js';
import type { EndpointStatsTable } from '../upstream/stats.js';
import type { InFlight } from './inflight.js';

export interface DataPlaneDeps {
  readonly pools: PoolSet;
  readonly endpointStats: EndpointStatsTable;
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

  const listener = snapshot.binds.get(port)?.listeners.first(host);
  if (t) t.requestSnapshot('gateway policies', { method, path, query, headers: req.headers });
  const evaluated: string[] | undefined = t ? [] : undefined;
  const hit = listener ? selectRoute(listener, host, { method, path, query, headers: req.headers }, evaluated) : null;
  if (t) t.routeSelection(hit?.route.ir.name ?? null, evaluated!);
  if (!hit) return answer(res, ERRORS.noRoute, t, null);
  const { route, matched } = hit;
  const ir = route.ir;
  entry.route = ir.name;
  if (t) t.policySelection(effectivePolicy(route.listener.ir, ir));

  if (route.redirect) {
    const location = redirectLocation(route.redirect, { scheme: 'http', host, listenerPort: port, path, query, matched });
    const headers = { location, 'content-length': '0' };
    res.writeHead(route.redirect.statusCode, headers);
    res.end();
    t?.responseSnapshot('final response', route.redirect.statusCode, headers);
    t?.finished();
    return { status: route.redirect.statusCode, route: ir.name, result: null };
  }

  const headers = endToEnd(req.headers);
  let upstreamPath = path;
  for (const f of ir.filters) {
    if (f.type === 'RequestHeaderModifier') applyHeaderModifier(headers, f);
    else if (f.type === 'URLRewrite') {
      if (f.hostname) headers.host = f.hostname;
      if (f.path) upstreamPath = rewritePath(path, f.path, matched);
    }
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
  const callStart = performance.now();
  let headersAt = 0;
  const result = await forward(
    deps.pools.get(backend.name, backend.host, backend.port),
    {
      method,
      path: query ? `${upstreamPath}?${query}` : upstreamPath,
      headers,
      body: hasBody(req) ? req : null,
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
            t?.responseSnapshot('final response', status, h);
          },
        },
  );
  if (result.error?.kind !== 'TG_CLIENT_GONE') {
    const ok = result.error === null && result.status < 500;
    deps.endpointStats.record(backend.name, ok, (headersAt || performance.now()) - callStart);
  }
  if (result.error && !result.responded) {
    const spec = result.error.spec ?? ERRORS.upstreamReset;
    t?.backendCallResult(spec.status, { kind: result.error.kind, message: result.error.message });
    const out = answer(res, spec, t, ir.name);
    return { ...out, result };
  }
  t?.finished();
  return { status: result.status, route: ir.name, result };
}
