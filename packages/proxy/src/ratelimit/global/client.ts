// gRPC client of an Envoy RLS v3 service: one channel per service address, shared by every
// limiter (and every config generation) that names it, closed on shutdown.
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

class GrpcRlsClient implements RlsClient {
  readonly #client: grpc.Client;

  constructor(readonly address: string) {
    this.#client = new grpc.Client(address, grpc.credentials.createInsecure(), CHANNEL_OPTIONS);
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

/** One gRPC channel per service address, shared across config reloads; close() on shutdown. */
export class RlsClientPool {
  readonly #clients = new Map<string, GrpcRlsClient>();

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
   * Closes the channels to services no config uses any more (after a reload). A call still in
   * flight on such a channel may fail; it is then handled by its failure mode.
   */
  retain(keep: ReadonlySet<string>): void {
    for (const [address, client] of this.#clients) {
      if (keep.has(address)) continue;
      client.close();
      this.#clients.delete(address);
    }
  }

  async close(): Promise<void> {
    this.retain(new Set());
  }
}
