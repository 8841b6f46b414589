// What the threads of one process share, so that each bound holds for the process and not per
// thread: the local rate limits (buckets, token windows, keyed tables: ratelimit/local/
// shared-memory.ts), the budget of buffered request-body bytes (config.maxBufferedRequestBytes),
// the client connections per bind (config.maxConnectionsPerBind), the WebSocket slots
// (config.maxWebSocketConnections), and the counter of request ids (server/request-ids.ts). The
// main thread creates the memory; each worker joins it with its own index; no message passes
// between threads per request. The limits' memory grows with the config: the main thread makes a
// limit's buffer as it compiles it, and each worker adopts the main thread's layout before it
// compiles the same snapshot. A worker that dies leaves its share behind, and the main thread
// gives it back (releaseWorker) once it has exited.
import { DEFAULT_MAX_WEBSOCKET_CONNECTIONS } from '../../pipeline/upgrades.js';
import { SharedBodyBudget } from '../../pipeline/shared-body-budget.js';
import { ConnectionSlots } from '../../server/connection-slots.js';
import { RequestIds } from '../../server/request-ids.js';
import type { RuntimeOptions } from '../../server/runtime.js';
import { FollowerLimitMemory, LeaderLimitMemory, type SharedLimitMemory } from '../../ratelimit/local/shared-memory.js';

/** The shared memory, as a worker receives it (structured-cloneable). */
export interface SharedBuffers {
  readonly bodyBudget: SharedArrayBuffer;
  readonly connections: SharedArrayBuffer;
  readonly websockets: SharedArrayBuffer;
  readonly requestIds: SharedArrayBuffer;
}

/** What one thread's runtime is given of the shared state. */
export type SharedRuntimeParts = Required<Pick<RuntimeOptions, 'bodyBudget' | 'connectionSlots' | 'websocketSlots' | 'limitMemory' | 'requestIds'>>;

/** What a dead worker held and was given back. */
export interface Released {
  readonly bytes: number;
  readonly connections: number;
  readonly websockets: number;
}

export class SharedState {
  private constructor(
    readonly parts: SharedRuntimeParts & { readonly bodyBudget: SharedBodyBudget; readonly websocketSlots: SharedBodyBudget; readonly limitMemory: SharedLimitMemory; readonly requestIds: RequestIds },
  ) {}

  /** The main thread's view (worker 0) over new memory for `threads` threads, sized from its runtime's options. */
  static create(threads: number, options: RuntimeOptions): SharedState {
    if (options.maxBufferedRequestBytes === undefined) throw new Error('the runtime options must state maxBufferedRequestBytes before it is shared');
    return new SharedState({
      bodyBudget: SharedBodyBudget.create(options.maxBufferedRequestBytes, threads),
      connectionSlots: ConnectionSlots.create(threads),
      websocketSlots: SharedBodyBudget.create(options.websockets?.maxConnections ?? DEFAULT_MAX_WEBSOCKET_CONNECTIONS, threads),
      limitMemory: new LeaderLimitMemory({ workers: threads }),
      requestIds: RequestIds.shared(),
    });
  }

  /** A worker's view of the memory the main thread created. */
  static join(buffers: SharedBuffers, index: number, threads: number): SharedState {
    return new SharedState({
      bodyBudget: new SharedBodyBudget(buffers.bodyBudget, index),
      connectionSlots: new ConnectionSlots(buffers.connections, index),
      websocketSlots: new SharedBodyBudget(buffers.websockets, index),
      limitMemory: new FollowerLimitMemory({ worker: index, workers: threads }),
      requestIds: new RequestIds(buffers.requestIds),
    });
  }

  get buffers(): SharedBuffers {
    const p = this.parts;
    return { bodyBudget: p.bodyBudget.buffer, connections: p.connectionSlots.buffer, websockets: p.websocketSlots.buffer, requestIds: p.requestIds.buffer! };
  }

  /** Gives back what worker `index` held (its token reservations too); call once it has exited. */
  releaseWorker(index: number): Released {
    const p = this.parts;
    p.limitMemory.releaseWorker(index);
    return { bytes: p.bodyBudget.releaseWorker(index), connections: p.connectionSlots.releaseWorker(index), websockets: p.websocketSlots.releaseWorker(index) };
  }
}
