// gRPC through the gateway. A gRPC call is an HTTP/2 POST whose content-type is
// application/grpc (or application/grpc+proto, +json, ...); its outcome is the grpc-status
// trailer, not the HTTP status, which a gRPC client reads only to tell a gRPC answer from
// something else. So an answer the gateway makes itself to a gRPC call (no route, refused,
// rate limited, backend down or too slow) is HTTP 200 with grpc-status and grpc-message
// trailers, which every gRPC client surfaces as the call's status; a backend's trailers pass
// through (forward.ts). gRPC-Web (application/grpc-web*) frames its status in the body and is
// not this: it gets the ordinary answers.
import type { IncomingHttpHeaders, ServerResponse } from 'node:http';

/** gRPC status codes (grpc/doc/statuscodes.md) the gateway answers with. */
export const GRPC_STATUS = {
  DEADLINE_EXCEEDED: 4,
  PERMISSION_DENIED: 7,
  RESOURCE_EXHAUSTED: 8,
  UNIMPLEMENTED: 12,
  INTERNAL: 13,
  UNAVAILABLE: 14,
  UNAUTHENTICATED: 16,
} as const;

const GRPC_TYPE = 'application/grpc';

/** True for a gRPC call: content-type application/grpc, alone or with a +subtype or parameters. */
export function isGrpcRequest(headers: IncomingHttpHeaders | undefined): boolean {
  const type = headers?.['content-type'];
  if (typeof type !== 'string' || !type.startsWith(GRPC_TYPE)) return false;
  const next = type.charCodeAt(GRPC_TYPE.length);
  // Nothing more, `+` (a subtype) or `;` (parameters); not application/grpc-web.
  return Number.isNaN(next) || next === 43 || next === 59;
}

/**
 * The gRPC status of an answer the gateway makes with this HTTP status, as gRPC's own HTTP to
 * gRPC mapping (grpc/doc/http-grpc-status-mapping.md) with the gateway's meanings made
 * precise: a limit is RESOURCE_EXHAUSTED (the client should back off, not fail over), a
 * deadline DEADLINE_EXCEEDED, no route UNIMPLEMENTED (the method is not served here).
 */
export function grpcStatusFor(httpStatus: number): number {
  switch (httpStatus) {
    case 401:
      return GRPC_STATUS.UNAUTHENTICATED;
    case 403:
      return GRPC_STATUS.PERMISSION_DENIED;
    case 404:
      return GRPC_STATUS.UNIMPLEMENTED;
    case 413:
    case 429:
      return GRPC_STATUS.RESOURCE_EXHAUSTED;
    case 408:
    case 504:
      return GRPC_STATUS.DEADLINE_EXCEEDED;
    case 502:
    case 503:
      return GRPC_STATUS.UNAVAILABLE;
    default:
      return GRPC_STATUS.INTERNAL;
  }
}

/** grpc-message is percent-encoded: bytes outside printable ASCII, and `%` itself (gRPC over HTTP/2, Responses). */
export function encodeGrpcMessage(text: string): string {
  let out = '';
  for (const byte of Buffer.from(text, 'utf8')) out += byte >= 0x20 && byte <= 0x7e && byte !== 0x25 ? String.fromCharCode(byte) : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  return out;
}

function isHttp2(res: ServerResponse): boolean {
  return (res as ServerResponse & { req?: { httpVersionMajor?: number } }).req?.httpVersionMajor === 2;
}

/**
 * Answers a gRPC call with the gateway's own status: HTTP 200, content-type application/grpc,
 * no message, `grpc-status` and `grpc-message` as trailers over HTTP/2 (in the headers over
 * HTTP/1.1, which has no trailers without a body: gRPC's Trailers-Only form). `headers` are the
 * answer's other headers (the code in x-tollgate-error, x-ratelimit-*, a challenge); their
 * content-type and content-length are replaced. Returns the headers and trailers sent, for the trace.
 */
export function sendGrpcError(res: ServerResponse, httpStatus: number, message: string, headers: Record<string, string>): Record<string, string> {
  const status = { 'grpc-status': String(grpcStatusFor(httpStatus)), 'grpc-message': encodeGrpcMessage(message) };
  const { 'content-length': _length, ...rest } = headers;
  const h2 = isHttp2(res);
  const sent: Record<string, string> = { ...rest, 'content-type': GRPC_TYPE, ...(h2 ? {} : { ...status, 'content-length': '0' }) };
  if (res.headersSent || res.destroyed) return { ...sent, ...status };
  res.writeHead(200, sent);
  if (h2) res.addTrailers(status);
  res.end();
  return { ...sent, ...status };
}

/**
 * Ends a gRPC call over HTTP/2 whose answer already started (a deadline passed, the backend
 * reset) with the gateway's status as its trailers, in place of a reset stream the client would
 * report as CANCELLED or INTERNAL; false when it is not one (the caller resets it). `spec`: the
 * catalog entry the failure would be answered with.
 */
export function endGrpcCall(res: ServerResponse, spec: { readonly status: number }, message: string): boolean {
  const req = (res as ServerResponse & { req?: { headers?: IncomingHttpHeaders } }).req;
  if (!isHttp2(res) || !isGrpcRequest(req?.headers) || res.writableEnded || res.destroyed) return false;
  res.addTrailers({ 'grpc-status': String(grpcStatusFor(spec.status)), 'grpc-message': encodeGrpcMessage(message) });
  res.end();
  return true;
}

/**
 * A backend's Trailers-Only answer (grpc-status in the only HEADERS frame, which ended the
 * stream: every field but content-type is trailing metadata) relayed to an HTTP/2 client: the
 * relayed headers frame does not end the stream, so those fields move to the trailers, where a
 * client reads the status and the trailing metadata. Takes them out of `headers`; null when
 * the answer is not one.
 */
export function takeTrailersOnly(res: ServerResponse, headers: Record<string, string | string[] | undefined>): Record<string, string> | null {
  if (headers['grpc-status'] === undefined || !isHttp2(res) || !isGrpcRequest(headers)) return null;
  const out: Record<string, string> = {};
  for (const name of Object.keys(headers)) {
    const value = headers[name];
    if (name === 'content-type' || value === undefined) continue;
    out[name] = Array.isArray(value) ? value.join(',') : value;
    // A gRPC error answer only: the one response's headers object may turn slow.
    delete headers[name];
  }
  return out;
}
