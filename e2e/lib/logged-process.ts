// A child process whose JSON log lines (stdout, pino) are the event stream tests wait on: each
// line is kept, written to a log file with stderr, and handed to whoever waits for it. The
// controller and the proxies of the e2e suites are both run this way.
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createWriteStream } from 'node:fs';
import { createInterface } from 'node:readline';

export type LogLine = Record<string, unknown> & { msg?: string; component?: string; level?: string };

interface Waiter {
  predicate: (l: LogLine) => boolean;
  resolve: (l: LogLine) => void;
}

const live = new Set<ChildProcess>();
process.once('exit', killLiveProcesses);

/** Kills every logged process still running (the test process is ending). */
export function killLiveProcesses(): void {
  for (const c of live) c.kill('SIGKILL');
}

export class LoggedProcess {
  readonly lines: LogLine[] = [];
  readonly exited: Promise<[number | null, NodeJS.Signals | null]>;
  readonly #waiters = new Set<Waiter>();

  protected constructor(
    readonly name: string,
    readonly child: ChildProcess,
    logFile: string,
  ) {
    live.add(child);
    const out = createWriteStream(logFile);
    child.stderr!.pipe(out);
    createInterface({ input: child.stdout! }).on('line', (text) => {
      out.write(`${text}\n`);
      let line: LogLine;
      try {
        line = JSON.parse(text) as LogLine;
      } catch {
        return;
      }
      this.lines.push(line);
      for (const w of this.#waiters) {
        if (w.predicate(line)) {
          this.#waiters.delete(w);
          w.resolve(line);
        }
      }
    });
    this.exited = once(child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
    void this.exited.then(() => live.delete(child));
  }

  get pid(): number {
    return this.child.pid!;
  }

  /** Resolves with the first line (already logged or to come) that matches. */
  waitForLog(predicate: (l: LogLine) => boolean, timeoutMs = 60_000, fromIndex = 0): Promise<LogLine> {
    const seen = this.lines.slice(fromIndex).find(predicate);
    if (seen) return Promise.resolve(seen);
    return new Promise<LogLine>((resolve, reject) => {
      const w: Waiter = {
        predicate,
        resolve: (l) => {
          clearTimeout(timer);
          resolve(l);
        },
      };
      const tail = () => this.lines.slice(-15).map((l) => JSON.stringify(l)).join('\n');
      const timer = setTimeout(() => {
        this.#waiters.delete(w);
        reject(new Error(`${this.name}: no matching log line within ${timeoutMs} ms; last lines:\n${tail()}`));
      }, timeoutMs);
      this.exited.then(([code, signal]) => {
        if (this.#waiters.delete(w)) {
          clearTimeout(timer);
          reject(new Error(`${this.name} exited (${code ?? signal}) while a test waited on its log:\n${tail()}`));
        }
      }, () => undefined);
      this.#waiters.add(w);
    });
  }

  async stop(signal: NodeJS.Signals = 'SIGTERM'): Promise<[number | null, NodeJS.Signals | null]> {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill(signal);
    return this.exited;
  }
}
