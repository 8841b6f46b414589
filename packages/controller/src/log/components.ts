// The controller's log components: the names `gwctl controller log`, the chart's
// `controller.logLevels` and `--log-level` use. One pino child logger each, with its own
// level (kit's LogControl, shared with the proxy, also applies the one redaction list).
// `default` is the level of loggers that belong to no other component.
import { LogControl, parseDirective } from '@tollgate/kit';
import type { DestinationStream } from 'pino';

export const COMPONENTS = ['tollgate/syncer', 'tollgate/translator', 'gateway-controller', 'deployer', 'default'] as const;
export type Component = (typeof COMPONENTS)[number];

export type Logs = LogControl<Component>;

/** Throws kit's DirectiveError naming the bad part. */
export function checkDirective(text: string): void {
  parseDirective(text, COMPONENTS);
}

export function createLogs(directive: string, destination?: DestinationStream): Logs {
  return new LogControl({ components: COMPONENTS, directive, destination, componentKey: 'component' });
}
