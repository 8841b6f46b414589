// One work queue for the whole controller: every watch event marks the world dirty and the
// queue runs the reconcile (translate everything, hand out snapshots and status).
//
// Leading edge: in a quiet cluster a change is reconciled at once. After each run the queue
// cools down; changes that arrive meanwhile are coalesced into one run at the end of the
// cool-down, and each such back-to-back run doubles the cool-down (up to a cap). A burst of
// any length therefore costs a number of runs logarithmic in its duration until the cap, and
// the queue returns to reacting at once after one cool-down without changes.
export interface DebounceOptions {
  /** First cool-down after a run (default 100 ms). */
  readonly initialDelayMs?: number;
  /** Longest cool-down, reached during a long burst (default 10 s). */
  readonly maxDelayMs?: number;
}

export type QueueState = 'idle' | 'running' | 'cooling' | 'stopped';

export class DebouncedQueue {
  readonly #work: () => Promise<void> | void;
  readonly #initial: number;
  readonly #max: number;
  #delay: number;
  #state: QueueState = 'idle';
  #pending = 0;
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> | undefined;
  #onError: (err: unknown) => void;

  constructor(work: () => Promise<void> | void, onError: (err: unknown) => void, opts: DebounceOptions = {}) {
    this.#work = work;
    this.#onError = onError;
    this.#initial = opts.initialDelayMs ?? 100;
    this.#max = Math.max(this.#initial, opts.maxDelayMs ?? 10_000);
    this.#delay = this.#initial;
  }

  get state(): QueueState {
    return this.#state;
  }

  /** Changes seen and not yet reconciled. */
  get depth(): number {
    return this.#pending;
  }

  /** Current cool-down. */
  get delayMs(): number {
    return this.#delay;
  }

  add(): void {
    if (this.#state === 'stopped') return;
    this.#pending++;
    if (this.#state === 'idle') this.#run();
  }

  #run(): void {
    this.#state = 'running';
    this.#pending = 0;
    this.#running = (async () => {
      try {
        await this.#work();
      } catch (err) {
        this.#onError(err);
      }
    })().finally(() => {
      this.#running = undefined;
      if (this.#state === 'stopped') return;
      this.#state = 'cooling';
      this.#timer = setTimeout(() => this.#cooled(), this.#delay);
    });
  }

  #cooled(): void {
    this.#timer = undefined;
    if (this.#state !== 'cooling') return;
    if (this.#pending > 0) {
      this.#delay = Math.min(this.#delay * 2, this.#max);
      this.#run();
    } else {
      this.#delay = this.#initial;
      this.#state = 'idle';
    }
  }

  /** Stops scheduling; waits for a run in progress. */
  async stop(): Promise<void> {
    this.#state = 'stopped';
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = undefined;
    await this.#running;
  }
}
