// The running proxy: the current compiled snapshot, the listening binds and the upstream
// pools. `apply()` swaps in a new snapshot atomically: it compiles first, opens any new
// ports, then switches the pointer every new request reads, then closes ports no longer
// configured. If any step before the switch fails, the previous config keeps serving.
import {
  bufferedRequestBytes,
  DEFAULT_COOL_DOWN_MS,
  DEFAULT_MAX_COOL_DOWN_MS,
  DEFAULT_MAX_RETRY_BODY_BYTES,
  DEFAULT_RETRY_BUDGET_MIN_CONCURRENCY,
  DEFAULT_RETRY_BUDGET_PERCENT,
  DEFAULT_MAX_CONNECTIONS_PER_BIND, DEFAULT_MAX_RATE_LIMIT_KEYS, DEFAULT_REQUEST_BODY_TIMEOUT_MS, type BindIR, type ProxySnapshot } from '@tollgate/api';
import type { Logger } from 'pino';
import { compileSnapshot, listedPoliciesFrom, type CompiledSnapshot } from '../routing/compile.js';
import { EndpointTable } from '../upstream/endpoints.js';
import { backendKey, CoolDowns, type CoolDownSettings } from '../upstream/cool-downs.js';
import type { RetryBudgetSettings, RetrySettingsView } from '../routing/retry-budget.js';
import { DEFAULT_DNS, DnsCache, type DnsSettings } from '../upstream/dns-cache.js';
import { ProxyMetrics } from '../metrics/metrics.js';
import { systemClock, type Clock } from '../ratelimit/clock.js';
import type { LimitMemory } from '../ratelimit/local/limit-memory.js';
import { LimiterStore } from '../ratelimit/local/limiter.js';
import { overflowReporter } from '../ratelimit/local/overflow.js';
import { ChargeCap, DEFAULT_MAX_TOKENS_CHARGED_PER_RESPONSE } from '../ratelimit/charge-cap.js';
import type { GlobalFactory } from '../ratelimit/policy.js';
import type { compileGlobalLimiter, RlsClientPool } from '../ratelimit/global/index.js';
import { serviceNeeds, type ReadinessNeed } from '../ratelimit/global/readiness.js';
import { DEFAULT_MAX_GLOBAL_ANSWERS, GlobalAnswers, placeId } from '../ratelimit/global/answers.js';
import { DEFAULT_MAX_CREDIT_KEYS, TokenCredits } from '../ratelimit/global/credits.js';
import { TraceHub } from '../trace/hub.js';
import { traceEnvFromProcess, type TraceEnv } from '../trace/tracer.js';
import { DEFAULT_MAX_LINE_BYTES } from '@tollgate/kit';
import { MAX_LLM_BODY_BYTES } from '../llm/request-body.js';
import { DEFAULT_PATH_SETTINGS, type PathSettings } from '../pipeline/request-target.js';
import { DataPlaneServer, type ClientTimeouts, type DataPlaneContext, type DrainTimes } from './data-plane.js';
import { TlsContextCache } from '../routing/tls-contexts.js';
import { BodyBudget, type BytesBudget } from '../pipeline/body-budget.js';
import type { ConnectionSlots } from './connection-slots.js';
import { RequestIds } from './request-ids.js';
import type { InFlight } from '../pipeline/inflight.js';
import { SERVICE_BALANCING, type PickerDeps } from '../routing/backend-picker.js';
import { ServiceEndpoints } from '../routing/service-endpoints.js';
import { DEFAULT_CONNECT_ATTEMPTS } from '../pipeline/upstream-call.js';
import { AuthCompilers } from '../auth/compilers.js';
import { JwksStore } from '../auth/jwks-store.js';
import { defaultPasswordSettings, PasswordVerifier, type PasswordSettings } from '../auth/password-verifier.js';
import { ExtAuthzServices, extAuthzServicesInUse } from '../auth/ext-authz-services.js';
import { ExtProcServices, extProcServicesInUse } from '../ext-proc/services.js';

