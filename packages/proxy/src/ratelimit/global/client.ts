// gRPC client of an Envoy RLS v3 service: one channel per service address, shared by every
// limiter (and every config generation) that names it, closed on shutdown. A channel connects
// as soon as a config names its service (at start and on every snapshot change), never lazily
// at the first call: a lazy connect makes the first call after start outlast its deadline
// and fail open. It is kept connected (an idle channel reconnects at once). The pool reports
// readiness from the channels of the services gateway-level policies use (what the Gateway's
// owner configured); a service only route-level policies use never holds readiness, since a
// tenant's route must not take the shared proxy out of service (docs/security.md).
import { GrpcCallError, GrpcChannel } from '../../grpc/channel.js';
import { decodeResponse, encodeRequest, rlsProtos, SHOULD_RATE_LIMIT_PATH, type RlsRequest, type RlsResponse } from './proto.js';
import type { ReadinessNeed } from './readiness.js';

/** A failed ShouldRateLimit call: the service is unreachable, timed out or answered an error. */
export { GrpcCallError as RlsCallError };

export interface RlsClient {
  readonly address: string;
  /** The channel has connected at least once: the service answered. */
  readonly connected: boolean;
  /** The first connection attempt has concluded: connected, or failed. */
  readonly attempted: boolean;
  /** One ShouldRateLimit call with a deadline of `timeoutMs`; rejects with RlsCallError. */
  shouldRateLimit(request: RlsRequest, timeoutMs: number): Promise<RlsResponse>;
}

class GrpcRlsClient extends GrpcChannel implements RlsClient {
  constructor(address: string) {
    super(address, 'rate limit service');
    // Parsed now, by the compile of the config naming the service, never by its first call.
    rlsProtos();
  }

  // The first requests of a route whose service readiness does not wait for (a route-level
  // policy's) are decided by the service when it is up (GrpcChannel queues a call while it
  // connects).
  shouldRateLimit(request: RlsRequest, timeoutMs: number): Promise<RlsResponse> {
    return this.unary(SHOULD_RATE_LIMIT_PATH, encodeRequest, decodeResponse, request, timeoutMs);
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
