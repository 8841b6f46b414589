// One proxy process: the runtime (data plane), the admin server, the metrics and readiness
// servers, fed by one snapshot source. The source decides where routing config comes from
// (the config file in standalone mode; the controller stream in cluster mode); every
// snapshot, whatever its source, goes through the same apply path, `runtime.apply`.
import { requireHostPort, type ProcessConfig, type ProxySnapshot } from '@tollgate/api';
import type { DestinationStream } from 'pino';
import { AdminServer } from '../admin/admin-server.js';
import { LogControl } from '../log/logger.js';
import type { Clock } from '../ratelimit/clock.js';
import { OpsServer } from '../server/ops-server.js';
import { ProxyRuntime } from '../server/runtime.js';
import { requestsStarted } from '../server/data-plane.js';
import type { SnapshotSource } from '../source/snapshot-source.js';
import { MemoryCompaction, type MemoryCompactionOptions } from './memory-compaction.js';
import { runtimeOptions } from './runtime-options.js';
import { LEADER_BINDS } from '../server/bind-sharing.js';
import { WorkerPool } from './workers/worker-pool.js';
import { SharedState } from './workers/shared-state.js';
import { resolveWorkers, type WorkersChoice } from './workers/worker-count.js';
import { boundPorts, mergedMetrics } from './workers/main-thread.js';
import { appliedV8Defaults } from './v8-defaults.js';

export interface ProxyProcessOptions<S extends SnapshotSource = SnapshotSource> {
  /** Process settings (`config.*` of the config file); fixed for the life of the process. */
  readonly settings: ProcessConfig;
  /** Builds the snapshot source once the loggers exist. */
  readonly source: (logs: LogControl) => S;
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
  /**
   * Run a full garbage collection once the process has been quiet for a moment after each
   * config apply (the `tollgate` command does; in-process tests leave it off).
   */
  readonly compactMemory?: boolean | Omit<MemoryCompactionOptions, 'requests' | 'log'>;
  /** Threads serving requests (overrides config.workers); auto: the CPUs the container may use. */
  readonly workers?: WorkersChoice;
  /**
   * The threads when neither `workers` nor config.workers says: the `tollgate` command passes
   * auto (every CPU the container may use); in-process tests leave it, and serve on one thread.
   */
  readonly defaultWorkers?: WorkersChoice;
}

export class ProxyProcess<S extends SnapshotSource = SnapshotSource> {
  #closing: Promise<void> | null = null;
  private constructor(
    readonly logs: LogControl,
    readonly runtime: ProxyRuntime,
    readonly admin: AdminServer,
    readonly source: S,
    readonly ops: { readonly metrics: OpsServer; readonly readiness: OpsServer },
    readonly compaction: MemoryCompaction | null,
    /** The threads besides the main one (null with one worker). */
    readonly workers: WorkerPool | null,
  ) {}

  /** Called when something other than a signal asks the process to stop (POST /quitquitquit). */
  onShutdownRequest: (reason: string) => void = () => void this.close();