import { TlsBinds, type TlsBindsPlan } from '../tls-stream/tls-binds.js';
import type { BindSharing } from './bind-sharing.js';
import { DEFAULT_TLS_HELLO_TIMEOUT_MS, DEFAULT_TLS_IDLE_MS, type TlsStreamSettings } from '../tls-stream/tls-server.js';
import { DEFAULT_MAX_WEBSOCKET_CONNECTIONS, DEFAULT_WEBSOCKET_IDLE_MS, Upgrades, type UpgradeSettings } from '../pipeline/upgrades.js';
export interface RuntimeOptions {
  /** How Backend resources' host names are resolved and cached (config.dns). */
  readonly dns?: DnsSettings;
  readonly connectTimeoutMs: number;
  readonly clock?: Clock;
  /** How long a backend's response body may send nothing (config.backendBodyIdleTimeout; default 5 min). */
  readonly backendBodyIdleTimeoutMs?: number;
  readonly rateLimitLog?: Logger;
  /** Where authentication and authorization decisions are logged. */
  readonly authLog?: Logger;
  /** Where mirrored requests that failed are logged (debug). */
  readonly upstreamLog?: Logger;
  readonly backendRequestTimeoutMs: number;
  /** config.connectAttempts (default DEFAULT_CONNECT_ATTEMPTS). */
  readonly connectAttempts?: number;
  /** config.retryBudgetPercent and retryBudgetMinConcurrency. */
  readonly retryBudget?: RetryBudgetSettings;
  /** config.maxRetryBodyBytes. */
  readonly maxRetryBodyBytes?: number;
  /** config.coolDown and maxCoolDown. */
  readonly coolDown?: CoolDownSettings;
  readonly drainTimeoutMs: number;
  /** config.drainIdleTimeout: how long the drain keeps idle kept-alive connections open. */
  readonly drainIdleMs: number;
  /** config.maxModelLabels: distinct `model` label values of the token metrics. */
  readonly maxModelLabels?: number;
  /** config.consumerMetricsTopN: consumers with a token series of their own. */
  readonly consumerMetricsTopN?: number;
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
  /** config.maxBufferedRequestBytes (default: bufferedRequestBytes of @tollgate/api). */
  readonly maxBufferedRequestBytes?: number;
  /** config.maxConnectionsPerBind. */
  readonly maxConnectionsPerBind?: number;
  /**
   * With worker threads, what they share (../pipeline/shared-body-budget.ts, ./connection-slots.ts):
   * the budget of buffered bytes (its max stands for maxBufferedRequestBytes) and the table of
   * connections per bind. By default this runtime counts alone.
   */
  readonly bodyBudget?: BytesBudget;
  readonly connectionSlots?: ConnectionSlots;
  /** With worker threads: the WebSocket slots all of them share (config.maxWebSocketConnections as a budget). */
  readonly websocketSlots?: BytesBudget;
  /** config.maxWebSocketConnections and config.websocketIdleTimeout. */
  readonly websockets?: Partial<UpgradeSettings>;
  /** config.maxTokensChargedPerResponse. */
  readonly maxTokensChargedPerResponse?: number;
  /** config.maxRateLimitKeys. */
  readonly maxRateLimitKeys?: number;
  /**
   * Where local rate limit state lives: this runtime's own (the default), or memory shared with
   * the other worker threads' runtimes (ratelimit/local/shared-memory.ts: a leader's or a follower's).
   */
  readonly limitMemory?: LimitMemory;
  /** config.tlsClientHelloTimeout and config.tlsIdleTimeout (TLS binds). */
  readonly tlsStreams?: Partial<Pick<TlsStreamSettings, 'helloTimeoutMs' | 'idleMs'>>;
  /** config.basicAuth: password workers, their queue, the cache of verified credentials. */
  readonly passwords?: Partial<PasswordSettings>;
  /** Worker threads: how the binds share their ports with the other threads (./bind-sharing.ts). */
  readonly bindSharing?: BindSharing;
  /** False in a worker thread: the main thread gives the process-wide metrics. */
  readonly processMetrics?: boolean;
  /** With worker threads: the request id counter they share (./request-ids.ts). By default this runtime counts alone. */
  readonly requestIds?: RequestIds;
}

