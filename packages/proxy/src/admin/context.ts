// What the admin routes read and control.
import type { LogControl } from '../log/logger.js';
import type { ProxyRuntime } from '../server/runtime.js';
import type { WorkerThreads } from '../server/thread-figures.js';

export interface BackgroundTask {
  readonly name: string;
  readonly state: () => Record<string, unknown>;
}

export interface AdminContext {
  readonly runtime: ProxyRuntime;
  readonly logs: LogControl;
  /** Long-lived work besides requests (config watcher, later the controller stream). */
  readonly tasks: () => BackgroundTask[];
  /** How the config arrives: the snapshot source's state (file or controller stream), for /config_dump. */
  readonly delivery?: () => Record<string, unknown>;
  /** Starts a graceful shutdown; the admin server answers before it takes effect. */
  readonly shutdown: (reason: string) => void;
  /** Host names besides loopback the admin server answers (config.adminAllowedHosts). */
  readonly allowedHosts?: readonly string[];
  /** Interval of the keepalive comment on a waiting trace stream; default 5000 ms. */
  readonly traceKeepaliveMs?: number;
  /** The worker threads besides the main thread (config.workers above 1), else null. */
  readonly workers?: WorkerThreads | null;
}
