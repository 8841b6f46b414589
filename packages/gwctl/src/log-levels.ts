// Log levels and `<module>=<level>` arguments shared by `log` and `controller log`.
import { usage } from './errors.js';

export const LEVELS = ['error', 'warn', 'info', 'debug', 'trace'] as const;
export type Level = (typeof LEVELS)[number];

export function parseLevel(value: string, flag: string): Level {
  const v = value.toLowerCase();
  if (!(LEVELS as readonly string[]).includes(v)) throw usage(`${flag} must be one of ${LEVELS.join(', ')}, got '${value}'`);
  return v as Level;
}

export function parseSet(value: string): { name: string; level: Level } {
  const i = value.lastIndexOf('=');
  if (i <= 0) throw usage(`--set needs <name>=<level>, got '${value}'`);
  return { name: value.slice(0, i), level: parseLevel(value.slice(i + 1), `--set ${value.slice(0, i)}`) };
}
