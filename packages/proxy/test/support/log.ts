// A pino logger whose lines are kept as objects, for tests that assert on what was logged.
import { pino, type Logger } from 'pino';

export interface LogLine {
  level: number;
  msg: string;
  [k: string]: unknown;
}

export function captureLog(): { log: Logger; lines: LogLine[] } {
  const lines: LogLine[] = [];
  const log = pino({ level: 'debug' }, { write: (s: string) => void lines.push(JSON.parse(s) as LogLine) });
  return { log, lines };
}
