// Waiting on something that happens, never on a fixed time: `until` polls a condition (and
// yields to the event loop between tries) until it holds or a deadline passes, `nextEvent`
// awaits one emission. The deadline only bounds a broken test; a passing one never waits it.
import { once, type EventEmitter } from 'node:events';
import { setImmediate as immediate, setTimeout as delay } from 'node:timers/promises';

export interface UntilOptions {
  /** Give up after this long (default 10 s); the error names `what`. */
  readonly timeoutMs?: number;
  /** Pause between tries once the first few immediate retries failed (default 10 ms). */
  readonly intervalMs?: number;
  /** Said in the timeout error: what was awaited. */
  readonly what?: string;
}

/** Resolves with the first truthy value of `probe`; rejects after the deadline. */
export async function until<T>(probe: () => T | Promise<T>, options: UntilOptions = {}): Promise<NonNullable<T>> {
  const deadline = Date.now() + (options.timeoutMs ?? 10_000);
  let last: unknown;
  for (let attempt = 0; ; attempt++) {
    try {
      const value = await probe();
      if (value) return value;
      last = undefined;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) {
      const why = last instanceof Error ? `: last try failed with ${last.message}` : '';
      throw new Error(`timed out after ${options.timeoutMs ?? 10_000} ms waiting for ${options.what ?? 'a condition'}${why}`);
    }
    // A few turns of the event loop first: most conditions are one I/O callback away.
    if (attempt < 5) await immediate();
    else await delay(options.intervalMs ?? 10);
  }
}

/** Resolves with the arguments of the next `event` on `emitter`; rejects after the deadline. */
export async function nextEvent(emitter: EventEmitter, event: string, options: Omit<UntilOptions, 'intervalMs'> = {}): Promise<unknown[]> {
  const timeoutMs = options.timeoutMs ?? 10_000;
  const signal = AbortSignal.timeout(timeoutMs);
  try {
    return (await once(emitter, event, { signal })) as unknown[];
  } catch (err) {
    if (signal.aborted) throw new Error(`timed out after ${timeoutMs} ms waiting for ${options.what ?? `the "${event}" event`}`, { cause: err });
    throw err;
  }
}

/** A promise with its resolve function outside, for handlers that signal a test. */
export function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void; reject: (err: unknown) => void } {
  let resolve!: (value: T) => void;
  let reject!: (err: unknown) => void;
  const promise = new Promise<T>((res, rej) => ((resolve = res), (reject = rej)));
  return { promise, resolve, reject };
}
