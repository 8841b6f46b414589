// The controller's loggers: one pino root, one child per component, each with its own level.
// Components are the ones `gwctl controller log` and the chart's `controller.logLevels` name;
// `default` is the level of loggers that belong to no other component. Levels change at
// runtime through the admin API (/logging) and take effect at once.
import { pino, type DestinationStream, type Logger } from 'pino';

export const COMPONENTS = ['tollgate/syncer', 'tollgate/translator', 'gateway-controller', 'deployer', 'default'] as const;
export type Component = (typeof COMPONENTS)[number];

export const LEVELS = ['error', 'warn', 'info', 'debug', 'trace'] as const;
export type Level = (typeof LEVELS)[number];

export function isLevel(s: string): s is Level {
  return (LEVELS as readonly string[]).includes(s);
}

export function isComponent(s: string): s is Component {
  return (COMPONENTS as readonly string[]).includes(s);
}

// Credentials that could appear in a logged object (a request to the API server, a kubeconfig
// user). Values are replaced, never the keys, so a log line still says what was there.
const REDACT_PATHS = [
  'headers.authorization',
  'headers.Authorization',
  'headers.cookie',
  'token',
  'bearerToken',
  'user.token',
  'user.password',
  'err.config.headers.authorization',
];

export class LevelError extends Error {
  override readonly name = 'LevelError';
}

/**
 * Parses `--log-level`: a bare level for every component, `<component>=<level>` entries, or
 * both (`info,tollgate/syncer=debug`). Strict: a typo is an error naming the bad part.
 */
export function parseLevels(text: string): Record<Component, Level> {
  const out = Object.fromEntries(COMPONENTS.map((c) => [c, 'info'])) as Record<Component, Level>;
  let global: Level | undefined;
  const explicit = new Map<Component, Level>();
  for (const raw of text.split(',')) {
    const part = raw.trim();
    if (!part) throw new LevelError(`empty entry in "${text}"; expected a level or <component>=<level>`);
    const eq = part.lastIndexOf('=');
    if (eq < 0) {
      if (!isLevel(part)) throw new LevelError(`"${part}" is not a level; levels: ${LEVELS.join(', ')}`);
      if (global !== undefined) throw new LevelError(`more than one bare level in "${text}"`);
      global = part;
      continue;
    }
    const component = part.slice(0, eq);
    const level = part.slice(eq + 1);
    if (!isComponent(component)) throw new LevelError(`unknown component "${component}"; components: ${COMPONENTS.join(', ')}`);
    if (!isLevel(level)) throw new LevelError(`"${level}" is not a level for ${component}; levels: ${LEVELS.join(', ')}`);
    explicit.set(component, level);
  }
  for (const c of COMPONENTS) out[c] = explicit.get(c) ?? global ?? 'info';
  return out;
}

export class Logs {
  readonly root: Logger;
  readonly #children = new Map<Component, Logger>();

  constructor(levels: Record<Component, Level>, destination?: DestinationStream) {
    this.root = pino(
      {
        level: 'trace',
        base: { pid: process.pid },
        redact: { paths: REDACT_PATHS, censor: '[redacted]' },
        timestamp: pino.stdTimeFunctions.isoTime,
        formatters: { level: (label) => ({ level: label }) },
      },
      destination ?? pino.destination({ dest: 1, sync: false }),
    );
    for (const c of COMPONENTS) this.#children.set(c, this.root.child({ component: c }, { level: levels[c] }));
  }

  get(component: Component): Logger {
    return this.#children.get(component)!;
  }

  levels(): Record<Component, Level> {
    return Object.fromEntries(COMPONENTS.map((c) => [c, this.get(c).level as Level])) as Record<Component, Level>;
  }

  readonly components: readonly Component[] = COMPONENTS;

  setAll(level: Level): void {
    for (const c of COMPONENTS) this.get(c).level = level;
  }

  setOne(component: Component, level: Level): void {
    this.get(component).level = level;
  }

  flush(): void {
    this.root.flush();
  }
}
