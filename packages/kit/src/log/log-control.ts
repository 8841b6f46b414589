// One pino root logger with a child per component. Each child has its own level, computed from
// the current directive, and a change re-levels every child at once. Redaction is set up here
// from the shared list, so no caller can forget it. Generic over the component names: the
// proxy passes its modules, the controller its components.
import { type LogLevel } from '@tollgate/api';
import { pino, type DestinationStream, type Logger } from 'pino';
import { formatDirective, parseDirective, type Directive } from './directive.js';
import { REDACT_CENSOR, redactPaths, urlSerializers } from './redact.js';

export interface LogControlOptions<C extends string> {
  /** The named loggers; each gets a child logger. */
  readonly components: readonly C[];
  /** Start-up directive, e.g. "info" or "warn,upstream=debug" (throws DirectiveError when bad). */
  readonly directive?: string;
  /** Where lines go; default stdout, asynchronously. */
  readonly destination?: DestinationStream;
  /** The field that names the component on each line; default "module". */
  readonly componentKey?: string;
  /** Fields on every line besides pid (a worker thread's `worker`). */
  readonly bindings?: Readonly<Record<string, string | number>>;
}

export class LogControl<C extends string> {
  readonly root: Logger;
  readonly components: readonly C[];
  readonly #children = new Map<C, Logger>();
  readonly #startup: Directive<C>;
  #current: Directive<C>;

  constructor(options: LogControlOptions<C>) {
    this.components = options.components;
    this.#startup = parseDirective(options.directive ?? 'info', options.components);
    this.#current = this.#startup;
    this.root = pino(
      {
        level: 'trace',
        base: { pid: process.pid, ...options.bindings },
        redact: { paths: redactPaths(), censor: REDACT_CENSOR },
        serializers: urlSerializers,
        timestamp: pino.stdTimeFunctions.isoTime,
        formatters: { level: (label) => ({ level: label }) },
      },
      options.destination ?? pino.destination({ dest: 1, sync: false }),
    );
    const key = options.componentKey ?? 'module';
    for (const c of options.components) this.#children.set(c, this.root.child({ [key]: c }, { level: this.levelOf(c) }));
  }

  get(component: C): Logger {
    return this.#children.get(component)!;
  }

  levelOf(component: C): LogLevel {
    return this.#current.modules.get(component) ?? this.#current.level;
  }

  /** Every component's level. */
  levels(): Record<C, LogLevel> {
    return Object.fromEntries(this.components.map((c) => [c, this.levelOf(c)])) as Record<C, LogLevel>;
  }

  get directive(): string {
    return formatDirective(this.#current);
  }

  /** Applies a directive; a bare level keeps the component entries. Throws DirectiveError. */
  set(text: string): string {
    this.#apply(parseDirective(text, this.components, this.#current));
    return this.directive;
  }

  /** Every component to `level`, dropping per-component entries. */
  setAll(level: LogLevel): void {
    this.#apply({ level, modules: new Map() });
  }

  /** One component to `level`. */
  setOne(component: C, level: LogLevel): void {
    const modules = new Map(this.#current.modules);
    modules.set(component, level);
    this.#apply({ level: this.#current.level, modules });
  }

  reset(): string {
    this.#apply(this.#startup);
    return this.directive;
  }

  #apply(d: Directive<C>): void {
    this.#current = d;
    for (const [c, child] of this.#children) child.level = this.levelOf(c);
  }

  flush(): void {
    this.root.flush();
  }
}
