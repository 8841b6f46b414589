// The state the trace UI renders, fed by the trace session from outside React.
import type { TraceEvent } from '@tollgate/api';

export type Phase = 'arming' | 'waiting' | 'receiving' | 'done' | 'failed';

export interface TraceView {
  readonly phase: Phase;
  readonly events: readonly TraceEvent[];
  /** The status line: what gwctl is waiting for, or what went wrong. */
  readonly status: string;
}

export class TraceStore {
  #state: TraceView;
  readonly #listeners = new Set<() => void>();

  constructor(initial: Partial<TraceView> = {}) {
    this.#state = { phase: 'arming', events: [], status: 'Arming the trace…', ...initial };
  }

  readonly get = (): TraceView => this.#state;

  readonly subscribe = (fn: () => void): (() => void) => {
    this.#listeners.add(fn);
    return () => this.#listeners.delete(fn);
  };

  update(patch: Partial<TraceView>): void {
    this.#state = { ...this.#state, ...patch };
    for (const fn of this.#listeners) fn();
  }

  push(event: TraceEvent): void {
    const events = [...this.#state.events, event];
    if (event.message.type === 'requestFinished') this.update({ events, phase: 'done', status: `Traced ${events.length} events` });
    else this.update({ events, phase: 'receiving' });
  }
}