/** config.requestHeadersTimeout, requestBodyIdleTimeout, requestBodyTimeout and keepAliveTimeout defaults. */
export const DEFAULT_CLIENT_TIMEOUTS: ClientTimeouts = { requestHeadersMs: 10_000, requestBodyIdleMs: 30_000, requestBodyMs: DEFAULT_REQUEST_BODY_TIMEOUT_MS, keepAliveMs: 72_000 };

const BODY_IDLE_TIMEOUT_MS = 300_000;

/**
 * config.drainIdleTimeout default: a client that keeps sending on its connection sends its next
 * request well within it; one idle longer risks little by a close it would also get from the
 * keep-alive timeout.
 */
export const DEFAULT_DRAIN_IDLE_MS = 2_000;

function bindKey(address: string, port: number): string {
  return `${address}:${port}`;
}

function isTls(bind: BindIR): boolean {
  return bind.listeners.some((l) => l.protocol === 'HTTPS');
}

export class ProxyRuntime {
  #current: CompiledSnapshot | null = null;
  readonly #servers = new Map<string, DataPlaneServer>();
  /** The ports of TLS listeners (ProxySnapshot.tlsBinds). */
  readonly tlsBinds: TlsBinds;
  /** Per-endpoint connection pools, requests in flight and scores, kept across configs. */
  readonly endpoints: EndpointTable;
  /** Backends that answered 429 or 503 and are passed over for a while, kept across configs. */
  readonly coolDowns: CoolDowns;
  readonly #picking: PickerDeps;
  readonly #auth: AuthCompilers;
  /** basicAuth's password workers and cache (threads start with the first verification). */
  readonly passwords: PasswordVerifier;
  readonly #jwks: JwksStore;
  /** Aborts the mirrored copies still in flight when the runtime closes. */
  readonly #mirrors = new AbortController();
  readonly inflight = new Map<number, InFlight>();
  readonly traces: TraceHub;
  readonly metrics: ProxyMetrics;
  readonly limiters: LimiterStore;
  /** The rate limit service's last answer per key of the keyed global descriptors (GET /budgets). */
  readonly globalAnswers: GlobalAnswers;
  /** What this replica's global Tokens reservations hold beyond the usage (kept across configs). */
  readonly tokenCredits: TokenCredits;
  /** The keyed global descriptors of the config being compiled (placeId): their answers are kept. */
  #globalPlaces = new Set<string>();
  /**
   * Global rate limiting (gRPC, protobuf and CEL) is loaded by the first config that has a
   * remoteRateLimit policy; a proxy that never uses it neither loads nor starts any of it.
   */
  #global: { readonly compile: GlobalCompiler; readonly pool: RlsClientPool } | null = null;
  readonly #makeGlobal: GlobalFactory;
  readonly #tlsContexts = new TlsContextCache();
  draining = false;
  readonly traceEnv: TraceEnv = traceEnvFromProcess();
  /** What every request of this runtime shares (one object, so a trace hub can tell its own requests). */
  readonly #deps: DataPlaneContext;

  /** The effective client timeouts (config_dump shows them). */
  get clientTimeouts(): ClientTimeouts {
    return this.#deps.clientTimeouts;
  }

  /** The WebSocket bounds in force (config_dump shows them). */
  get websockets(): UpgradeSettings {
    return this.#deps.upgrades.settings;
  }

  /** The effective bounds on what clients may hold of the process (config_dump shows them). */
  get clientBounds(): { readonly maxRequestBodyBytes: number; readonly maxBufferedRequestBytes: number; readonly maxConnectionsPerBind: number } {
    const d = this.#deps;
    return { maxRequestBodyBytes: d.maxRequestBodyBytes, maxBufferedRequestBytes: d.bodyBudget.max, maxConnectionsPerBind: d.maxConnectionsPerBind };
  }

  /** config.maxTokensChargedPerResponse in force (config_dump shows it). */
  get maxTokensChargedPerResponse(): number {
    return this.#deps.chargeCap.max;
  }

