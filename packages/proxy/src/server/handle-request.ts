// A request through the data plane: listener by host, route by Gateway API precedence,
// request filters, then a redirect answer or the upstream call with response filters.
// Every step reads the snapshot captured when the request arrived, so a reload never
// changes the rules under a request in flight.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { ERRORS } from '../errors.js';
import { applyHeaderModifier } from '../filters/header-modifier.js';
import { rewritePath } from '../filters/path.js';
import { redirectLocation } from '../filters/redirect.js';
import type { CompiledSnapshot } from '../routing/compile.js';
import { selectRoute } from '../routing/compile.js';
import { normalizeHost } from '../routing/hostname.js';
import { addForwarded, endToEnd } from '../upstream/headers.js';
import { forward, sendError, type ForwardResult } from '../upstream/forward.js';
import type { PoolSet } from '../upstream/pools.js';

export interface DataPlaneDeps {
  readonly pools: PoolSet;
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

export async function handleRequest(
  snapshot: CompiledSnapshot,
  port: number,
  req: IncomingMessage,
  res: ServerResponse,
  deps: DataPlaneDeps,
): Promise<Outcome> {
  const bind = snapshot.binds.get(port);
  const rawHost = req.headers.host;
  const host = normalizeHost(rawHost);
  const listener = bind?.listeners.first(host);
  const url = req.url ?? '/';
  const q = url.indexOf('?');
  const path = q < 0 ? url : url.slice(0, q);
  const query = q < 0 ? '' : url.slice(q + 1);
  const method = req.method ?? 'GET';

  const hit = listener ? selectRoute(listener, host, { method, path, query, headers: req.headers }) : null;
  if (!hit) {
    sendError(res, ERRORS.noRoute);
    return { status: ERRORS.noRoute.status, route: null, result: null };
  }
  const { route, matched } = hit;
  const ir = route.ir;

  if (route.redirect) {
    const location = redirectLocation(route.redirect, { scheme: 'http', host, listenerPort: port, path, query, matched });
    res.writeHead(route.redirect.statusCode, { location, 'content-length': 0 });
    res.end();
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
  addForwarded(headers, req.socket.remoteAddress, 'http', rawHost);

  const backend = route.pickBackend();
  if (!backend) {
    sendError(res, ERRORS.noBackend);
    return { status: ERRORS.noBackend.status, route: ir.name, result: null };
  }
  const responseModifiers = route.responseModifiers;
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
    responseModifiers.length
      ? {
          onResponseHeaders: (_status, h) => {
            for (const m of responseModifiers) applyHeaderModifier(h, m);
          },
        }
      : {},
  );
  return { status: result.status, route: ir.name, result };
}
