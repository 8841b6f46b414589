// How a bind listens when several worker threads serve the same ports. Each thread has its own
// listening socket on every bind with SO_REUSEPORT, and the kernel spreads new connections
// across them: no thread hands connections to another. A bind on port 0 is the main thread's
// choice of port; the other threads listen on the port it was given.
//
// One process alone listens without SO_REUSEPORT, so a second process started on the same
// port fails with TG_BIND_IN_USE instead of quietly taking part of the traffic.
export interface BindSharing {
  /** The port a configured bind listens on (for port 0: the port the main thread was given). */
  port(address: string, port: number): number;
}

export interface ListenAt {
  readonly host: string;
  readonly port: number;
  readonly reusePort?: true;
}

export function listenAt(sharing: BindSharing | null | undefined, address: string, port: number): ListenAt {
  return sharing ? { host: address, port: sharing.port(address, port), reusePort: true } : { host: address, port };
}

/** The main thread's sharing: every bind with SO_REUSEPORT, on the configured port. */
export const LEADER_BINDS: BindSharing = { port: (_address, port) => port };
