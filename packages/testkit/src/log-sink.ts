// Log capture: a pino destination that keeps each JSON line as an object, and can be awaited
// until a line matching a predicate arrives.
import { Writable } from 'node:stream';
import { pino, type Logger } from 'pino';

export interface LogLine {
  level: number | string;
  msg: string;
  [k: string]: unknown;
}

export class LogSink extends Writable {
  readonly lines: LogLine[] = [];
  readonly #waiters: { match: (l: LogLine) => boolean; resolve: (l: LogLine) => void }[] = [];

  override _write(chunk: Buffer, _enc: string, cb: () => void): void {
    for (const text of chunk.toString().split('\n')) {
      if (!text.trim()) continue;
      const line = JSON.parse(text) as LogLine;
      this.lines.push(line);
      for (const w of this.#waiters.splice(0)) {
        if (w.match(line)) w.resolve(line);
        else this.#waiters.push(w);
      }
    }
    cb();
  }

  messages(): string[] {
    return this.lines.map((l) => String(l.msg));
  }

  /** The first line (already written or still to come) that `match` accepts. */
  waitFor(match: (line: LogLine) => boolean): Promise<LogLine> {
    const seen = this.lines.find(match);
    if (seen) return Promise.resolve(seen);
    return new Promise((resolve) => this.#waiters.push({ match, resolve }));
  }
}

/** A pino logger at `level` whose lines are kept as objects. */
export function captureLog(level: pino.LevelWithSilent = 'debug'): { log: Logger; lines: LogLine[] } {
  const lines: LogLine[] = [];
  const log = pino({ level }, { write: (s: string) => void lines.push(JSON.parse(s) as LogLine) });
  return { log, lines };
}
