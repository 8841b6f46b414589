// gRPC client of an Envoy RLS v3 service: one channel per service address, shared by every
// limiter (and every config generation) that names it, closed on shutdown. A channel connects
// as soon as a config names its service (at start and on every snapshot change), never lazily
// at the first call: a lazy connect makes the first call after start outlast its deadline
// and fail open. It is kept connected (an idle channel reconnects at once), and the pool
// reports readiness from it: the proxy is ready only when every service in use has answered.
import type { GlobalRateLimitIR } from '@tollgate/api';
import * as grpc from '@grpc/grpc-js';
import { decodeResponse, encodeRequest, SHOULD_RATE_LIMIT_PATH, type RlsRequest, type RlsResponse } from './proto.js';

/** A failed ShouldRateLimit call: the service is unreachable, timed out or answered an error. */
export class RlsCallError extends Error {
  constructor(
    readonly address: string,
    /** gRPC status name, e.g. UNAVAILABLE or DEADLINE_EXCEEDED. */
    readonly grpcCode: string,
    detail: string,
  ) {
    super(`rate limit service ${address}: ${grpcCode}: ${detail}`);
    this.name = 'RlsCallError';
  }
}

export interface RlsClient {
  readonly address: string;
  /** The channel has connected at least once: the service answered. */
  readonly connected: boolean;
  /** The first connection attempt has concluded: connected, or failed. */
  readonly attempted: boolean;
  /** One ShouldRateLimit call with a deadline of `timeoutMs`; rejects with RlsCallError. */
  shouldRateLimit(request: RlsRequest, timeoutMs: number): Promise<RlsResponse>;
}

// Reconnect quickly after the service restarts; a call made while the channel is down fails
// at once (no wait-for-ready), which the limiter turns into its failure mode.
const CHANNEL_OPTIONS: grpc.ChannelOptions = {
  'grpc.initial_reconnect_backoff_ms': 200,
  'grpc.max_reconnect_backoff_ms': 2000,
  'grpc.keepalive_time_ms': 30_000,
  'grpc.keepalive_timeout_ms': 5_000,
};

const serialize = (req: RlsRequest): Buffer => encodeRequest(req);

const { READY, TRANSIENT_FAILURE, SHUTDOWN } = grpc.connectivityState;

class GrpcRlsClient implements RlsClient {
  readonly #client: grpc.Client;
  #connected = false;
  #attempted = false;

  constructor(readonly address: string) {
    this.#client = new grpc.Client(address, grpc.credentials.createInsecure(), CHANNEL_OPTIONS);
    this.#watch();
  }

  get connected(): boolean {
    return this.#connected;
  }

  get attempted(): boolean {
    return this.#attempted;
  }

  /** Follows the channel's state for as long as it is open; an idle channel connects again. */
  #watch(): void {
    const channel = this.#client.getChannel();
    const state = channel.getConnectivityState(true);
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

  shouldRateLimit(request: RlsRequest, timeoutMs: number): Promise<RlsResponse> {
    return new Promise((resolve, reject) => {
      this.#client.makeUnaryRequest(
        SHOULD_RATE_LIMIT_PATH,
        serialize,
        decodeResponse,
        request,
        new grpc.Metadata(),
        { deadline: Date.now() + timeoutMs },
        (err, res) => {
          if (err) reject(new RlsCallError(this.address, grpc.status[err.code] ?? String(err.code), err.details || err.message));
          else if (!res) reject(new RlsCallError(this.address, 'INTERNAL', 'empty response'));
          else resolve(res);
        },
      );
    });
  }

  close(): void {
    this.#client.close();
  }
}

type FailureMode = GlobalRateLimitIR['failureMode'];

/** Whether the services in use have answered; `waiting` names those the proxy waits for. */
export interface RlsReadiness {
  readonly ready: boolean;
  readonly waiting: readonly string[];
}

/** One gRPC channel per service address, shared across config reloads; close() on shutdown. */
export class RlsClientPool {
  readonly #clients = new Map<string, GrpcRlsClient>();
  /** Services of the config in force, with the strictest failure mode of the limits using each. */
  #inUse: ReadonlyMap<string, FailureMode> = new Map();

  get(address: string): RlsClient {
    let client = this.#clients.get(address);
    if (!client) {
      client = new GrpcRlsClient(address);
      this.#clients.set(address, client);
    }
    return client;
  }

  /** Addresses with an open channel (for the config dump and tests). */
  addresses(): string[] {
    return [...this.#clients.keys()];
  }

  /**
   * Records the services the config now in force uses, and closes the channels to services no
   * config uses any more (after a reload). A call still in flight on such a channel may fail;
   * it is then handled by its failure mode. `inUse` maps each address to FailClosed when any
   * limit using it fails closed, else FailOpen.
   */
  retain(inUse: ReadonlyMap<string, FailureMode>): void {
    this.#inUse = inUse;
    for (const [address, client] of this.#clients) {
      if (inUse.has(address)) continue;
      client.close();
      this.#clients.delete(address);
    }
  }

  /**
   * Readiness (the /healthz/ready endpoint): a service used by a FailClosed limit must have
   * connected (every request would be refused otherwise); one used only by FailOpen limits
   * needs its first connection attempt to have concluded, connected or failed, so the first
   * requests do not race the connection, yet a service that is down does not keep the proxy
   * out of service when the config says to serve without it. Once met for a channel, this
   * stays met: later outages are the failure mode's business, not the orchestrator's.
   */
  readiness(): RlsReadiness {
    const waiting: string[] = [];
    for (const [address, mode] of this.#inUse) {
      const c = this.#clients.get(address);
      if (!c || (mode === 'FailClosed' ? !c.connected : !c.attempted)) waiting.push(address);
    }
    return { ready: waiting.length === 0, waiting };
  }

  async close(): Promise<void> {
    this.retain(new Map());
  }
}
