// Log directives: a global level alone ("info"), or a comma-separated list mixing at most one
// bare level with `<component>=<level>` entries ("warn,upstream=debug"). Parsing is strict so
// a typo is an error naming the bad part, never a silently ignored setting. The component
// names are the caller's (the proxy's modules, the controller's components).
import { LOG_LEVELS, type LogLevel } from '@tollgate/api';

export interface Directive<C extends string = string> {
  readonly level: LogLevel;
  readonly modules: ReadonlyMap<C, LogLevel>;
}

export class DirectiveError extends Error {
  constructor(
    readonly part: string,
    message: string,
  ) {
    super(message);
    this.name = 'DirectiveError';
  }
}

export function isLevel(s: string): s is LogLevel {
  return (LOG_LEVELS as readonly string[]).includes(s);
}

/** Parses `text` over `base` (a bare level keeps base's component entries). Throws DirectiveError. */
export function parseDirective<C extends string>(text: string, known: readonly C[], base?: Directive<C>): Directive<C> {
  const parts = text.split(',').map((p) => p.trim());
  let level: LogLevel | undefined;
  const modules = new Map<C, LogLevel>(base?.modules ?? []);
  for (const part of parts) {
    if (!part) throw new DirectiveError(part, `empty entry in "${text}"; expected a level or <module>=<level>`);
    const eq = part.indexOf('=');
    if (eq < 0) {
      if (!isLevel(part)) throw new DirectiveError(part, `"${part}" is not a level; expected one of ${LOG_LEVELS.join(', ')}`);
      if (level !== undefined) throw new DirectiveError(part, `more than one global level in "${text}"`);
      level = part;
      continue;
    }
    const mod = part.slice(0, eq);
    const lvl = part.slice(eq + 1);
    if (!(known as readonly string[]).includes(mod)) {
      throw new DirectiveError(part, `unknown module "${mod}"; expected one of ${known.join(', ')}`);
    }
    if (!isLevel(lvl)) throw new DirectiveError(part, `"${lvl}" is not a level for ${mod}; expected one of ${LOG_LEVELS.join(', ')}`);
    modules.set(mod as C, lvl);
  }
  return { level: level ?? base?.level ?? 'info', modules };
}

export function formatDirective(d: Directive): string {
  return [d.level, ...[...d.modules].sort(([a], [b]) => a.localeCompare(b)).map(([m, l]) => `${m}=${l}`)].join(',');
}
