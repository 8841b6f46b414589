// A gRPC call's deadline: the client sends what is left of it as grpc-timeout (gRPC over
// HTTP/2: at most 8 digits and a unit, hours down to nanoseconds). It is the call's request
// timeout here, bounded by the route's timeouts.request: whichever ends first ends the call, answered
// DEADLINE_EXCEEDED (a 504 TG_REQUEST_TIMEOUT for anything else). The header goes on to the
// backend as it came, so the backend knows the deadline too. A value that is not one (a
// unit unknown, 9 digits) is no deadline, as gRPC servers read it: the route's timeout applies.
import type { IncomingHttpHeaders } from 'node:http';
import { isGrpcRequest } from '../upstream/grpc.js';

const GRPC_TIMEOUT = /^(\d{1,8})([HMSmun])$/;
const UNIT_MS: Readonly<Record<string, number>> = { H: 3_600_000, M: 60_000, S: 1_000, m: 1, u: 1e-3, n: 1e-6 };

/** A grpc-timeout value in milliseconds (at least 1), or null when it is not a valid one. */
export function grpcTimeoutMs(value: string | string[] | undefined): number | null {
  if (typeof value !== 'string') return null;
  const m = GRPC_TIMEOUT.exec(value);
  if (!m) return null;
  return Math.max(1, Math.ceil(Number(m[1]) * UNIT_MS[m[2]!]!));
}

/** The request timeout of this request: the route's, or a gRPC call's deadline when that is sooner. */
export function requestLimitMs(headers: IncomingHttpHeaders, routeMs: number | null): number | null {
  if (headers['grpc-timeout'] === undefined || !isGrpcRequest(headers)) return routeMs;
  const deadline = grpcTimeoutMs(headers['grpc-timeout']);
  if (deadline === null) return routeMs;
  return routeMs === null ? deadline : Math.min(routeMs, deadline);
}
