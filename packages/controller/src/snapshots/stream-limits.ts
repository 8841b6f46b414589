// The bounds of the snapshot stream: what one client (any process that reaches the port, before
// it is authenticated; a proxy, after) can make the controller hold. Each has a default and a
// flag (options.ts); docs/security.md lists them with where each shows.
import type * as grpc from '@grpc/grpc-js';

export interface StreamLimits {
  /** Largest message a proxy may send (hello, ACK, NACK); gRPC refuses a larger one (RESOURCE_EXHAUSTED). */
  readonly maxMessageBytes: number;
  /** Streams open at once, authenticated or not. */
  readonly maxStreams: number;
  /** Authenticated streams of one Gateway at once (its proxy replicas). */
  readonly maxStreamsPerGateway: number;
  /** A stream ends after this long (less up to a tenth, so proxies do not reconnect in step); the proxy reconnects. */
  readonly maxStreamAgeMs: number;
  /** An open stream's token is reviewed again this often (give or take a tenth); a refusal ends it. */
  readonly reauthIntervalMs: number;
}

export const DEFAULT_STREAM_LIMITS: StreamLimits = {
  maxMessageBytes: 64 * 1024,
  maxStreams: 4096,
  maxStreamsPerGateway: 256,
  maxStreamAgeMs: 30 * 60_000,
  reauthIntervalMs: 5 * 60_000,
};

/**
 * Streams not yet admitted (waiting for their hello or its authentication) from one address:
 * a proxy opens one stream at a time, so a client cannot hold the room of the whole server
 * (--snapshot-max-streams) with streams that never authenticate.
 */
export const MAX_PENDING_PER_PEER = 16;
/** Messages received and not yet handled, per stream: a proxy sends a hello, then one answer per push. */
export const MAX_QUEUED_MESSAGES = 8;
/** An HTTP/2 connection without a stream is closed after this long. */
export const CONNECTION_IDLE_MS = 60_000;
/** Once a connection is told to go away (its age), open streams get this long to end. */
export const CONNECTION_AGE_GRACE_MS = 30_000;

/**
 * The gRPC server's own bounds: message size, idle connections, and connection age (twice the
 * stream age: a connection outlives a stream or two, then the proxy dials again, which also
 * brings it the current serving certificate).
 */
export function grpcServerOptions(l: StreamLimits): grpc.ServerOptions {
  return {
    'grpc.max_receive_message_length': l.maxMessageBytes,
    'grpc.max_connection_idle_ms': CONNECTION_IDLE_MS,
    'grpc.max_connection_age_ms': 2 * l.maxStreamAgeMs,
    'grpc.max_connection_age_grace_ms': CONNECTION_AGE_GRACE_MS,
  };
}

/** 90 s, 5m, 1h30m: a duration as the flags take it, for messages. */
export function formatDuration(ms: number): string {
  if (ms % 60_000 === 0) return ms % 3_600_000 === 0 ? `${ms / 3_600_000}h` : `${ms / 60_000}m`;
  return ms % 1000 === 0 ? `${ms / 1000}s` : `${ms}ms`;
}
