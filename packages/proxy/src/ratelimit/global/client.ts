// gRPC client of an Envoy RLS v3 service: one channel per service address, shared by every
// limiter (and every config generation) that names it, closed on shutdown. A channel connects
// as soon as a config names its service (at start and on every snapshot change), never lazily
// at the first call: a lazy connect makes the first call after start outlast its deadline
// and fail open. It is kept connected (an idle channel reconnects at once). The pool reports
// readiness from the channels of the services gateway-level policies use (what the Gateway's
// owner configured); a service only route-level policies use never holds readiness, since a
// tenant's route must not take the shared proxy out of service (docs/security.md).
import * as grpc from '@grpc/grpc-js';
import { decodeResponse, encodeRequest, SHOULD_RATE_LIMIT_PATH, type RlsRequest, type RlsResponse } from './proto.js';
import type { ReadinessNeed } from './readiness.js';

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
  #state: grpc.connectivityState = grpc.connectivityState.IDLE;

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

  /** The channel is connected now (the tollgate_ratelimit_service_connected gauge). */
  get connectedNow(): boolean {
    return this.#state === READY;
  }

  /** Follows the channel's state for as long as it is open; an idle channel connects again. */
  #watch(): void {
    const channel = this.#client.getChannel();
    const state = channel.getConnectivityState(true);
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
  // once. So the first requests of a route whose service readiness does not wait for (a
  // route-level policy's) are decided by the service when it is up.
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

/** Whether the services in use have answered; `waiting` names those the proxy waits for. */
export interface RlsReadiness {
  readonly ready: boolean;
  readonly waiting: readonly string[];
}

/** One service's channel as the metrics show it. */
export interface RlsServiceState {
  readonly address: string;
  readonly connected: boolean;
}

/** One gRPC channel per service address, shared across config reloads; close() on shutdown. */
export class RlsClientPool {
  readonly #clients = new Map<string, GrpcRlsClient>();
  /** Services of the config in force, with what readiness waits for on each. */
  #inUse: ReadonlyMap<string, ReadinessNeed> = new Map();

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

  /** Whether each open channel is connected now. */
  states(): RlsServiceState[] {
    return [...this.#clients].map(([address, c]) => ({ address, connected: c.connectedNow }));
  }

  /**
   * Records the services the config now in force uses, and closes the channels to services no
   * config uses any more (after a reload). A call still in flight on such a channel may fail;
   * it is then handled by its failure mode. `inUse` maps each address to what readiness waits
   * for on it (./readiness.ts).
   */
  retain(inUse: ReadonlyMap<string, ReadinessNeed>): void {
    this.#inUse = inUse;
    for (const [address, client] of this.#clients) {
      if (inUse.has(address)) continue;
      client.close();
      this.#clients.delete(address);
    }
  }

  /**
   * Readiness (the /healthz/ready endpoint), by the need of each service in use. Once met for
   * a channel, this stays met: later outages are the failure mode's business, not the
   * orchestrator's (taking every replica out of its Service at once helps nobody).
   */
  readiness(): RlsReadiness {
    const waiting: string[] = [];
    for (const [address, need] of this.#inUse) {
      if (need === 'nothing') continue;
      const c = this.#clients.get(address);
      if (!c || (need === 'answered' ? !c.connected : !c.attempted)) waiting.push(address);
    }
    return { ready: waiting.length === 0, waiting };
  }

  async close(): Promise<void> {
    this.retain(new Map());
  }
}
