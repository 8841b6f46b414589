// One work queue for the whole controller: every watch event marks the world dirty and the
// queue runs the reconcile (translate everything, hand out snapshots and status).
//
// Leading edge: in a quiet cluster a change is reconciled at once. After each run the queue
// cools down for as long as the run took (at least `minDelayMs`, at most `maxDelayMs`);
// changes that arrive meanwhile are coalesced into one run at the end of the cool-down.
//
// No fixed floor by default: a floor longer than a run (100 ms was one) holds a change that
// comes right after a quick run (the next route of a user applying them one by one, once the
// previous one serves) for the whole floor, which is most of its propagation time. A burst
// still coalesces: the watch events that arrive while a run holds the event loop, or during
// the cool-down of the same length after it, make one run.
//
// Why the cool-down follows the cost of a run: it bounds the controller's busy share to about
// half its time however fast changes arrive (a burst of 1,000 applies costs runs in proportion
// to its duration divided by the cost of one run, not one run per change), while a change is
// never kept waiting longer than about two runs. A cool-down that grows with the burst instead
// would let a steady trickle of edits (a user applying routes one by one, an autoscaler moving
// endpoints) hold every later change for the whole cap.
export interface DebounceOptions {
  /** Shortest cool-down after a run (default 0: as long as the run took). */
  readonly minDelayMs?: number;
  /** Longest cool-down, for runs slower than this (default 2 s). */
  readonly maxDelayMs?: number;
}

export type QueueState = 'idle' | 'running' | 'cooling' | 'stopped';

export class DebouncedQueue {
  readonly #work: () => Promise<void> | void;
  readonly #min: number;
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
    this.#min = opts.minDelayMs ?? 0;
    this.#max = Math.max(this.#min, opts.maxDelayMs ?? 2_000);
    this.#delay = this.#min;
  }

  get state(): QueueState {
    return this.#state;
  }

  /** Changes seen and not yet reconciled. */
  get depth(): number {
    return this.#pending;
  }

  /** The cool-down after the last run. */
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
    const started = Date.now();
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
      this.#delay = Math.min(Math.max(Date.now() - started, this.#min), this.#max);
      this.#timer = setTimeout(() => this.#cooled(), this.#delay);
    });
  }

  #cooled(): void {
    this.#timer = undefined;
    if (this.#state !== 'cooling') return;
    if (this.#pending > 0) this.#run();
    else this.#state = 'idle';
  }

  /** Stops scheduling; waits for a run in progress. */
  async stop(): Promise<void> {
    this.#state = 'stopped';
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = undefined;
    await this.#running;
  }
}
