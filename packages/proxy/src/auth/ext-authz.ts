// extAuthz: an external service decides each request, over Envoy's external authorization
// protocol (gRPC, ext-authz-grpc.ts) or plain HTTP (ext-authz-http.ts). This module builds what
// the service sees (the chosen headers, the body up to withBody.maxBytes, who is calling),
// turns its answer into the check's verdict, and applies the failure mode when the service
// cannot decide (unreachable, too slow, or an answer that cannot be used).
import { randomUUID } from 'node:crypto';
import type { ExtAuthzIR } from '@tollgate/api';
import { ERRORS } from '../errors.js';
import { WarnThrottle } from '../ratelimit/warn-throttle.js';
import type { Logger } from 'pino';
import { ServiceFailure, type ExtAuthzAnswer, type ExtAuthzCall } from './ext-authz-answer.js';
import { isReserved, requestHeaderSets, responseHeaderSets } from './ext-authz-headers.js';
import type { ExtAuthzServices } from './ext-authz-services.js';
import type { AuthCheck, AuthRequest, AuthVerdict } from './types.js';

/** Envoy's flag, in the headers the service sees, that the body it got was cut to maxBytes. */
export const PARTIAL_BODY_HEADER = 'x-envoy-auth-partial-body';
/** Who an earlier check established, sent to the service (never taken from the client). */
export const CONSUMER_HEADER = 'x-tollgate-consumer';
export const CONSUMER_GROUP_HEADER = 'x-tollgate-consumer-group';

// The connection's own headers are not the request's: they never reach the service.
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'te', 'trailer', 'upgrade', 'http2-settings', 'expect']);

const WARN_INTERVAL_MS = 10_000;

/** `deps` is the part of AuthDeps it uses (compilers.ts passes the whole). */
export function compileExtAuthz(ir: ExtAuthzIR, deps: { readonly log: Logger; readonly extAuthz: ExtAuthzServices }): AuthCheck {
  const services = deps.extAuthz;
  services.prepare(ir);
  const throttle = new WarnThrottle(WARN_INTERVAL_MS, Date.now);
  const ask = (call: ExtAuthzCall): Promise<ExtAuthzAnswer> =>
    ir.protocol === 'GRPC' ? services.grpc(ir.service).then((c) => c.check(call, ir.timeoutMs)) : services.http(ir.service).check(call, ir, ir.timeoutMs);

  const failed = (err: unknown): AuthVerdict => {
    const f = err instanceof ServiceFailure ? err : new ServiceFailure('unavailable', err instanceof Error ? err.message : String(err));
    const open = ir.failureMode === 'FailOpen';
    const w = throttle.take();
    const fields = { service: ir.service, protocol: ir.protocol, reason: f.reason, failureMode: ir.failureMode };
    const verb = open ? 'failing open: requests pass unchecked' : 'failing closed: requests are refused';
    if (w.log) deps.log.warn({ ...fields, suppressed: w.suppressed, err: f.message }, `authorization service could not decide (${f.reason}); ${verb}`);
    else deps.log.debug({ ...fields, err: f.message }, 'authorization service could not decide');
    if (open) return { ok: true, reason: 'failed_open', note: `${ir.service}: ${f.reason}; failed open` };
    return { ok: false, error: ERRORS.authServiceFailed, reason: f.reason, detail: `the authorization service could not decide (${f.reason})` };
  };

  return {
    kind: 'extAuthz',
    needsBody: ir.withBody !== null,
    async run(req: AuthRequest): Promise<AuthVerdict> {
      const call = toCall(ir, req);
      if (!call.ok) return call.denial;
      let answer: ExtAuthzAnswer;
      try {
        answer = await ask(call.value);
      } catch (err) {
        return failed(err);
      }
      return verdict(ir, req, answer);
    },
  };
}

function toCall(ir: ExtAuthzIR, req: AuthRequest): { ok: true; value: ExtAuthzCall } | { ok: false; denial: AuthVerdict } {
  const headers: Record<string, string> = {};
  const include = ir.includeRequestHeaders;
  for (const [name, v] of Object.entries(req.headers)) {
    if (v === undefined || HOP_BY_HOP.has(name) || name === 'content-length' || name.startsWith(CONSUMER_HEADER)) continue;
    if (include !== null && !include.includes(name)) continue;
    headers[name] = Array.isArray(v) ? v.join(', ') : v;
  }
  if (req.consumer) {
    headers[CONSUMER_HEADER] = req.consumer.name;
    if (req.consumer.group !== null) headers[CONSUMER_GROUP_HEADER] = req.consumer.group;
  }
  let body: Buffer | null = null;
  if (ir.withBody) {
    const full = req.body ?? Buffer.alloc(0);
    const partial = full.length > ir.withBody.maxBytes;
    if (partial && !ir.withBody.allowPartial) {
      return {
        ok: false,
        denial: { ok: false, error: ERRORS.authBodyTooLarge, reason: 'body_too_large', detail: `the body is ${full.length} bytes; this route's authorization service reads at most ${ir.withBody.maxBytes} (withBody.maxBytes)` },
      };
    }
    body = partial ? full.subarray(0, ir.withBody.maxBytes) : full;
    headers[PARTIAL_BODY_HEADER] = String(partial);
  }
  const query = req.query ? `?${req.query}` : '';
  return {
    ok: true,
    value: {
      id: first(req.headers['x-request-id']) ?? randomUUID(),
      method: req.method,
      path: req.path + query,
      host: req.authority,
      scheme: req.scheme,
      protocol: req.protocol ?? 'HTTP/1.1',
      headers,
      body,
      size: bodySize(req),
      source: { address: req.sourceAddress, port: req.sourcePort },
      destination: { address: req.destinationAddress ?? '', port: req.destinationPort ?? 0 },
    },
  };
}

const first = (v: string | string[] | undefined): string | undefined => (Array.isArray(v) ? v[0] : v);

/** The body's length: as read, else Content-Length, else 0 without a body and -1 when unknown (chunked). */
function bodySize(req: AuthRequest): number {
  if (req.body) return req.body.length;
  const cl = first(req.headers['content-length']);
  if (cl !== undefined && /^\d{1,15}$/.test(cl)) return Number(cl);
  return req.headers['transfer-encoding'] ? -1 : 0;
}

function verdict(ir: ExtAuthzIR, req: AuthRequest, answer: ExtAuthzAnswer): AuthVerdict {
  if (answer.allowed) {
    const removed = new Set(answer.remove.filter((n) => !isReserved(n)));
    // Envoy removes headers_to_remove after applying the headers: a header both set and removed goes.
    const set = requestHeaderSets(req.headers, answer.upstream.filter((m) => !removed.has(m.name)));
    const response = responseHeaderSets(answer.response);
    return {
      ok: true,
      ...(Object.keys(set).length ? { setHeaders: set } : {}),
      ...(removed.size ? { removeHeaders: [...removed] } : {}),
      ...(Object.keys(response).length ? { responseHeaders: response } : {}),
      note: `${ir.service}: allowed`,
    };
  }
  const headers = responseHeaderSets(answer.headers);
  delete headers['content-type'];
  return {
    ok: false,
    error: ERRORS.forbidden,
    status: answer.status,
    reason: 'denied',
    detail: `the authorization service ${ir.service} refused the request (${answer.status})`,
    headers,
    ...(answer.body ? { body: answer.body } : {}),
  };
}
