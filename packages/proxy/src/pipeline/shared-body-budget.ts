// The budget of buffered request-body bytes (./body-budget.ts) shared by the proxy's worker
// threads: config.maxBufferedRequestBytes holds for the whole process, however many threads
// read bodies. The count lives in a SharedArrayBuffer the main thread creates (create()) and
// hands to each worker at its start (`buffer`, structured-cloneable); each thread wraps it with
// its own worker index (new SharedBodyBudget(buffer, index)). No message between threads per
// chunk or request: a take is a compare-and-swap loop on the total, a give-back two
// subtractions.
//
// Beside the total, each worker has a column of the bytes it holds, so the bytes of a thread
// that dies (its requests never end, never give back) return to the budget: the main thread
// calls releaseWorker(w) once that worker has exited. Each operation updates the total and the
// column in the order that, should a thread die between the two, leaves bytes counted rather
// than lost: the budget may lose up to one chunk to a dying thread, never exceed its max.
//
// The words are 64-bit (maxBufferedRequestBytes may be up to 16 GiB); each sits on its own
// 64-byte line so the threads' columns do not contend with each other or with the total.
import type { BytesBudget } from './body-budget.js';

/** BigInt64 words per cache line: one counter each. */
const LINE = 8;
const MAX = 0;
const WORKERS = 1;
const USED = LINE;
const column = (worker: number): number => 2 * LINE + worker * LINE;

export class SharedBodyBudget implements BytesBudget {
  readonly max: number;
  /** Threads sharing the budget (worker 0, the main thread, included). */
  readonly workers: number;
  readonly #words: BigInt64Array;
  readonly #max: bigint;
  readonly #column: number;

  /**
   * The main thread's budget (worker 0) over new shared memory for `workers` threads; each
   * other worker gets `budget.buffer` and wraps it with its own index.
   */
  static create(max: number, workers: number): SharedBodyBudget {
    if (!Number.isSafeInteger(max) || max < 0) throw new RangeError(`a body budget's max must be a whole number of bytes, got ${max}`);
    if (!Number.isInteger(workers) || workers < 1) throw new RangeError(`a shared body budget needs at least one worker, got ${workers}`);
    const words = new BigInt64Array(new SharedArrayBuffer(column(workers) * BigInt64Array.BYTES_PER_ELEMENT));
    words[MAX] = BigInt(max);
    words[WORKERS] = BigInt(workers);
    return new SharedBodyBudget(words.buffer, 0);
  }

  /** `buffer`: what create() made (`budget.buffer`); `worker`: this thread's index, 0 the main thread. */
  constructor(
    readonly buffer: SharedArrayBuffer,
    readonly worker: number,
  ) {
    this.#words = new BigInt64Array(buffer);
    this.workers = Number(this.#words[WORKERS]);
    if (buffer.byteLength !== column(this.workers) * BigInt64Array.BYTES_PER_ELEMENT) throw new TypeError('the buffer is not a shared body budget: SharedBodyBudget.create() makes one');
    if (!Number.isInteger(worker) || worker < 0 || worker >= this.workers) throw new RangeError(`worker ${worker} is not one of the budget's ${this.workers} workers (0 to ${this.workers - 1})`);
    this.#max = this.#words[MAX]!;
    this.max = Number(this.#max);
    this.#column = column(worker);
  }

  /** Bytes held now by all the threads (the tollgate_buffered_request_bytes gauge). */
  get used(): number {
    return Number(Atomics.load(this.#words, USED));
  }

  /** Takes `n` bytes; false, taking nothing, when they would go beyond the budget. */
  take(n: number): boolean {
    const words = this.#words;
    const add = BigInt(n);
    let used = Atomics.load(words, USED);
    for (;;) {
      const next = used + add;
      if (next > this.#max) return false;
      const seen = Atomics.compareExchange(words, USED, used, next);
      if (seen === used) break;
      used = seen;
    }
    Atomics.add(words, this.#column, add);
    return true;
  }

  giveBack(n: number): void {
    const sub = BigInt(n);
    Atomics.sub(this.#words, this.#column, sub);
    Atomics.sub(this.#words, USED, sub);
  }

  /** Bytes worker `w` holds now. */
  heldBy(w: number): number {
    return Number(Atomics.load(this.#words, this.#checked(w)));
  }

  /**
   * Gives back everything worker `w` held; only once that thread has exited (a live one would
   * give its bytes back a second time). Returns the bytes released.
   */
  releaseWorker(w: number): number {
    const held = Atomics.exchange(this.#words, this.#checked(w), 0n);
    if (held !== 0n) Atomics.sub(this.#words, USED, held);
    return Number(held);
  }

  #checked(w: number): number {
    if (!Number.isInteger(w) || w < 0 || w >= this.workers) throw new RangeError(`worker ${w} is not one of the budget's ${this.workers} workers (0 to ${this.workers - 1})`);
    return column(w);
  }
}
