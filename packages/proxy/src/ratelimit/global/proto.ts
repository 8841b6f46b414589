// The subset of Envoy's rate limit service API (RLS v3) the gateway speaks, written as a
// .proto source and parsed once at load. Package, message, field names and field numbers are
// Envoy's (api/envoy/service/ratelimit/v3/rls.proto,
// api/envoy/extensions/common/ratelimit/v3/ratelimit.proto, config/core/v3/base.proto), so
// the bytes on the wire are the ones Envoy sends; fields the gateway does not use are left
// out, which protobuf decoding tolerates (unknown fields are skipped).
import { encodeMessage, serviceProtos } from '../../grpc/protobuf.js';

const WELL_KNOWN = `
syntax = "proto3";
package google.protobuf;
message Duration { int64 seconds = 1; int32 nanos = 2; }
message UInt64Value { uint64 value = 1; }
`;

const CORE = `
syntax = "proto3";
package envoy.config.core.v3;
message HeaderValue { string key = 1; string value = 2; bytes raw_value = 3; }
`;

const TYPE = `
syntax = "proto3";
package envoy.type.v3;
enum RateLimitUnit { UNKNOWN = 0; SECOND = 1; MINUTE = 2; HOUR = 3; DAY = 4; MONTH = 5; YEAR = 6; WEEK = 7; }
`;

const COMMON = `
syntax = "proto3";
package envoy.extensions.common.ratelimit.v3;
message RateLimitDescriptor {
  message Entry { string key = 1; string value = 2; }
  // The limit the service applies to this descriptor instead of one of its own config.
  message RateLimitOverride { uint32 requests_per_unit = 1; envoy.type.v3.RateLimitUnit unit = 2; }
  repeated Entry entries = 1;
  RateLimitOverride limit = 2;
  // Per-descriptor hits; unlike the request's hits_addend, an explicit 0 means "check only".
  google.protobuf.UInt64Value hits_addend = 3;
}
`;

const RLS = `
syntax = "proto3";
package envoy.service.ratelimit.v3;
service RateLimitService {
  rpc ShouldRateLimit(RateLimitRequest) returns (RateLimitResponse);
}
message RateLimitRequest {
  string domain = 1;
  repeated envoy.extensions.common.ratelimit.v3.RateLimitDescriptor descriptors = 2;
  uint32 hits_addend = 3;
}
message RateLimitResponse {
  enum Code { UNKNOWN = 0; OK = 1; OVER_LIMIT = 2; }
  message RateLimit {
    enum Unit { UNKNOWN = 0; SECOND = 1; MINUTE = 2; HOUR = 3; DAY = 4; MONTH = 5; YEAR = 6; WEEK = 7; }
    string name = 3;
    uint32 requests_per_unit = 1;
    Unit unit = 2;
  }
  message DescriptorStatus {
    Code code = 1;
    RateLimit current_limit = 2;
    uint32 limit_remaining = 3;
    google.protobuf.Duration duration_until_reset = 4;
  }
  Code overall_code = 1;
  repeated DescriptorStatus statuses = 2;
  repeated envoy.config.core.v3.HeaderValue response_headers_to_add = 3;
  repeated envoy.config.core.v3.HeaderValue request_headers_to_add = 4;
  bytes raw_body = 5;
}
`;

export const SHOULD_RATE_LIMIT_PATH = '/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit';

export type RlsCode = 'UNKNOWN' | 'OK' | 'OVER_LIMIT';
export type RlsUnit = 'UNKNOWN' | 'SECOND' | 'MINUTE' | 'HOUR' | 'DAY' | 'MONTH' | 'YEAR' | 'WEEK';

/** A descriptor's limit override; `unit` is never UNKNOWN (envoyproxy/ratelimit has no window for it). */
export interface RlsLimit {
  readonly requests_per_unit: number;
  readonly unit: Exclude<RlsUnit, 'UNKNOWN'>;
}

export interface RlsDescriptor {
  readonly entries: readonly { readonly key: string; readonly value: string }[];
  /** Absent: the service's own config decides the limit. */
  readonly limit?: RlsLimit;
  /** Absent: the request's hits_addend applies (0 there counts as 1). */
  readonly hits_addend?: { readonly value: number };
}

export interface RlsRequest {
  readonly domain: string;
  readonly descriptors: readonly RlsDescriptor[];
  readonly hits_addend: number;
}

export interface RlsDescriptorStatus {
  readonly code: RlsCode;
  readonly current_limit: { readonly name: string; readonly requests_per_unit: number; readonly unit: RlsUnit } | null;
  readonly limit_remaining: number;
  readonly duration_until_reset: { readonly seconds: number; readonly nanos: number } | null;
}

export interface RlsHeader {
  readonly key: string;
  readonly value: string;
  readonly raw_value: Buffer;
}

export interface RlsResponse {
  readonly overall_code: RlsCode;
  readonly statuses: readonly RlsDescriptorStatus[];
  readonly response_headers_to_add: readonly RlsHeader[];
  readonly request_headers_to_add: readonly RlsHeader[];
  readonly raw_body: Buffer;
}

/** The definitions above, parsed by the first config naming the service (tests compare them with Envoy's own). */
export const rlsProtos = serviceProtos([WELL_KNOWN, CORE, TYPE, COMMON, RLS], 'envoy.service.ratelimit.v3.RateLimitRequest', 'envoy.service.ratelimit.v3.RateLimitResponse');

export function encodeRequest(req: RlsRequest): Buffer {
  return encodeMessage(rlsProtos().request, req);
}

export function decodeRequest(bytes: Buffer): RlsRequest {
  const type = rlsProtos().request;
  return type.toObject(type.decode(bytes), { longs: Number, defaults: true }) as RlsRequest;
}

export function decodeResponse(bytes: Buffer): RlsResponse {
  const type = rlsProtos().response;
  return type.toObject(type.decode(bytes), {
    longs: Number,
    enums: String,
    bytes: Buffer,
    defaults: true,
  }) as RlsResponse;
}

export function encodeResponse(res: Partial<Record<keyof RlsResponse, unknown>>): Buffer {
  return encodeMessage(rlsProtos().response, res);
}
