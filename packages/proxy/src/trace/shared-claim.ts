// The word that decides which thread streams a trace session armed on every thread: 0 while no
// thread took it, else the taker's worker index + 1. Taking is one compare-and-swap, so exactly
// one thread takes the session; any thread can read which one did (/debug/tasks shows it).
export class SharedClaim {
  readonly #word: Int32Array;

  /** `buffer`: the session's word (create()); `worker`: the index of the thread this view takes it for. */
  constructor(
    readonly buffer: SharedArrayBuffer,
    private readonly worker: number,
  ) {
    this.#word = new Int32Array(buffer, 0, 1);
  }

  /** A new word, for the main thread (worker 0) to hand to the others. */
  static create(): SharedClaim {
    return new SharedClaim(new SharedArrayBuffer(Int32Array.BYTES_PER_ELEMENT), 0);
  }

  /** Takes the session for this thread: true for exactly one thread. */
  take(): boolean {
    return Atomics.compareExchange(this.#word, 0, 0, this.worker + 1) === 0;
  }

  /** The worker index of the thread that took it; null while none has. */
  get taker(): number | null {
    const v = Atomics.load(this.#word, 0);
    return v === 0 ? null : v - 1;
  }
}
