// The gRPC protocol of extAuthz: envoy.service.auth.v3.Authorization/Check on a channel per
// service address (grpc/channel.ts: connected as soon as a config names the service). Loaded
// on first use, so a proxy without a gRPC authorization service loads no gRPC or protobuf.
import { isUtf8 } from 'node:buffer';
import { GrpcCallError, GrpcChannel } from '../grpc/channel.js';
import { denialStatus, MAX_DENIAL_BODY_BYTES, ServiceFailure, type ExtAuthzAnswer, type ExtAuthzCall, type ExtAuthzPeer } from './ext-authz-answer.js';
import { checkCount, checkedName, checkedValue, type AppendAction, type HeaderMutation } from './ext-authz-headers.js';
import { CHECK_PATH, decodeCheckResponse, encodeCheckRequest, type CheckRequest, type CheckResponse, type HeaderValueOption } from './ext-authz-proto.js';

/** Largest CheckResponse read; a larger one fails the call (RESOURCE_EXHAUSTED: bad_response). */
export const MAX_CHECK_RESPONSE_BYTES = 256 * 1024;

const ACTIONS: ReadonlySet<string> = new Set<AppendAction>(['APPEND_IF_EXISTS_OR_ADD', 'ADD_IF_ABSENT', 'OVERWRITE_IF_EXISTS_OR_ADD', 'OVERWRITE_IF_EXISTS']);

export class ExtAuthzGrpcClient extends GrpcChannel {
  constructor(address: string) {
    super(address, 'external authorization service', { maxReceiveBytes: MAX_CHECK_RESPONSE_BYTES });
  }

  async check(call: ExtAuthzCall, timeoutMs: number): Promise<ExtAuthzAnswer> {
    let res: CheckResponse;
    try {
      res = await this.unary(CHECK_PATH, encodeCheckRequest, decodeCheckResponse, checkRequest(call), timeoutMs);
    } catch (err) {
      throw failure(err);
    }
    return answer(res);
  }
}

function failure(err: unknown): ServiceFailure {
  if (!(err instanceof GrpcCallError)) return new ServiceFailure('bad_response', String(err));
  if (err.grpcCode === 'DEADLINE_EXCEEDED') return new ServiceFailure('timeout', err.message);
  if (err.grpcCode === 'UNAVAILABLE') return new ServiceFailure('unavailable', err.message);
  // An error status of the service, a message over the bound, bytes that do not decode.
  return new ServiceFailure('bad_response', err.message);
}

const peer = (p: ExtAuthzPeer): CheckRequest['attributes']['source'] => ({ address: { socket_address: { address: p.address, port_value: p.port } } });

function checkRequest(call: ExtAuthzCall): CheckRequest {
  // Envoy sends the body as text; bytes that are not UTF-8 (which a proto3 string may not
  // carry) go in raw_body.
  const body = call.body === null ? {} : isUtf8(call.body) ? { body: call.body.toString('utf8') } : { raw_body: call.body };
  return {
    attributes: {
      source: peer(call.source),
      destination: peer(call.destination),
      request: {
        http: { id: call.id, method: call.method, headers: call.headers, path: call.path, host: call.host, scheme: call.scheme, size: call.size, protocol: call.protocol, ...body },
      },
    },
  };
}

/** Envoy's reading of a CheckResponse, except that one without a status is a bad answer (Envoy takes it for OK). */
function answer(res: CheckResponse): ExtAuthzAnswer {
  if (!res.status) throw new ServiceFailure('bad_response', 'the CheckResponse has no status');
  if (res.status.code === 0) {
    const ok = res.ok_response;
    const remove = ok?.headers_to_remove ?? [];
    checkCount(remove.length, 'ok_response.headers_to_remove');
    return {
      allowed: true,
      upstream: mutations(ok?.headers ?? [], 'ok_response.headers'),
      remove: remove.map((n) => checkedName(n, 'ok_response.headers_to_remove')),
      response: mutations(ok?.response_headers_to_add ?? [], 'ok_response.response_headers_to_add'),
    };
  }
  const denied = res.denied_response;
  const code = denied?.status?.code;
  const text = denied?.body ?? '';
  const headers = mutations(denied?.headers ?? [], 'denied_response.headers');
  const contentType = headers.find((h) => h.name === 'content-type')?.value ?? 'text/plain; charset=utf-8';
  return {
    allowed: false,
    status: denialStatus(typeof code === 'number' ? code : 0),
    headers,
    body: text && Buffer.byteLength(text) <= MAX_DENIAL_BODY_BYTES ? { contentType, text } : null,
  };
}

function mutations(options: readonly HeaderValueOption[], where: string): HeaderMutation[] {
  checkCount(options.length, where);
  return options.map((o) => {
    const name = checkedName(o.header?.key ?? '', where);
    const raw = o.header?.raw_value;
    const value = checkedValue(name, o.header?.value || (raw?.length ? raw.toString('latin1') : ''), where);
    // The deprecated append flag wins when set (Envoy's rule); an unknown action overwrites.
    const action: AppendAction = o.append
      ? o.append.value
        ? 'APPEND_IF_EXISTS_OR_ADD'
        : 'OVERWRITE_IF_EXISTS_OR_ADD'
      : ACTIONS.has(o.append_action)
        ? o.append_action
        : 'OVERWRITE_IF_EXISTS_OR_ADD';
    return { name, value, action };
  });
}
