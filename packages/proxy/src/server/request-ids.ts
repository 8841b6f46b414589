// The ids of requests (/debug/tasks names each request in flight `request <id>`). With worker
// threads the counter is the process's, one 64-bit word in shared memory that each thread adds
// to atomically: two threads never give one id to two requests, and a restarted worker goes on
// from where the process is instead of starting again at 1. Ids stay positive integers.
export class RequestIds {
  readonly #shared: BigInt64Array | null;
  #next = 1;

  /** `buffer`: the word the threads share (shared()); absent, this thread counts alone. */
  constructor(buffer?: SharedArrayBuffer) {
    this.#shared = buffer ? new BigInt64Array(buffer, 0, 1) : null;
  }

  /** A counter in new shared memory, for the main thread to hand to its workers (`buffer`). */
  static shared(): RequestIds {
    return new RequestIds(new SharedArrayBuffer(BigInt64Array.BYTES_PER_ELEMENT));
  }

  get buffer(): SharedArrayBuffer | null {
    return (this.#shared?.buffer as SharedArrayBuffer | undefined) ?? null;
  }

  next(): number {
    if (!this.#shared) return this.#next++;
    return Number(Atomics.add(this.#shared, 0, 1n)) + 1;
  }
}
