// The one lock of a shared limit memory: every thread's checks, settlements and listings of
// shared budgets run under it, so a check of several budgets is all-or-nothing across threads
// as it is within one. It is never held across an await: what runs under it is a few field
// reads and writes (a sweep of a full key table, once per window, or a GET /budgets listing is
// the longest), so waiters spin a little, then sleep in Atomics.wait.
//
// The word is 0 when free, else the holder's worker index + 1, with WAITERS set once a thread
// sleeps on it (the holder then wakes one on release). Keeping the holder's index lets
// `stealFrom` free the lock of a worker that was terminated while holding it.
import type { Lock } from './limit-memory.js';

const WAITERS = 1 << 30;
/** Attempts before sleeping: the lock is held for microseconds, a sleep costs more. */
const SPINS = 64;
/** A bounded sleep: a wake-up lost to a terminated holder costs a millisecond, not forever. */
const WAIT_MS = 1;

export class SharedLock implements Lock {
  readonly #word: Int32Array;
  readonly #me: number;

  constructor(
    /** 4 bytes, shared by every thread (the layout carries it). */
    readonly buffer: SharedArrayBuffer,
    worker: number,
  ) {
    this.#word = new Int32Array(buffer, 0, 1);
    this.#me = worker + 1;
  }

  static buffer(): SharedArrayBuffer {
    return new SharedArrayBuffer(4);
  }

  acquire(): void {
    const word = this.#word;
    if (Atomics.compareExchange(word, 0, 0, this.#me) === 0) return;
    for (let i = 0; i < SPINS; i++) if (Atomics.load(word, 0) === 0 && Atomics.compareExchange(word, 0, 0, this.#me) === 0) return;
    for (;;) {
      const v = Atomics.load(word, 0);
      // Taken with WAITERS set: whoever else sleeps here is woken in turn by a later release.
      if (v === 0) {
        if (Atomics.compareExchange(word, 0, 0, this.#me | WAITERS) === 0) return;
        continue;
      }
      if ((v & WAITERS) === 0 && Atomics.compareExchange(word, 0, v, v | WAITERS) !== v) continue;
      Atomics.wait(word, 0, v | WAITERS, WAIT_MS);
    }
  }

  release(): void {
    if ((Atomics.exchange(this.#word, 0, 0) & WAITERS) !== 0) Atomics.notify(this.#word, 0, 1);
  }

  /**
   * Takes the lock if worker `w` (terminated) holds it, else waits for it as `acquire`. What the
   * dead worker was writing is a few fields of budgets it held: `releaseWorker` resets its own.
   */
  acquireFrom(w: number): void {
    const word = this.#word;
    for (;;) {
      const v = Atomics.load(word, 0);
      if ((v & ~WAITERS) !== w + 1) break;
      if (Atomics.compareExchange(word, 0, v, this.#me | WAITERS) === v) return;
    }
    this.acquire();
  }
}
