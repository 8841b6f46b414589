// Where the admin server (and, for inject mode, a listener) is reached: directly on loopback
// (--local) or through port-forwards to a pod. Commands only see this interface.
import type { GwctlError } from '../errors.js';

export interface Target {
  /** For messages: `127.0.0.1:15000`, or `pod edge/public-7d9f (port-forward)`. */
  readonly description: string;
  /** Base URL of the admin server, without a trailing slash. */
  readonly adminUrl: string;
  /** `host:port` to dial locally to reach listener `port` of the proxy. */
  listener(port: number): Promise<string>;
  /** Turns a failed connection to the admin server or a listener into the error to report. */
  unreachable(err: unknown, what: { kind: 'admin' } | { kind: 'listener'; port: number }): GwctlError;
  close(): Promise<void>;
}
