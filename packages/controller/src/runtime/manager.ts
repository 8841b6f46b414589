// Starts runnables in order and stops them in reverse. Leader-only runnables follow the
// elector: started on election, stopped the moment leadership is lost (before any other
// work), started again if it is won back.
import type { Logger } from 'pino';
import type { Runnable } from './runnable.js';

export interface LeadershipSource {
  isLeader(): boolean;
  onChange(listener: (leader: boolean) => void): void;
}

export class Manager {
  readonly #always: Runnable[] = [];
  readonly #leaderOnly: Runnable[] = [];
  readonly #started: Runnable[] = [];
  #leaderRunning = false;
  #leaderTransition: Promise<void> = Promise.resolve();
  #stopping = false;

  constructor(
    private readonly log: Logger,
    private readonly leadership: LeadershipSource,
  ) {}

  add(r: Runnable): void {
    (r.needsLeader ? this.#leaderOnly : this.#always).push(r);
  }

  /** Starts every runnable; a failure stops what was started and rethrows. */
  async start(): Promise<void> {
    try {
      for (const r of this.#always) {
        await r.start();
        this.#started.push(r);
      }
    } catch (err) {
      await this.stop();
      throw err;
    }
    this.leadership.onChange((leader) => {
      this.#leaderTransition = this.#leaderTransition.then(() => (leader ? this.#startLeader() : this.#stopLeader()));
    });
    if (this.leadership.isLeader()) this.#leaderTransition = this.#leaderTransition.then(() => this.#startLeader());
    await this.#leaderTransition;
  }

  async #startLeader(): Promise<void> {
    if (this.#leaderRunning || this.#stopping) return;
    this.#leaderRunning = true;
    for (const r of this.#leaderOnly) {
      try {
        await r.start();
        this.log.info({ runnable: r.name }, 'started (leader)');
      } catch (err) {
        this.log.error({ runnable: r.name, err }, 'leader runnable failed to start');
      }
    }
  }

  async #stopLeader(): Promise<void> {
    if (!this.#leaderRunning) return;
    this.#leaderRunning = false;
    for (const r of [...this.#leaderOnly].reverse()) {
      await r.stop().catch((err: unknown) => this.log.error({ runnable: r.name, err }, 'stop failed'));
    }
  }

  async stop(): Promise<void> {
    this.#stopping = true;
    await this.#leaderTransition;
    await this.#stopLeader();
    for (const r of this.#started.splice(0).reverse()) {
      await r.stop().catch((err: unknown) => this.log.error({ runnable: r.name, err }, 'stop failed'));
    }
  }
}
