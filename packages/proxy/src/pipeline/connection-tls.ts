// What the TLS handshake of a client connection decided, kept with the connection: the data
// plane records it once the handshake is done (server/data-plane.ts), and the listener stage
// reads it for every request on the connection (./listener.ts). It is a symbol-keyed property of
// the TLS socket, not a WeakMap entry: an HTTP/2 request's `req.socket` is a proxy of the
// session's socket that passes property reads through, so the same read serves HTTP/1.1 and
// HTTP/2; and it goes with the socket.
import type { CompiledClientValidation, ClientCertificateFacts } from '../routing/client-validation.js';

export interface ConnectionTls {
  /** The listener whose TLS settings the handshake used (by SNI name, or the bind's default). */
  readonly listener: string;
  /** That listener's client validation then; null: no client certificate was checked. */
  readonly validation: CompiledClientValidation | null;
  /** What the client presented and whether it verified; null when no certificate was checked. */
  readonly client: ClientCertificateFacts | null;
}

const RECORD = Symbol('tollgate.connectionTls');

type WithRecord = { [RECORD]?: ConnectionTls };

export function recordConnectionTls(socket: object, record: ConnectionTls): void {
  (socket as WithRecord)[RECORD] = record;
}

/** The record of the socket a request came on; undefined on plain HTTP. */
export function connectionTls(socket: object): ConnectionTls | undefined {
  return (socket as WithRecord)[RECORD];
}
