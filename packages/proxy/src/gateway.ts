// Assembles a standalone gateway: config file -> snapshot -> runtime, the admin server and
// the file watcher. Used by the CLI and by tests that run a proxy in-process.
import { parseDuration, requireHostPort, type ProxySnapshot } from '@tollgate/api';
import type { DestinationStream } from 'pino';
import { AdminServer } from './admin/admin-server.js';
import { loadConfigFile, parseConfig, type LoadedConfig } from './config/load-file.js';
import { ConfigWatcher } from './config/watch.js';
import { LogControl } from './log/logger.js';
import { DEFAULT_CLIENT_TIMEOUTS, ProxyRuntime } from './server/runtime.js';
import { DEFAULT_PATH_SETTINGS } from './pipeline/request-target.js';
import { OpsServer } from './server/ops-server.js';
import type { Clock } from './ratelimit/clock.js';

export interface GatewayOptions {
  readonly file: string;
  /** Overrides config.adminAddr (tests use 127.0.0.1:0). */
  readonly adminAddr?: string;
  /** Overrides config.metricsAddr. */
  readonly metricsAddr?: string;
  /** Overrides config.readinessAddr. */
  readonly readinessAddr?: string;
  /** Time source of the rate limiters (tests move time instead of waiting). */
  readonly clock?: Clock;
  /** Keepalive interval of waiting trace streams (default 5 s). */
  readonly traceKeepaliveMs?: number;
  readonly logDestination?: DestinationStream;
  readonly watch?: boolean;
}

export class Gateway {
  #closing: Promise<void> | null = null;
  private constructor(
    readonly logs: LogControl,
    readonly runtime: ProxyRuntime,
    readonly admin: AdminServer,
    readonly watcher: ConfigWatcher | null,
    public loaded: LoadedConfig,
    readonly ops: { readonly metrics: OpsServer; readonly readiness: OpsServer },
  ) {}

  /** Called when something other than a signal asks the process to stop (POST /quitquitquit). */
  onShutdownRequest: (reason: string) => void = () => void this.close();