  static async start<S extends SnapshotSource>(options: ProxyProcessOptions<S>): Promise<ProxyProcess<S>> {
    // No closure below names `options`: they would keep it, and through its `source` factory
    // the config the process started with, for the life of the process.
    const { settings, logDestination } = options;
    const logs = new LogControl(settings.logLevel ?? 'info', logDestination);
    const log = logs.get('proxy');
    const workersChoice = resolveWorkers(options.workers ?? settings.workers ?? options.defaultWorkers ?? 1);
    const threads = workersChoice.count;
    // Worker threads read the system clock: a clock given here would be the main thread's alone.
    if (threads > 1 && options.clock) throw new Error('a clock of its own (tests) is for a proxy on one thread: worker threads read the system clock');
    const base = runtimeOptions(settings, logs, options.clock);
    // One thread counts alone; several share their bounds (./workers/shared-state.ts).
    const shared = threads > 1 ? SharedState.create(threads, base) : null;
    const runtime = new ProxyRuntime(shared ? { ...base, ...shared.parts, bindSharing: LEADER_BINDS } : base);
    const workers = shared
      ? new WorkerPool({
          threads: threads - 1,
          settings,
          shared: shared.buffers,
          logDirective: () => logs.directive,
          log,
          registry: runtime.metrics.registry,
          compactMemory: Boolean(options.compactMemory),
          logLine: logDestination ? (line) => logDestination.write(line) : undefined,
          coolDown: (key, c) => runtime.coolDowns.adopt(key, c),
          released: (index) => {
            const r = shared.releaseWorker(index);
            log.info({ worker: index, ...r }, `worker ${index} is gone: gave back what it held (${r.bytes} buffered bytes, ${r.connections} connections, ${r.websockets} WebSocket slots, its token reservations)`);
          },
        })
      : null;
    // The main thread's cool-downs go to the workers (theirs come back through the pool).
    if (workers) runtime.coolDowns.onRecorded = (key, c) => workers.relayCoolDown(key, c, 0);
    const source = options.source(logs);
    const metricsAddr = requireHostPort(options.metricsAddr ?? settings.metricsAddr ?? '0.0.0.0:15020', 'metricsAddr', { ephemeralPort: true });
    const readinessAddr = requireHostPort(options.readinessAddr ?? settings.readinessAddr ?? '0.0.0.0:15021', 'readinessAddr', { ephemeralPort: true });
    const metrics = new OpsServer('metrics', metricsAddr.host, metricsAddr.port, async (path) =>
      path === '/metrics'
        ? { status: 200, type: runtime.metrics.registry.contentType, body: await (workers ? mergedMetrics(runtime.metrics.registry, workers) : runtime.metrics.registry.metrics()) }
        : { status: 404, type: 'text/plain', body: 'metrics are at /metrics\n' },
    );
    const readiness = new OpsServer('readiness', readinessAddr.host, readinessAddr.port, async (path) => {
      if (path !== '/healthz/ready') return { status: 404, type: 'text/plain', body: 'readiness is at /healthz/ready\n' };
      const services = runtime.rateLimitServices.readiness();
      const ready = runtime.hasConfig && !runtime.draining && services.ready && (workers?.applied ?? true);
      const why = runtime.draining ? 'draining\n' : !runtime.hasConfig ? 'no config loaded\n' : `waiting for rate limit service ${services.waiting.join(', ')}\n`;
      return { status: ready ? 200 : 503, type: 'text/plain', body: ready ? 'ready\n' : why };
    });
    const adminAddr = requireHostPort(options.adminAddr ?? settings.adminAddr ?? '127.0.0.1:15000', 'adminAddr', { ephemeralPort: true });
    // The admin callbacks need the process, which needs the admin server: `holder` breaks the cycle.
    const holder: { process?: ProxyProcess<S> } = {};
    const admin = new AdminServer(adminAddr.host, adminAddr.port, {
      runtime,
      logs,
      tasks: () => [{ name: source.name, state: () => ({ ...source.state() }) }, ...(workers ? [{ name: 'workers', state: () => ({ threads: workers.views }) }] : [])],
      workers,
      delivery: () => ({ ...source.state() }),
      shutdown: (reason) => holder.process?.onShutdownRequest(reason),
      allowedHosts: settings.adminAllowedHosts,
      traceKeepaliveMs: options.traceKeepaliveMs,
    });
    const compacting = options.compactMemory;
    const compaction = compacting
      ? new MemoryCompaction({ ...(compacting === true ? {} : compacting), requests: () => ({ started: requestsStarted(), inFlight: runtime.inflight.size }), log })
      : null;
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
      if (workers) {
        await workers.start();
        opened.push(workers);
      }
      const v8Flags = appliedV8Defaults();
      if (v8Flags.length) log.info({ v8Flags }, `V8 flags set by the proxy: ${v8Flags.join(' ')} (the same flag on the node command line, either way, takes precedence)`);
      if (workers || workersChoice.source !== 'set') log.info({ workers: threads, source: workersChoice.source }, `serving on ${threads} thread${threads === 1 ? '' : 's'} (${workersChoice.source})`);
      await source.start({
        apply: async (snapshot) => {
          await runtime.apply(snapshot);
          // Every thread serves the snapshot before the source reports it applied.
          await workers?.apply(snapshot, boundPorts(runtime), runtime.limiters.layout());
          compaction?.schedule();
        },
      });
    } catch (err) {
      compaction?.stop();
      source.stop();
      await runtime.close();
      await Promise.allSettled(opened.map((o) => o.close()));
      throw err;
    }
    const proc = new ProxyProcess(logs, runtime, admin, source, { metrics, readiness }, compaction, workers);
    holder.process = proc;
    return proc;
  }

  /** The snapshot serving now. */
  get snapshot(): ProxySnapshot {
    return this.runtime.current.ir;
  }

  /** Graceful stop: no new connections, in-flight requests drain (up to config.drainTimeout). */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      this.compaction?.stop();
      this.source.stop();
      await Promise.allSettled([this.runtime.close(), this.workers?.close()]);
      await Promise.allSettled([this.admin.close(), this.ops.metrics.close(), this.ops.readiness.close()]);
      this.logs.flush();
    })();
    return this.#closing;
  }
}
