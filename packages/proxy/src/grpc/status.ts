// gRPC status codes by name, and the failure of a call to a policy's service.

const NAMES = [
  'OK',
  'CANCELLED',
  'UNKNOWN',
  'INVALID_ARGUMENT',
  'DEADLINE_EXCEEDED',
  'NOT_FOUND',
  'ALREADY_EXISTS',
  'PERMISSION_DENIED',
  'RESOURCE_EXHAUSTED',
  'FAILED_PRECONDITION',
  'ABORTED',
  'OUT_OF_RANGE',
  'UNIMPLEMENTED',
  'INTERNAL',
  'UNAVAILABLE',
  'DATA_LOSS',
  'UNAUTHENTICATED',
] as const;

/** The name of a gRPC status code; UNKNOWN for a code outside the 17 defined. */
export function grpcStatusName(code: number): string {
  return Number.isInteger(code) ? (NAMES[code] ?? 'UNKNOWN') : 'UNKNOWN';
}

/** The status of a call answered with an HTTP status other than 200 (gRPC's HTTP-to-gRPC mapping). */
export function httpStatusToGrpc(status: number): string {
  switch (status) {
    case 400:
      return 'INTERNAL';
    case 401:
      return 'UNAUTHENTICATED';
    case 403:
      return 'PERMISSION_DENIED';
    case 404:
      return 'UNIMPLEMENTED';
    case 429:
    case 502:
    case 503:
    case 504:
      return 'UNAVAILABLE';
    default:
      return 'UNKNOWN';
  }
}

/** A failed call: the service is unreachable, timed out, answered an error or bytes that do not decode. */
export class GrpcCallError extends Error {
  constructor(
    readonly address: string,
    /** gRPC status name, e.g. UNAVAILABLE, DEADLINE_EXCEEDED or INTERNAL (a response that does not decode). */
    readonly grpcCode: string,
    /** What went wrong, without the service's name (the message has it). */
    readonly detail: string,
    role: string,
  ) {
    super(`${role} ${address}: ${grpcCode}: ${detail}`);
    this.name = 'GrpcCallError';
  }
}
