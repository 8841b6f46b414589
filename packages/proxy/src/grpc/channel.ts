// A gRPC channel to a service a policy calls (a rate limit service, an external authorization
// service), kept connected for as long as a config names the service. It connects as soon as
// it is made (a config naming the service was compiled), never lazily at the first call: a
// lazy connect makes the first call after start outlast its deadline and take the failure
// mode. An idle channel reconnects at once. Calls carry raw protobuf bytes; each service's
// module owns its messages. @grpc/grpc-js is loaded by the first channel a config makes
// (feature-module.ts), so a config without a gRPC service never holds it.
import type * as Grpc from '@grpc/grpc-js';
import { grpcModule } from '../feature-module.js';

/** A failed call: the service is unreachable, timed out, answered an error or bytes that do not decode. */
export class GrpcCallError extends Error {
  constructor(
    readonly address: string,
    /** gRPC status name, e.g. UNAVAILABLE, DEADLINE_EXCEEDED or INTERNAL (a response that does not decode). */
    readonly grpcCode: string,
    detail: string,
    role: string,
  ) {
    super(`${role} ${address}: ${grpcCode}: ${detail}`);
    this.name = 'GrpcCallError';
  }
}

// Reconnect quickly after the service restarts; a call made while the channel is down fails
// at once (no wait-for-ready), which the caller turns into its failure mode.
const CHANNEL_OPTIONS: Grpc.ChannelOptions = {
  'grpc.initial_reconnect_backoff_ms': 200,
  'grpc.max_reconnect_backoff_ms': 2000,
  'grpc.keepalive_time_ms': 30_000,
  'grpc.keepalive_timeout_ms': 5_000,
};

export class GrpcChannel {
  readonly #grpc: typeof Grpc;
  readonly #client: Grpc.Client;
  #connected = false;
  #attempted = false;
  #state: Grpc.connectivityState;

  /** `role` names the service in errors (e.g. "rate limit service"). */
  constructor(
    readonly address: string,
    readonly role: string,
    options: Grpc.ChannelOptions = {},
  ) {
    const grpc = (this.#grpc = grpcModule());
    this.#state = grpc.connectivityState.IDLE;
    this.#client = new grpc.Client(address, grpc.credentials.createInsecure(), { ...CHANNEL_OPTIONS, ...options });
    this.#watch();
  }

  /** The channel has connected at least once: the service answered. */
  get connected(): boolean {
    return this.#connected;
  }

  /** The first connection attempt has concluded: connected, or failed. */
  get attempted(): boolean {
    return this.#attempted;
  }

  /** The channel is connected now. */
  get connectedNow(): boolean {
    return this.#state === this.#grpc.connectivityState.READY;
  }

  /** Follows the channel's state for as long as it is open; an idle channel connects again. */
  #watch(): void {
    const channel = this.#client.getChannel();
    const state = channel.getConnectivityState(true);
    const { READY, TRANSIENT_FAILURE, SHUTDOWN } = this.#grpc.connectivityState;
    this.#state = state;
    if (state === SHUTDOWN) return;
    if (state === READY) this.#connected = this.#attempted = true;
    else if (state === TRANSIENT_FAILURE) this.#attempted = true;
    // getConnectivityState(true) above asked an IDLE channel to connect; every state change
    // comes back here, so the channel never rests idle. No deadline: the watcher holds no
    // timer, so it never keeps the process alive.
    channel.watchConnectivityState(state, Infinity, (err) => {
      if (!err) this.#watch();
    });
  }

  // A call made while the channel is still connecting waits for the connection within its
  // deadline (gRPC queues it); one made while the channel is down (TRANSIENT_FAILURE) fails at
  // once.
  /** One unary call with a deadline of `timeoutMs`; rejects with GrpcCallError. */
  unary<Req, Res>(path: string, serialize: (req: Req) => Buffer, deserialize: (bytes: Buffer) => Res, request: Req, timeoutMs: number): Promise<Res> {
    return new Promise((resolve, reject) => {
      this.#client.makeUnaryRequest(path, serialize, deserialize, request, new this.#grpc.Metadata(), { deadline: Date.now() + timeoutMs }, (err, res) => {
        if (err) reject(new GrpcCallError(this.address, this.#grpc.status[err.code] ?? String(err.code), err.details || err.message, this.role));
        else if (!res) reject(new GrpcCallError(this.address, 'INTERNAL', 'empty response', this.role));
        else resolve(res);
      });
    });
  }

  /** A bidirectional stream without a deadline: its caller times each message (ext-proc/stream.ts). */
  duplex<Req, Res>(path: string, serialize: (req: Req) => Buffer, deserialize: (bytes: Buffer) => Res): Grpc.ClientDuplexStream<Req, Res> {
    return this.#client.makeBidiStreamRequest(path, serialize, deserialize, new this.#grpc.Metadata(), {});
  }

  close(): void {
    this.#client.close();
  }
}
