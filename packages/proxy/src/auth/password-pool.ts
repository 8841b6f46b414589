// The password workers: a few threads that run the hash verifications (password-worker.ts),
// and a bounded queue in front of them. A verification that finds every worker busy and the
// queue full is not started: the caller answers 503 busy at once, so a stream of wrong guesses
// costs the proxy at most `workers` cores and `maxQueue` waiting requests, never its event
// loop. Threads start with the first verification (a proxy without basicAuth starts none) and
// one that dies is replaced by the next verification that needs it.
import { Worker } from 'node:worker_threads';
import type { Logger } from 'pino';
import type { HashScheme } from './password-hashes.js';
import type { VerifyAnswer, VerifyRequest } from './password-worker.js';

export type VerifyOutcome = 'match' | 'mismatch' | 'busy' | 'failed';

export interface PasswordPoolOptions {
  /** Threads verifying at once. */
  readonly workers: number;
  /** Verifications that may wait for a thread; one more is refused as busy. */
  readonly maxQueue: number;
  readonly log: Logger;
}

interface Job {
  readonly request: Omit<VerifyRequest, 'id'>;
  readonly done: (o: VerifyOutcome) => void;
}

interface Slot {
  readonly worker: Worker;
  job: (Job & { readonly id: number }) | null;
}

const WORKER_URL = new URL(import.meta.url.endsWith('.ts') ? './password-worker.ts' : './password-worker.js', import.meta.url);

export class PasswordPool {
  readonly #slots: Slot[] = [];
  readonly #queue: Job[] = [];
  #nextId = 1;
  #holds = 0;
  #closed = false;

  constructor(readonly options: PasswordPoolOptions) {}

  /** Verifications waiting for a thread now. */
  get queued(): number {
    return this.#queue.length;
  }

  verify(scheme: HashScheme, hash: string, password: string): Promise<VerifyOutcome> {
    if (this.#closed) return Promise.resolve('failed');
    // The queue holds jobs only while no thread is free, so a job that cannot start now waits.
    const startsNow = this.#holds === 0 && (this.#slots.length < this.options.workers || this.#slots.some((s) => s.job === null));
    if (!startsNow && this.#queue.length >= this.options.maxQueue) return Promise.resolve('busy');
    return new Promise((done) => {
      this.#queue.push({ request: { scheme, hash, password }, done });
      this.#dispatch();
    });
  }

  /**
   * Starts no verification until the returned function is called; the queue fills meanwhile.
   * What a saturated pool does (tests fill the queue with it, where real hashes would finish at
   * a time no test can know).
   */
  hold(): () => void {
    this.#holds++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#holds--;
      this.#dispatch();
    };
  }

  async close(): Promise<void> {
    this.#closed = true;
    for (const job of this.#queue.splice(0)) job.done('failed');
    const slots = this.#slots.splice(0);
    for (const s of slots) s.job?.done('failed');
    await Promise.allSettled(slots.map((s) => s.worker.terminate()));
  }

  #dispatch(): void {
    while (this.#holds === 0 && this.#queue.length) {
      const slot = this.#slots.find((s) => s.job === null) ?? (this.#slots.length < this.options.workers ? this.#start() : undefined);
      if (!slot) return;
      const job = { ...this.#queue.shift()!, id: this.#nextId++ };
      slot.job = job;
      slot.worker.postMessage({ id: job.id, ...job.request } satisfies VerifyRequest);
    }
  }

  #start(): Slot {
    const worker = new Worker(WORKER_URL, { name: 'tollgate-password' });
    // A worker never keeps the process alive: close() ends them, and a process that exits
    // without it has no verification anyone waits for.
    worker.unref();
    const slot: Slot = { worker, job: null };
    this.#slots.push(slot);
    worker.on('message', (a: VerifyAnswer) => {
      const job = slot.job;
      if (!job || job.id !== a.id) return;
      slot.job = null;
      if (a.match === null) this.options.log.error('a password verification failed in its worker; the request is answered 503');
      job.done(a.match === null ? 'failed' : a.match ? 'match' : 'mismatch');
      this.#dispatch();
    });
    const gone = (err?: Error) => {
      const i = this.#slots.indexOf(slot);
      if (i < 0) return;
      this.#slots.splice(i, 1);
      if (!this.#closed) this.options.log.error({ err }, 'a password worker stopped; the next verification starts another');
      slot.job?.done('failed');
      slot.job = null;
      this.#dispatch();
    };
    worker.on('error', gone);
    worker.on('exit', () => gone());
    return slot;
  }
}
