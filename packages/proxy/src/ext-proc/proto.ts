// The subset of Envoy's external processing API (envoy.service.ext_proc.v3) the proxy speaks,
// as .proto source parsed once when the first policy names a processor. Package, message,
// field names and numbers are Envoy's (api/envoy/service/ext_proc/v3/external_processor.proto,
// config/core/v3/base.proto, type/v3/http_status.proto); fields the proxy neither sends nor
// reads are left out, which protobuf decoding tolerates (unknown fields are skipped).
// test/ext-proc-proto.test.ts compares every field with Envoy's definitions.
import { CORE_HEADERS, TYPE, WELL_KNOWN, type HeaderValueOption } from '../auth/ext-authz-proto.js';
import { decodeMessage, encodeMessage, serviceProtos } from '../grpc/protobuf.js';

const HEADER_MAP = `
syntax = "proto3";
package envoy.config.core.v3;
message HeaderMap { repeated HeaderValue headers = 1; }
`;

const EXT_PROC = `
syntax = "proto3";
package envoy.service.ext_proc.v3;
message HttpHeaders { envoy.config.core.v3.HeaderMap headers = 1; bool end_of_stream = 3; }
message HttpBody { bytes body = 1; bool end_of_stream = 2; }
message ProcessingRequest {
  oneof request {
    HttpHeaders request_headers = 2;
    HttpHeaders response_headers = 3;
    HttpBody request_body = 4;
    HttpBody response_body = 5;
  }
}
message HeaderMutation {
  repeated envoy.config.core.v3.HeaderValueOption set_headers = 1;
  repeated string remove_headers = 2;
}
message BodyMutation {
  oneof mutation {
    bytes body = 1;
    bool clear_body = 2;
  }
}
message CommonResponse {
  enum ResponseStatus { CONTINUE = 0; CONTINUE_AND_REPLACE = 1; }
  ResponseStatus status = 1;
  HeaderMutation header_mutation = 2;
  BodyMutation body_mutation = 3;
}
message HeadersResponse { CommonResponse response = 1; }
message BodyResponse { CommonResponse response = 1; }
message ImmediateResponse {
  envoy.type.v3.HttpStatus status = 1;
  HeaderMutation headers = 2;
  bytes body = 3;
  string details = 5;
}
message ProcessingResponse {
  oneof response {
    HeadersResponse request_headers = 1;
    HeadersResponse response_headers = 2;
    BodyResponse request_body = 3;
    BodyResponse response_body = 4;
    ImmediateResponse immediate_response = 7;
  }
}
`;

export const PROCESS_PATH = '/envoy.service.ext_proc.v3.ExternalProcessor/Process';

/** The four phases, by the oneof field that carries each (request and response alike). */
export type Phase = 'request_headers' | 'request_body' | 'response_headers' | 'response_body';

export interface WireHeader {
  readonly key: string;
  /** Envoy sends values as raw_value (bytes); value is left empty. */
  readonly raw_value: Buffer;
}

export type ProcessingRequest =
  | { readonly request_headers: { readonly headers: { readonly headers: readonly WireHeader[] }; readonly end_of_stream: boolean } }
  | { readonly response_headers: { readonly headers: { readonly headers: readonly WireHeader[] }; readonly end_of_stream: boolean } }
  | { readonly request_body: { readonly body: Buffer; readonly end_of_stream: boolean } }
  | { readonly response_body: { readonly body: Buffer; readonly end_of_stream: boolean } };

export interface HeaderMutationMessage {
  readonly set_headers: readonly HeaderValueOption[];
  readonly remove_headers: readonly string[];
}

export interface CommonResponse {
  readonly status: 'CONTINUE' | 'CONTINUE_AND_REPLACE' | number;
  readonly header_mutation: HeaderMutationMessage | null;
  readonly body_mutation: { readonly body?: Buffer; readonly clear_body?: boolean } | null;
}

export interface ImmediateResponseMessage {
  readonly status: { readonly code: number | string } | null;
  readonly headers: HeaderMutationMessage | null;
  readonly body: Buffer;
  readonly details: string;
}

export interface ProcessingResponse {
  readonly request_headers?: { readonly response: CommonResponse | null };
  readonly response_headers?: { readonly response: CommonResponse | null };
  readonly request_body?: { readonly response: CommonResponse | null };
  readonly response_body?: { readonly response: CommonResponse | null };
  readonly immediate_response?: ImmediateResponseMessage;
}

/** The definitions above, parsed by the first config naming the service (tests compare them with Envoy's own). */
export const extProcProtos = serviceProtos([WELL_KNOWN, CORE_HEADERS, HEADER_MAP, TYPE, EXT_PROC], 'envoy.service.ext_proc.v3.ProcessingRequest', 'envoy.service.ext_proc.v3.ProcessingResponse');

export function encodeProcessingRequest(req: ProcessingRequest): Buffer {
  return encodeMessage(extProcProtos().request, req);
}

/** Throws on bytes that are not a ProcessingResponse. */
export function decodeProcessingResponse(bytes: Buffer): ProcessingResponse {
  return decodeMessage<ProcessingResponse>(extProcProtos().response, bytes);
}
