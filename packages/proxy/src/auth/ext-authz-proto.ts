// The subset of Envoy's external authorization API (envoy.service.auth.v3) the proxy speaks,
// written as .proto source and parsed once when the gRPC mode is first used. Package, message,
// field names and numbers are Envoy's (api/envoy/service/auth/v3/external_auth.proto and
// attribute_context.proto, config/core/v3/address.proto and base.proto, type/v3/http_status.proto,
// google/rpc/status.proto), so the bytes on the wire are the ones Envoy sends; fields the proxy
// neither sends nor reads are left out, which protobuf decoding tolerates (unknown fields are
// skipped). test/envoy-proto.test.ts compares every field with Envoy's definitions.
import { encodeMessage, serviceProtos } from '../grpc/protobuf.js';

const RPC = `
syntax = "proto3";
package google.rpc;
message Status { int32 code = 1; string message = 2; }
`;

const CORE = `
syntax = "proto3";
package envoy.config.core.v3;
message SocketAddress {
  enum Protocol { TCP = 0; UDP = 1; }
  Protocol protocol = 1;
  string address = 2;
  oneof port_specifier { uint32 port_value = 3; }
}
message Address { oneof address { SocketAddress socket_address = 1; } }
`;

/** Envoy's header messages (config/core/v3/base.proto), shared with the external processing codec. */
export const CORE_HEADERS = `
syntax = "proto3";
package envoy.config.core.v3;
message HeaderValue { string key = 1; string value = 2; bytes raw_value = 3; }
message HeaderValueOption {
  enum HeaderAppendAction {
    APPEND_IF_EXISTS_OR_ADD = 0;
    ADD_IF_ABSENT = 1;
    OVERWRITE_IF_EXISTS_OR_ADD = 2;
    OVERWRITE_IF_EXISTS = 3;
  }
  HeaderValue header = 1;
  google.protobuf.BoolValue append = 2;
  HeaderAppendAction append_action = 3;
}
`;

export const WELL_KNOWN = `
syntax = "proto3";
package google.protobuf;
message BoolValue { bool value = 1; }
`;

export const TYPE = `
syntax = "proto3";
package envoy.type.v3;
// Envoy lists the HTTP status codes by name; a code decodes as its number (names not listed).
enum StatusCode { Empty = 0; }
message HttpStatus { StatusCode code = 1; }
`;

const AUTH = `
syntax = "proto3";
package envoy.service.auth.v3;
message AttributeContext {
  message Peer {
    envoy.config.core.v3.Address address = 1;
  }
  message Request {
    HttpRequest http = 2;
  }
  message HttpRequest {
    string id = 1;
    string method = 2;
    map<string, string> headers = 3;
    string path = 4;
    string host = 5;
    string scheme = 6;
    int64 size = 9;
    string protocol = 10;
    string body = 11;
    bytes raw_body = 12;
  }
  Peer source = 1;
  Peer destination = 2;
  Request request = 4;
}
message CheckRequest { AttributeContext attributes = 1; }
message DeniedHttpResponse {
  envoy.type.v3.HttpStatus status = 1;
  repeated envoy.config.core.v3.HeaderValueOption headers = 2;
  string body = 3;
}
message OkHttpResponse {
  repeated envoy.config.core.v3.HeaderValueOption headers = 2;
  repeated string headers_to_remove = 5;
  repeated envoy.config.core.v3.HeaderValueOption response_headers_to_add = 6;
}
message CheckResponse {
  google.rpc.Status status = 1;
  oneof http_response {
    DeniedHttpResponse denied_response = 2;
    OkHttpResponse ok_response = 3;
  }
}
`;

export const CHECK_PATH = '/envoy.service.auth.v3.Authorization/Check';

export interface Peer {
  readonly address: { readonly socket_address: { readonly address: string; readonly port_value: number } };
}

export interface CheckRequest {
  readonly attributes: {
    readonly source: Peer;
    readonly destination: Peer;
    readonly request: {
      readonly http: {
        readonly id: string;
        readonly method: string;
        readonly headers: Readonly<Record<string, string>>;
        readonly path: string;
        readonly host: string;
        readonly scheme: string;
        /** The body's length in bytes (Content-Length), -1 when unknown. */
        readonly size: number;
        readonly protocol: string;
        /** The body as UTF-8 text, when it is valid UTF-8; otherwise raw_body. */
        readonly body?: string;
        readonly raw_body?: Buffer;
      };
    };
  };
}

export type AppendAction = 'APPEND_IF_EXISTS_OR_ADD' | 'ADD_IF_ABSENT' | 'OVERWRITE_IF_EXISTS_OR_ADD' | 'OVERWRITE_IF_EXISTS';

export interface HeaderValueOption {
  readonly header: { readonly key: string; readonly value: string; readonly raw_value: Buffer } | null;
  /** Deprecated by Envoy in favour of append_action, still honoured when set. */
  readonly append: { readonly value: boolean } | null;
  readonly append_action: AppendAction;
}

export interface CheckResponse {
  readonly status: { readonly code: number; readonly message: string } | null;
  readonly denied_response?: { readonly status: { readonly code: number | 'Empty' } | null; readonly headers: readonly HeaderValueOption[]; readonly body: string };
  readonly ok_response?: { readonly headers: readonly HeaderValueOption[]; readonly headers_to_remove: readonly string[]; readonly response_headers_to_add: readonly HeaderValueOption[] };
}

/** The definitions above, parsed by the first config naming the service (tests compare them with Envoy's own). */
export const extAuthzProtos = serviceProtos([RPC, WELL_KNOWN, CORE, CORE_HEADERS, TYPE, AUTH], 'envoy.service.auth.v3.CheckRequest', 'envoy.service.auth.v3.CheckResponse');

export function encodeCheckRequest(req: CheckRequest): Buffer {
  return encodeMessage(extAuthzProtos().request, req);
}

/** Throws on bytes that are not a CheckResponse (gRPC then fails the call with INTERNAL). */
export function decodeCheckResponse(bytes: Buffer): CheckResponse {
  const type = extAuthzProtos().response;
  return type.toObject(type.decode(bytes), {
    longs: Number,
    enums: String,
    bytes: Buffer,
    defaults: true,
    oneofs: false,
  }) as CheckResponse;
}
