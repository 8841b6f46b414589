// The running proxy: the current compiled snapshot, the listening binds and the upstream
// pools. `apply()` swaps in a new snapshot atomically: it compiles first, opens any new
// ports, then switches the pointer every new request reads, then closes ports no longer
// configured. If any step before the switch fails, the previous config keeps serving.
import type { ProxySnapshot } from '@tollgate/api';
import type { Logger } from 'pino';
import { compileSnapshot, type CompiledSnapshot } from '../routing/compile.js';
import { PoolSet } from '../upstream/pools.js';
import { EndpointStatsTable } from '../upstream/stats.js';
import { ProxyMetrics } from '../metrics/metrics.js';
import { systemClock, type Clock } from '../ratelimit/clock.js';
import { LimiterStore } from '../ratelimit/local/limiter.js';
import type { GlobalFactory } from '../ratelimit/policy.js';
import type { compileGlobalLimiter, RlsClientPool } from '../ratelimit/global/index.js';
import { TraceHub } from '../trace/hub.js';
import { traceEnvFromProcess, type TraceEnv } from '../trace/tracer.js';
import { DEFAULT_MAX_LINE_BYTES } from '@tollgate/kit';
import { loadTokenizer } from '../llm/estimate.js';
import { MAX_LLM_BODY_BYTES } from '../llm/request-body.js';
import { DEFAULT_PATH_SETTINGS, type PathSettings } from '../pipeline/request-target.js';
import { DataPlaneServer, type ClientTimeouts, type DataPlaneContext } from './data-plane.js';
import type { InFlight } from './inflight.js';
import { upstreamNames } from '../routing/backend-picker.js';

export interface RuntimeOptions {
  readonly connectTimeoutMs: number;
  readonly clock?: Clock;
  readonly rateLimitLog?: Logger;
  readonly backendRequestTimeoutMs: number;
  readonly drainTimeoutMs: number;
  /** config.maxModelLabels: distinct `model` label values of the token metrics. */
  readonly maxModelLabels?: number;
  readonly log: Logger;
  /** Trace sessions that may wait at once (config.maxTraceSessions). */
  readonly maxTraceSessions?: number;
  readonly clientTimeouts?: ClientTimeouts;
  /** config.paths: how request paths are normalised before routing. */
  readonly paths?: PathSettings;
  /** config.maxSseLineBytes. */
  readonly maxSseLineBytes?: number;
  /** config.maxRequestBodyBytes. */
  readonly maxRequestBodyBytes?: number;
}

/** config.requestHeadersTimeout, requestBodyIdleTimeout and keepAliveTimeout defaults. */
export const DEFAULT_CLIENT_TIMEOUTS: ClientTimeouts = { requestHeadersMs: 10_000, requestBodyIdleMs: 30_000, keepAliveMs: 72_000 };

const BODY_IDLE_TIMEOUT_MS = 300_000;

function bindKey(address: string, port: number): string {
  return `${address}:${port}`;
}

export class ProxyRuntime {
  #current: CompiledSnapshot | null = null;
  readonly #servers = new Map<string, DataPlaneServer>();
  readonly pools: PoolSet;
  readonly inflight = new Map<number, InFlight>();
  readonly traces: TraceHub;
  readonly endpointStats = new EndpointStatsTable();
  readonly metrics: ProxyMetrics;
  readonly limiters: LimiterStore;
  /**
   * Global rate limiting (gRPC, protobuf and CEL) is loaded by the first config that has a
   * remoteRateLimit policy; a proxy that never uses it neither loads nor starts any of it.
   */
  #global: { readonly compile: GlobalCompiler; readonly pool: RlsClientPool } | null = null;
  readonly #makeGlobal: GlobalFactory;
  draining = false;
  readonly traceEnv: TraceEnv = traceEnvFromProcess();
  /** What every request of this runtime shares (one object, so a trace hub can tell its own requests). */
  readonly #deps: DataPlaneContext;

  /** The effective client timeouts (config_dump shows them). */
  get clientTimeouts(): ClientTimeouts {
    return this.#deps.clientTimeouts;
  }
  readonly startedAt = Date.now();
  loadedAt = 0;

