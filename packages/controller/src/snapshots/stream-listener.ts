// The gRPC server of the snapshot stream: bound with its own bounds (message size, idle
// connections, connection age: grpcServerOptions), and stopped by draining: open streams get a
// grace period to finish, then the rest are cut. A stream the controller holds no record of
// (still authenticating, or without its hello) or a client that never closes its side would
// otherwise hold the shutdown forever.
import * as grpc from '@grpc/grpc-js';
import { SNAPSHOT_SERVICE, type OutgoingPush, type ProxyMessage } from '@tollgate/api/snapshot-stream';
import type { Logger } from 'pino';
import { formatHostPort, type HostPort } from '../runtime/host-port.js';
import { grpcServerOptions, type StreamLimits } from './stream-limits.js';

export type StreamCall = grpc.ServerDuplexStream<ProxyMessage, OutgoingPush>;

export interface ListenerOptions {
  readonly addr: HostPort;
  readonly limits: StreamLimits;
  /** How long stop() lets open streams finish before cutting them. */
  readonly shutdownGraceMs: number;
  readonly log: Logger;
}

export class StreamListener {
  #server: grpc.Server | null = null;
  #port = 0;

  constructor(private readonly o: ListenerOptions) {}

  /** The bound port (after start). */
  get port(): number {
    return this.#port;
  }

  /** Binds and serves `open` for each stream; resolves with the bound address. */
  async start(credentials: grpc.ServerCredentials, open: (call: StreamCall) => void): Promise<string> {
    const server = new grpc.Server(grpcServerOptions(this.o.limits));
    server.addService(SNAPSHOT_SERVICE, { Stream: open });
    const address = formatHostPort({ host: this.o.addr.host || '0.0.0.0', port: this.o.addr.port });
    this.#port = await new Promise<number>((resolve, reject) => server.bindAsync(address, credentials, (err, port) => (err ? reject(err) : resolve(port))));
    this.#server = server;
    return formatHostPort({ host: this.o.addr.host, port: this.#port });
  }

  /** Drains: resolves once every stream has ended, or when the grace period is over and the rest are cut. */
  async stop(): Promise<void> {
    const server = this.#server;
    this.#server = null;
    if (!server) return;
    const graceMs = this.o.shutdownGraceMs;
    await new Promise<void>((resolve) => {
      const force = setTimeout(() => {
        this.o.log.warn({ graceMs }, 'snapshot streams still open after the grace period; cutting them');
        server.forceShutdown();
        resolve();
      }, graceMs);
      server.tryShutdown(() => {
        clearTimeout(force);
        resolve();
      });
    });
  }
}
