// The proxy's named loggers: one pino root, a child per module with its own level, and the
// shared redaction list applied (all set up by @tollgate/kit's LogControl).
import { LogControl as KitLogControl } from '@tollgate/kit';
import type { DestinationStream } from 'pino';

/** The proxy's named loggers (the `<module>` of a directive). */
export const MODULES = ['proxy', 'config', 'routing', 'upstream', 'admin', 'ratelimit', 'auth', 'trace'] as const;
export type Module = (typeof MODULES)[number];

export class LogControl extends KitLogControl<Module> {
  /** Throws DirectiveError when the start-up directive is bad. */
  constructor(startupDirective: string, destination?: DestinationStream, bindings?: Readonly<Record<string, string | number>>) {
    super({ components: MODULES, directive: startupDirective, destination, componentKey: 'module', bindings });
  }
}