  constructor(readonly options: RuntimeOptions) {
    this.pools = new PoolSet({ connectTimeoutMs: options.connectTimeoutMs });
    this.metrics = new ProxyMetrics({ maxModelLabels: options.maxModelLabels });
    this.limiters = new LimiterStore(options.clock ?? systemClock);
    const log = options.rateLimitLog ?? options.log;
    this.#makeGlobal = (ir) => {
      // apply() loads the module before compiling a config that names a rate limit service.
      if (!this.#global) throw new Error('global rate limiting used before it was loaded');
      return this.#global.compile(ir, { log, clients: this.#global.pool });
    };
    this.traces = new TraceHub(this.traceEnv, options.maxTraceSessions);
    this.#deps = {
      current: () => this.current,
      log: options.log,
      inflight: this.inflight,
      pools: this.pools,
      endpointStats: this.endpointStats,
      metrics: this.metrics,
      rateLimitLog: options.rateLimitLog ?? options.log,
      defaultBackendTimeoutMs: options.backendRequestTimeoutMs,
      bodyIdleTimeoutMs: BODY_IDLE_TIMEOUT_MS,
      clientTimeouts: options.clientTimeouts ?? DEFAULT_CLIENT_TIMEOUTS,
      paths: options.paths ?? DEFAULT_PATH_SETTINGS,
      maxSseEventBytes: options.maxSseLineBytes ?? DEFAULT_MAX_LINE_BYTES,
      maxRequestBodyBytes: options.maxRequestBodyBytes ?? MAX_LLM_BODY_BYTES,
    };
    this.traces.owner = this.#deps;
  }

  /** gRPC channels to rate limit services, shared across reloads (none before a config uses one). */
  get rateLimitServices(): RateLimitServices {
    return this.#global?.pool ?? NO_RATE_LIMIT_SERVICES;
  }

  get current(): CompiledSnapshot {
    if (!this.#current) throw new Error('no config loaded');
    return this.#current;
  }

  get hasConfig(): boolean {
    return this.#current !== null;
  }

  /** Ports actually bound (useful when a bind asks for port 0). */
  get listening(): { address: string; port: number; boundPort: number }[] {
    return [...this.#servers.values()].map((s) => ({ address: s.address, port: s.port, boundPort: s.boundPort }));
  }

  async apply(ir: ProxySnapshot): Promise<void> {
    const services = new Map<string, 'FailOpen' | 'FailClosed'>();
    for (const p of ir.binds.flatMap((b) => b.listeners.flatMap((l) => [l.policy, ...l.routes.map((r) => r.policy)]))) {
      const g = p?.remoteRateLimit;
      if (g && services.get(g.service) !== 'FailClosed') services.set(g.service, g.failureMode);
    }
    if (services.size && !this.#global) {
      const m = await import('../ratelimit/global/index.js');
      this.#global ??= { compile: m.compileGlobalLimiter, pool: new m.RlsClientPool() };
    }
    let next: CompiledSnapshot;
    try {
      next = compileSnapshot(ir, { limiters: this.limiters, makeGlobal: this.#makeGlobal });
    } catch (err) {
      this.limiters.discard();
      throw err;
    }
    if (next.countsTokens) await loadTokenizer();
    for (const name of next.detached) {
      this.options.log.warn({ route: name }, `route ${name} is not attached: none of its hostnames intersects its listener hostname`);
    }
    const wanted = new Map(ir.binds.map((b) => [bindKey(b.address, b.port), b]));
    const started: DataPlaneServer[] = [];
    try {
      for (const [key, bind] of wanted) {
        if (this.#servers.has(key)) continue;
        const server = new DataPlaneServer(bind.port, bind.address, this.#deps);
        await server.listen();
        started.push(server);
      }
    } catch (err) {
      this.limiters.discard();
      await Promise.allSettled(started.map((s) => s.close(0)));
      throw err;
    }
    this.limiters.commit();
    this.#current = next;
    this.loadedAt = Date.now();
    for (const s of started) {
      this.#servers.set(bindKey(s.address, s.port), s);
      this.options.log.info({ bind: `${s.address}:${s.boundPort}` }, `bind ${s.address}:${s.boundPort} listening (${listenerSummary(ir, s.port)})`);
    }
    const removed = [...this.#servers].filter(([key]) => !wanted.has(key));
    for (const [key, server] of removed) {
      this.#servers.delete(key);
      this.options.log.info({ bind: key }, `bind ${key} removed from the config; closing after in-flight requests`);
      void server.close(this.options.drainTimeoutMs);
    }
    const backends = new Set(ir.binds.flatMap((b) => b.listeners.flatMap((l) => l.routes.flatMap((r) => r.backends.flatMap(upstreamNames)))));
    void this.pools.retain(backends);
    this.#global?.pool.retain(services);
  }

  /** Stops accepting on every bind and waits for in-flight requests, up to the drain deadline. */
  async close(): Promise<void> {
    this.draining = true;
    const servers = [...this.#servers.values()];
    this.#servers.clear();
    await Promise.allSettled(servers.map((s) => s.close(this.options.drainTimeoutMs)));
    await this.pools.close();
    await this.#global?.pool.close();
  }
}

type GlobalCompiler = typeof compileGlobalLimiter;

/** What the process and the config dump read of the rate limit service channels. */
export type RateLimitServices = Pick<RlsClientPool, 'readiness' | 'addresses'>;

const NO_RATE_LIMIT_SERVICES: RateLimitServices = { readiness: () => ({ ready: true, waiting: [] }), addresses: () => [] };

function listenerSummary(ir: ProxySnapshot, port: number): string {
  const bind = ir.binds.find((b) => b.port === port);
  if (!bind) return '';
  return bind.listeners.map((l) => `listener ${l.name}${l.hostname ? ` ${l.hostname}` : ''}: ${l.routes.length} route${l.routes.length === 1 ? '' : 's'}`).join('; ');
}
