// One request's stream to its external processor: each message sent waits for exactly one
// answer within the policy's messageTimeout. What the processor does wrong ends the stream
// and fails the message: no answer in time (timeout), a stream it closed or could not open
// (closed, unavailable), an answer that does not decode or arrives unasked (bad_response).
import { GrpcChannel, type GrpcCallError, type GrpcDuplex } from '../grpc/channel.js';
import { EXT_PROC_BOUNDS } from '@tollgate/api';
import { decodeProcessingResponse, encodeProcessingRequest, PROCESS_PATH, type ProcessingRequest, type ProcessingResponse } from './proto.js';

export type FailureReason = 'timeout' | 'unavailable' | 'closed' | 'bad_response' | 'too_large';

/** The processor failed a message; the policy's failureMode decides what follows. */
export class ExtProcFailure extends Error {
  constructor(
    readonly reason: FailureReason,
    detail: string,
  ) {
    super(`${reason}: ${detail}`);
    this.name = 'ExtProcFailure';
  }
}

/**
 * The largest message read from a processor: a body at the largest maxBufferedBytes and its
 * headers. A larger one fails the stream (RESOURCE_EXHAUSTED); each policy's own bound is
 * checked on what is read (answer.ts).
 */
export const MAX_PROCESSOR_MESSAGE_BYTES = EXT_PROC_BOUNDS.maxBufferedBytes + 256 * 1024;

export class ExtProcClient extends GrpcChannel {
  constructor(address: string) {
    super(address, 'external processor', { maxReceiveBytes: MAX_PROCESSOR_MESSAGE_BYTES, maxSendBytes: MAX_PROCESSOR_MESSAGE_BYTES });
  }

  open(timeoutMs: number): ProcessorStream {
    return new ProcessorStream((events) => this.duplex(PROCESS_PATH, encodeProcessingRequest, decodeProcessingResponse, events), this.address, timeoutMs);
  }
}

interface Waiting {
  readonly resolve: (res: ProcessingResponse) => void;
  readonly reject: (err: ExtProcFailure) => void;
  readonly timer: NodeJS.Timeout;
}

const STATUS_REASON: Record<string, FailureReason> = { DEADLINE_EXCEEDED: 'timeout', UNAVAILABLE: 'unavailable', RESOURCE_EXHAUSTED: 'too_large', INTERNAL: 'bad_response' };

export class ProcessorStream {
  #waiting: Waiting | null = null;
  /** Why the stream ended; every later message fails with it. */
  #ended: ExtProcFailure | null = null;

  readonly #call: GrpcDuplex<ProcessingRequest, ProcessingResponse>;

  constructor(
    open: (events: { message: (res: ProcessingResponse) => void; end: (err: GrpcCallError | null) => void }) => GrpcDuplex<ProcessingRequest, ProcessingResponse>,
    private readonly address: string,
    private readonly timeoutMs: number,
  ) {
    this.#call = open({
      message: (res) => {
        const w = this.#waiting;
        if (w) return this.#settle(() => w.resolve(res));
        this.#end(new ExtProcFailure('bad_response', 'the processor sent a message nobody asked for'));
      },
      end: (err) =>
        this.#end(err ? new ExtProcFailure(STATUS_REASON[err.grpcCode] ?? 'bad_response', `${address}: ${err.detail}`) : new ExtProcFailure('closed', `${address} closed the stream`)),
    });
  }

  /** Sends one message and resolves with its answer; rejects with ExtProcFailure. */
  exchange(req: ProcessingRequest): Promise<ProcessingResponse> {
    if (this.#ended) return Promise.reject(this.#ended);
    if (this.#waiting) return Promise.reject(new ExtProcFailure('bad_response', 'a message is already waiting for its answer'));
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => this.#end(new ExtProcFailure('timeout', `${this.address} did not answer within ${this.timeoutMs}ms`)), this.timeoutMs);
      this.#waiting = { resolve, reject, timer };
      this.#call.write(req);
    });
  }

  #settle(f: () => void): void {
    clearTimeout(this.#waiting!.timer);
    this.#waiting = null;
    f();
  }

  #end(failure: ExtProcFailure): void {
    if (!this.#ended) {
      this.#ended = failure;
      this.#call.cancel();
    }
    const w = this.#waiting;
    if (w) this.#settle(() => w.reject(failure));
  }

  /** The request is over: the stream ends (half-close, then cancel). */
  close(): void {
    if (this.#ended) return;
    this.#ended = new ExtProcFailure('closed', 'the request ended');
    this.#call.end();
    this.#call.cancel();
    const w = this.#waiting;
    if (w) this.#settle(() => w.reject(this.#ended!));
  }
}