  /** The retry and cool-down settings in force (config_dump shows them). */
  get retrySettings(): RetrySettingsView {
    const d = this.#deps;
    const c = this.coolDowns.settings;
    return { retryBudgetPercent: d.retryBudget.percent, retryBudgetMinConcurrency: d.retryBudget.minConcurrency, maxRetryBodyBytes: d.maxRetryBodyBytes, coolDownMs: c.defaultMs, maxCoolDownMs: c.maxMs };
  }

  /** config.maxRateLimitKeys in force (config_dump shows it). */
  get maxRateLimitKeys(): number {
    return this.limiters.options.maxKeys;
  }

  /** config.backendBodyIdleTimeout in force (config_dump shows it). */
  get backendBodyIdleTimeoutMs(): number {
    return this.#deps.bodyIdleTimeoutMs;
  }
  readonly startedAt = Date.now();
  loadedAt = 0;
  /** The host names of Backend resources, resolved and cached. */
  readonly dns: DnsCache;

  /** The rate limits' clock (ms): what their windows are read against. */
  readonly clock: Clock;

  constructor(readonly options: RuntimeOptions) {
    const clock = (this.clock = options.clock ?? systemClock);
    this.dns = new DnsCache(options.dns ?? DEFAULT_DNS, clock);
    this.endpoints = new EndpointTable({ connectTimeoutMs: options.connectTimeoutMs, clock, dns: this.dns });
    this.coolDowns = new CoolDowns(options.coolDown ?? { defaultMs: DEFAULT_COOL_DOWN_MS, maxMs: DEFAULT_MAX_COOL_DOWN_MS }, clock);
    this.#picking = { endpoints: this.endpoints, clock, balancing: SERVICE_BALANCING, coolDowns: this.coolDowns, services: new ServiceEndpoints() };
    const maxRequestBodyBytes = options.maxRequestBodyBytes ?? MAX_LLM_BODY_BYTES;
    const bodyBudget = options.bodyBudget ?? new BodyBudget(options.maxBufferedRequestBytes ?? bufferedRequestBytes({ maxRequestBodyBytes }));
    const upgrades = new Upgrades({ maxConnections: options.websockets?.maxConnections ?? DEFAULT_MAX_WEBSOCKET_CONNECTIONS, idleMs: options.websockets?.idleMs ?? DEFAULT_WEBSOCKET_IDLE_MS }, options.websocketSlots);
    this.metrics = new ProxyMetrics({
      processMetrics: options.processMetrics,
      maxModelLabels: options.maxModelLabels,
      consumerMetricsTopN: options.consumerMetricsTopN,
      bufferedRequestBytes: () => bodyBudget.used,
      rateLimitServices: () => this.rateLimitServices.states(),
      extProcServices: () => this.#deps.extProc.states(),
      websocketConnections: () => upgrades.open,
    });
    const log = options.rateLimitLog ?? options.log;
    this.limiters = new LimiterStore(clock, { maxKeys: options.maxRateLimitKeys ?? DEFAULT_MAX_RATE_LIMIT_KEYS, overflowed: overflowReporter(this.metrics, log, clock), memory: options.limitMemory });
    this.globalAnswers = new GlobalAnswers(DEFAULT_MAX_GLOBAL_ANSWERS, clock);
    this.tokenCredits = new TokenCredits(DEFAULT_MAX_CREDIT_KEYS, clock);
    this.#makeGlobal = (ir, scope, limits) => {
      // apply() loads the module before compiling a config that names a rate limit service.
      if (!this.#global) throw new Error('global rate limiting used before it was loaded');
      ir.descriptors.forEach((d, i) => d.by && this.#globalPlaces.add(placeId(scope, ir.domain, i, d.by)));
      return this.#global.compile(ir, { log, clients: this.#global.pool, answers: this.globalAnswers, credits: this.tokenCredits, scope }, limits);
    };
    this.traces = new TraceHub(this.traceEnv, options.maxTraceSessions);
    const clientTimeouts = options.clientTimeouts ?? DEFAULT_CLIENT_TIMEOUTS;
    this.#deps = {
      current: () => this.current,
      log: options.log,
      inflight: this.inflight,
      metrics: this.metrics,
      rateLimitLog: options.rateLimitLog ?? options.log,
      upstreamLog: options.upstreamLog ?? options.log,
      mirrorSignal: this.#mirrors.signal,
      defaultBackendTimeoutMs: options.backendRequestTimeoutMs,
      connectAttempts: options.connectAttempts ?? DEFAULT_CONNECT_ATTEMPTS,
      retryBudget: options.retryBudget ?? { percent: DEFAULT_RETRY_BUDGET_PERCENT, minConcurrency: DEFAULT_RETRY_BUDGET_MIN_CONCURRENCY },
      maxRetryBodyBytes: options.maxRetryBodyBytes ?? DEFAULT_MAX_RETRY_BODY_BYTES,
      coolDowns: this.coolDowns,
      bodyIdleTimeoutMs: options.backendBodyIdleTimeoutMs ?? BODY_IDLE_TIMEOUT_MS,
      clientTimeouts,
      bodyTimeouts: { idleMs: clientTimeouts.requestBodyIdleMs, deadlineMs: clientTimeouts.requestBodyMs },
      maxConnectionsPerBind: options.maxConnectionsPerBind ?? DEFAULT_MAX_CONNECTIONS_PER_BIND,
      connectionSlots: options.connectionSlots,
      requestIds: options.requestIds ?? new RequestIds(),
      paths: options.paths ?? DEFAULT_PATH_SETTINGS,
      maxSseEventBytes: options.maxSseLineBytes ?? DEFAULT_MAX_LINE_BYTES,
      maxRequestBodyBytes,
      bodyBudget,
      chargeCap: new ChargeCap(options.maxTokensChargedPerResponse ?? DEFAULT_MAX_TOKENS_CHARGED_PER_RESPONSE, log, clock),
      authLog: options.authLog ?? options.log,
      upgrades,
      extProc: new ExtProcServices(),
    };
    const authLog = options.authLog ?? options.log;
    this.passwords = new PasswordVerifier({ ...defaultPasswordSettings(), ...options.passwords }, authLog, (result) => this.metrics.countPasswordCheck(result));
    this.#jwks = new JwksStore({ log: authLog, clock, count: (result) => this.metrics.countJwksFetch(result) });
    this.#auth = new AuthCompilers({ log: authLog, passwords: this.passwords, extAuthz: new ExtAuthzServices(), clock, jwks: this.#jwks });
    this.traces.owner = this.#deps;
    const tlsSettings: TlsStreamSettings = {
      helloTimeoutMs: options.tlsStreams?.helloTimeoutMs ?? DEFAULT_TLS_HELLO_TIMEOUT_MS,
      idleMs: options.tlsStreams?.idleMs ?? DEFAULT_TLS_IDLE_MS,
      connectTimeoutMs: options.connectTimeoutMs,
      maxConnections: this.#deps.maxConnectionsPerBind,
    };
    this.tlsBinds = new TlsBinds({ settings: tlsSettings, log: options.log, count: (l, r, o) => this.metrics.countTlsConnection(l, r, o), connectionSlots: options.connectionSlots }, () => options.drainTimeoutMs, options.bindSharing ?? null);
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
    return [...[...this.#servers.values()].map((s) => ({ address: s.address, port: s.port, boundPort: s.boundPort })), ...this.tlsBinds.listening];
  }

  /**
   * Compiles `ir`, opens the ports it adds and switches every new request to it. Either the
   * whole config applies or, whatever step fails, #rollback() puts back what the earlier steps
   * changed and the previous config keeps serving.
   */
  async apply(ir: ProxySnapshot): Promise<void> {
    // The policies it lists, found by position from the serving snapshot's lists (no walk over every route).
    const policies = listedPoliciesFrom(ir, this.#current);
    const services = serviceNeeds(policies);
    if (services.size && !this.#global) {
      const m = await import('../ratelimit/global/index.js');
      this.#global ??= { compile: m.compileGlobalLimiter, pool: new m.RlsClientPool() };
    }
    const processors = extProcServicesInUse(policies);
    const progress: BindProgress = { started: [], released: [] };
    let next: CompiledSnapshot;
    let plan: BindPlan;
    let tlsPlan: TlsBindsPlan | null = null;
    try {
      if (processors.size) this.#deps.extProc.load();
      next = compileSnapshot(ir, { limiters: this.limiters, makeGlobal: this.#makeGlobal, picking: this.#picking, tlsContexts: this.#tlsContexts, previous: this.#current, auth: this.#auth });
      for (const name of next.detached) {
        this.options.log.warn({ route: name }, `route ${name} is not attached: none of its hostnames intersects its listener hostname`);
      }
      plan = this.#planBinds(ir, next);
      await this.#listen(plan, progress);
      tlsPlan = await this.tlsBinds.prepare(ir.tlsBinds ?? []);
    } catch (err) {
      await this.#rollback(progress);
      throw err;
    }
    this.#commit(ir, next, plan, progress.started, services);
    tlsPlan.commit();
    this.metrics.retainTlsRoutes(new Set((ir.tlsBinds ?? []).flatMap((b) => b.listeners.flatMap((l) => l.routes.map((r) => r.name)))));
  }

  /**
   * The servers the config needs that are not listening yet. They are built here, before any
   * port is touched (a certificate node:tls refuses fails here). A port that turns from HTTP
   * to HTTPS (or back) needs another kind of server on the same port, so its old server must
   * let go of the port first: those switches are listed apart and come last in #listen().
   */
  #planBinds(ir: ProxySnapshot, next: CompiledSnapshot): BindPlan {
    const wanted = new Map(ir.binds.map((b) => [bindKey(b.address, b.port), b]));
    const opened: NewServer[] = [];
    const switched: SwitchedServer[] = [];
    for (const [key, bind] of wanted) {
      const old = this.#servers.get(key);
      if (old && old.tls === isTls(bind)) continue;
      const server = new DataPlaneServer(bind.port, bind.address, this.#deps, next.binds.get(bind.port)?.tls ?? null);
      const listeners = bind.listeners.map((l) => l.name);
      if (old) switched.push({ key, old, port: old.boundPort, server, listeners });
      else opened.push({ server, listeners });
    }
    return { wanted, opened, switched };
  }

  /** Listens on the new ports, then switches the ports that change kind; `progress` records each step. */
  async #listen(plan: BindPlan, progress: BindProgress): Promise<void> {
    const sharing = this.options.bindSharing ?? null;
    for (const { server, listeners } of plan.opened) {
      await server.listen(listeners, sharing);
      progress.started.push(server);
    }
    for (const s of plan.switched) {
      this.options.log.info({ bind: s.key }, `bind ${s.key} changes protocol; reopening it`);
      s.old.stopAccepting();
      progress.released.push(s);
      // The port is this process's: the other threads may still listen on it with the old kind.
      await s.server.listen(s.listeners, sharing, false);
      progress.started.push(s.server);
    }
  }

  /** Undoes what a refused apply() did: drops what its compile built, closes the servers it started, puts the old servers back on their ports. */
  async #rollback({ started, released }: BindProgress): Promise<void> {
    this.limiters.discard();
    this.#globalPlaces = new Set();
    this.#tlsContexts.discard();
    await Promise.allSettled(started.map((s) => s.close({ deadlineMs: 0, idleMs: 0 })));
    for (const s of released) {
      try {
        await s.old.resumeAccepting(s.port);
      } catch (resumeErr) {
        // Someone else took the port in between: nothing on this machine can serve it now.
        this.options.log.error({ bind: s.key, err: resumeErr }, `bind ${s.key} could not be reopened after the refused reload; it serves nothing until a config applies`);
        this.#servers.delete(s.key);
        void s.old.close(this.#drainTimes());
      }
    }
  }

  /** The switch: every step that could fail has succeeded; from here on nothing throws. */
  #commit(ir: ProxySnapshot, next: CompiledSnapshot, plan: BindPlan, started: readonly DataPlaneServer[], services: ReadonlyMap<string, ReadinessNeed>): void {
    for (const s of plan.switched) {
      // The old server's connections finish on it.
      this.#servers.delete(s.key);
      void s.old.close(this.#drainTimes());
    }
    this.limiters.commit();
    this.globalAnswers.retain(this.#globalPlaces);
    this.#globalPlaces = new Set();
    this.#tlsContexts.commit();
    this.#current = next;
    for (const [key, server] of this.#servers) {
      const tls = server.tls ? next.binds.get(plan.wanted.get(key)?.port ?? -1)?.tls : null;
      if (tls) server.useTls(tls);
    }
    this.loadedAt = Date.now();
    for (const s of started) {
      this.#servers.set(bindKey(s.address, s.port), s);
      this.options.log.info({ bind: `${s.address}:${s.boundPort}` }, `bind ${s.address}:${s.boundPort} listening (${listenerSummary(ir, s.port)})`);
    }
    const removed = [...this.#servers].filter(([key]) => !plan.wanted.has(key));
    for (const [key, server] of removed) {
      this.#servers.delete(key);
      this.options.log.info({ bind: key }, `bind ${key} removed from the config; closing after in-flight requests`);
      void server.close(this.#drainTimes());
    }
    // Endpoints the new config still lists keep their state; the others close once idle.
    this.endpoints.retain(next.upstreams);
    this.#picking.services.commit(next.serviceEndpoints);
    if (this.coolDowns.size) this.coolDowns.retain(new Set(ir.binds.flatMap((b) => b.listeners.flatMap((l) => l.routes.flatMap((r) => r.backends.map(backendKey))))));
    this.metrics.retainRoutes(next.routeNames, (before) => next.gathered.routeNames.leftSince(before));
    this.#global?.pool.retain(services);
    this.#auth.deps.extAuthz.retain(extAuthzServicesInUse(next.policies));
    const processors = extProcServicesInUse(next.policies);
    this.#deps.extProc.retain(processors);
    for (const address of processors) this.#deps.extProc.prepare(address);
  }

  #drainTimes(): DrainTimes {
    const deadlineMs = this.options.drainTimeoutMs;
    return { deadlineMs, idleMs: Math.min(deadlineMs, this.options.drainIdleMs) };
  }

  /** Stops accepting on every bind and waits for in-flight requests, up to the drain deadline. */
  async close(): Promise<void> {
    this.draining = true;
    const servers = [...this.#servers.values()];
    this.#servers.clear();
    await Promise.allSettled([...servers.map((s) => s.close(this.#drainTimes())), this.tlsBinds.close()]);
    await this.#deps.upgrades.allClosed();
    // Mirrored copies are dropped rather than waited for: no client waits on them.
    this.#mirrors.abort();
    await this.endpoints.close();
    await this.#global?.pool.close();
    await this.passwords.close();
    await this.#auth.deps.extAuthz.close();
    this.#deps.extProc.close();
    await this.#jwks.close();
  }
}

type GlobalCompiler = typeof compileGlobalLimiter;

interface NewServer {
  readonly server: DataPlaneServer;
  readonly listeners: string[];
}

/** A port whose server changes kind (HTTP to HTTPS or back): the old server gives the port to the new one. */
interface SwitchedServer extends NewServer {
  readonly key: string;
  readonly old: DataPlaneServer;
  /** The port the old server listens on, to resume on it if the switch is undone. */
  readonly port: number;
}

/** What a config does to the ports: the binds it wants (by address:port), the servers to start. */
interface BindPlan {
  readonly wanted: ReadonlyMap<string, BindIR>;
  readonly opened: readonly NewServer[];
  readonly switched: readonly SwitchedServer[];
}

/** The steps of #listen() taken so far, which #rollback() undoes. */
interface BindProgress {
  readonly started: DataPlaneServer[];
  readonly released: SwitchedServer[];
}

/** What the process and the config dump read of the rate limit service channels. */
export type RateLimitServices = Pick<RlsClientPool, 'readiness' | 'addresses' | 'states'>;

const NO_RATE_LIMIT_SERVICES: RateLimitServices = { readiness: () => ({ ready: true, waiting: [] }), addresses: () => [], states: () => [] };

function listenerSummary(ir: ProxySnapshot, port: number): string {
  const bind = ir.binds.find((b) => b.port === port);
  if (!bind) return '';
  return bind.listeners.map((l) => `${l.protocol} listener ${l.name}${l.hostname ? ` ${l.hostname}` : ''}: ${l.routes.length} route${l.routes.length === 1 ? '' : 's'}`).join('; ');
}