  static async start(options: GatewayOptions): Promise<Gateway> {
    const loaded = await loadConfigFile(options.file);
    const settings = loaded.config.config ?? {};
    const logs = new LogControl(settings.logLevel ?? 'info', options.logDestination);
    const log = logs.get('proxy');
    const runtime = new ProxyRuntime({
      connectTimeoutMs: parseDuration(settings.connectTimeout ?? '5s'),
      backendRequestTimeoutMs: parseDuration(settings.backendRequestTimeout ?? '60s'),
      drainTimeoutMs: parseDuration(settings.drainTimeout ?? '30s'),
      maxTraceSessions: settings.maxTraceSessions ?? 32,
      paths: { ...DEFAULT_PATH_SETTINGS, ...settings.paths },
      maxSseLineBytes: settings.maxSseLineBytes,
      maxRequestBodyBytes: settings.maxRequestBodyBytes,
      clientTimeouts: {
        requestHeadersMs: settings.requestHeadersTimeout ? parseDuration(settings.requestHeadersTimeout) : DEFAULT_CLIENT_TIMEOUTS.requestHeadersMs,
        requestBodyIdleMs: settings.requestBodyIdleTimeout ? parseDuration(settings.requestBodyIdleTimeout) : DEFAULT_CLIENT_TIMEOUTS.requestBodyIdleMs,
        keepAliveMs: settings.keepAliveTimeout ? parseDuration(settings.keepAliveTimeout) : DEFAULT_CLIENT_TIMEOUTS.keepAliveMs,
      },
      maxModelLabels: settings.maxModelLabels,
      log,
      rateLimitLog: logs.get('ratelimit'),
      clock: options.clock,
    });
    const metricsAddr = requireHostPort(options.metricsAddr ?? settings.metricsAddr ?? '0.0.0.0:15020', 'metricsAddr', { ephemeralPort: true });
    const readinessAddr = requireHostPort(options.readinessAddr ?? settings.readinessAddr ?? '0.0.0.0:15021', 'readinessAddr', { ephemeralPort: true });
    const metrics = new OpsServer('metrics', metricsAddr.host, metricsAddr.port, async (path) =>
      path === '/metrics'
        ? { status: 200, type: runtime.metrics.registry.contentType, body: await runtime.metrics.registry.metrics() }
        : { status: 404, type: 'text/plain', body: 'metrics are at /metrics\n' },
    );
    const readiness = new OpsServer('readiness', readinessAddr.host, readinessAddr.port, async (path) => {
      if (path !== '/healthz/ready') return { status: 404, type: 'text/plain', body: 'readiness is at /healthz/ready\n' };
      const services = runtime.rateLimitServices.readiness();
      const ready = runtime.hasConfig && !runtime.draining && services.ready;
      const why = runtime.draining ? 'draining\n' : !runtime.hasConfig ? 'no config loaded\n' : `waiting for rate limit service ${services.waiting.join(', ')}\n`;
      return { status: ready ? 200 : 503, type: 'text/plain', body: ready ? 'ready\n' : why };
    });
    const adminAddr = requireHostPort(options.adminAddr ?? settings.adminAddr ?? '127.0.0.1:15000', 'adminAddr', { ephemeralPort: true });
    const holder: { gateway?: Gateway } = {};
    const admin = new AdminServer(adminAddr.host, adminAddr.port, {
      runtime,
      logs,
      tasks: () => {
        const w = holder.gateway?.watcher;
        return w ? [{ name: 'config watcher', state: () => ({ file: w.options.path, reloads: w.reloads, refused: w.refused, lastError: w.lastError }) }] : [];
      },
      shutdown: (reason) => holder.gateway?.onShutdownRequest(reason),
      allowedHosts: settings.adminAllowedHosts,
      traceKeepaliveMs: options.traceKeepaliveMs,
    });
    const opened: { close(): Promise<void> }[] = [];
    try {
      const address = await admin.listen();
      opened.push(admin);
      logs.get('admin').info({ admin: address }, `admin listening on http://${address}`);
      const m = await metrics.listen();
      opened.push(metrics);
      const r = await readiness.listen();
      opened.push(readiness);
      log.info({ metrics: m, readiness: r }, `metrics on http://${m}/metrics, readiness on http://${r}/healthz/ready`);
      await runtime.apply(loaded.snapshot);
    } catch (err) {
      await Promise.allSettled(opened.map((o) => o.close()));
      throw err;
    }
    log.info({ version: loaded.snapshot.version, source: loaded.path }, `serving config ${loaded.snapshot.version} from ${loaded.path}`);
    // The watcher and admin callbacks need the gateway, which needs them: `holder` breaks the cycle.
    const watcher =
      options.watch === false
        ? null
        : new ConfigWatcher({
            path: loaded.path,
            initialText: loaded.text,
            log: logs.get('config'),
            onChange: async (text) => {
              const next = parseConfig(loaded.path, text);
              await runtime.apply(next.snapshot);
              if (JSON.stringify(next.config.config ?? {}) !== JSON.stringify(holder.gateway!.loaded.config.config ?? {})) {
                logs.get('config').warn('process settings (config.*) changed; they take effect at the next restart');
              }
              holder.gateway!.loaded = next;
              logs.get('config').info({ version: next.snapshot.version }, `config reloaded: now serving ${next.snapshot.version}`);
            },
          });
    const gateway = new Gateway(logs, runtime, admin, watcher, loaded, { metrics, readiness });
    holder.gateway = gateway;
    watcher?.start();
    return gateway;
  }

  get snapshot(): ProxySnapshot {
    return this.runtime.current.ir;
  }

  /** Graceful stop: no new connections, in-flight requests drain (up to config.drainTimeout). */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      this.watcher?.stop();
      await this.runtime.close();
      await Promise.allSettled([this.admin.close(), this.ops.metrics.close(), this.ops.readiness.close()]);
      this.logs.flush();
    })();
    return this.#closing;
  }
}
