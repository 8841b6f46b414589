// How a bind listens when several worker threads serve the same ports. Each thread has its own
// listening socket on every bind with SO_REUSEPORT, and the kernel spreads new connections
// across them: no thread hands connections to another. A bind on port 0 is the main thread's
// choice of port; the other threads listen on the port it was given.
//
// SO_REUSEPORT would also let another process of the same user listen on the port and quietly
// take part of the traffic. So the main thread first binds a new port without it, the way a
// single thread listens: a port another process holds fails there with TG_BIND_IN_USE. (The
// probe is let go just before the real bind: a process taking the port in between is not seen.)
import { createServer } from 'node:net';

export interface BindSharing {
  /** The port a configured bind listens on (for port 0: the port the main thread was given). */
  port(address: string, port: number): number;
  /** Check a new port is free before listening on it (the main thread: the others join its ports). */
  readonly probe: boolean;
}

export interface ListenAt {
  readonly host: string;
  readonly port: number;
  readonly reusePort?: true;
}

export function listenAt(sharing: BindSharing | null | undefined, address: string, port: number): ListenAt {
  return sharing ? { host: address, port: sharing.port(address, port), reusePort: true } : { host: address, port };
}

/** The main thread's sharing: every bind with SO_REUSEPORT, on the configured port, probed first. */
export const LEADER_BINDS: BindSharing = { port: (_address, port) => port, probe: true };

/** Rejects with the listen error (EADDRINUSE, EACCES, ...) when `host:port` cannot be bound exclusively. */
export async function probePort(sharing: BindSharing | null | undefined, host: string, port: number): Promise<void> {
  if (!sharing?.probe || port === 0) return;
  const probe = createServer();
  await new Promise<void>((resolve, reject) => {
    probe.once('error', reject);
    probe.listen({ host, port, exclusive: true }, () => resolve());
  });
  await new Promise<void>((resolve) => probe.close(() => resolve()));
}
