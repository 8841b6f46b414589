// Where the admin server (and, for inject mode, a listener) is reached: directly on loopback
// (--local) or through port-forwards to a pod. Commands only see this interface.
import type { GwctlError } from '../errors.js';

/** --timeout's default. */
export const DEFAULT_TIMEOUT_MS = 10_000;

/** The trace endpoint sends a keepalive comment this often while a session waits. */
export const TRACE_KEEPALIVE_MS = 5000;

/**
 * An event stream is given up on after three keepalives missed, or after --timeout if that is
 * longer: a trace may wait as long as it likes for its request while the server is alive.
 */
export function streamIdleMs(timeoutMs: number): number {
  return Math.max(timeoutMs, 3 * TRACE_KEEPALIVE_MS);
}

export interface Target {
  /** For messages: `127.0.0.1:15000`, or `pod edge/public-7d9f (port-forward)`. */
  readonly description: string;
  /** Base URL of the admin server, without a trailing slash. */
  readonly adminUrl: string;
  /** How long to wait for the admin server: to connect, for headers, between bytes (--timeout). */
  readonly timeoutMs: number;
  /** How long an open event stream may go without a byte: max(--timeout, 15s), see streamIdleMs(). */
  readonly streamIdleMs: number;
  /** `host:port` to dial locally to reach listener `port` of the proxy. */
  listener(port: number): Promise<string>;
  /** Turns a failed connection to the admin server or a listener into the error to report. */
  unreachable(err: unknown, what: { kind: 'admin' } | { kind: 'listener'; port: number }): GwctlError;
  close(): Promise<void>;
}
