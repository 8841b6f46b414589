// One pino root logger, a child per module. Each child has its own level, computed from the
// current directive, and `apply()` re-levels every child at once when the directive changes.
// Redaction paths are declared here once: credentials never reach a log line.
import { pino, type Logger, type DestinationStream } from 'pino';
import { formatDirective, parseDirective, type Directive } from './directive.js';

/** The proxy's named loggers (the `<module>` of a directive). */
export const MODULES = ['proxy', 'config', 'routing', 'upstream', 'admin', 'ratelimit', 'trace'] as const;
export type Module = (typeof MODULES)[number];

const REDACT_PATHS = [
  'headers.authorization',
  'headers.cookie',
  'headers["set-cookie"]',
  'headers["proxy-authorization"]',
  'headers["x-api-key"]',
  'headers["api-key"]',
  'req.headers.authorization',
  'req.headers.cookie',
  'req.headers["x-api-key"]',
  'res.headers["set-cookie"]',
];

export class LogControl {
  readonly root: Logger;
  readonly #children = new Map<Module, Logger>();
  readonly #startup: Directive;
  #current: Directive;

  constructor(startupDirective: string, destination?: DestinationStream) {
    this.#startup = parseDirective(startupDirective, MODULES);
    this.#current = this.#startup;
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
    for (const m of MODULES) this.#children.set(m, this.root.child({ module: m }, { level: this.levelOf(m) }));
  }

  get(module: Module): Logger {
    return this.#children.get(module)!;
  }

  levelOf(module: Module): string {
    return this.#current.modules.get(module) ?? this.#current.level;
  }

  get directive(): string {
    return formatDirective(this.#current);
  }

  /** Applies a directive; a bare level keeps the module entries. Throws DirectiveError. */
  set(text: string): string {
    this.#apply(parseDirective(text, MODULES, this.#current));
    return this.directive;
  }

  reset(): string {
    this.#apply(this.#startup);
    return this.directive;
  }

  #apply(d: Directive): void {
    this.#current = d;
    for (const [m, child] of this.#children) child.level = this.levelOf(m);
  }

  flush(): void {
    this.root.flush();
  }
}
