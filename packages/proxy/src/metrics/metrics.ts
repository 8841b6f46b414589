// Prometheus metrics of one proxy (prom-client, a registry per runtime so several proxies
// can live in one process). Label values are bounded: route names and statuses by the config;
// model names, which clients choose freely, by `ModelLabels` (the first N seen, then `other`).
import type { AuthKind, AuthPassReason, AuthReason, TransformResult } from '@tollgate/api';
import { Counter, Gauge, Registry, collectDefaultMetrics, type LabelValues, type Metric } from 'prom-client';
import { ConsumerTokens, DEFAULT_CONSUMER_METRICS_TOP_N } from './consumer-tokens.js';

export type DecisionKind = 'requests' | 'tokens' | 'global';
export type DecisionLevel = 'gateway' | 'route' | 'global';
/** refused: an input the policy's expressions read was over its declared bound (answered 431, unevaluated). */
export type DecisionResult = 'allowed' | 'limited' | 'failed_open' | 'error' | 'refused';
export type TokenSource = 'reported' | 'estimated';

/** The route names a config serves (a Set, or the compile's counted names). */
export type RouteNames = { has(name: string): boolean } & Iterable<string>;
/**
 * What a client was refused for taking too much of the proxy: request-body bytes beyond the
 * process budget, a body not in by its deadline or idle too long, a connection beyond a bind's cap,
 * an upgrade beyond the WebSocket cap, a WebSocket closed for being idle.
 */
export type ClientRefusal = 'body_budget' | 'body_deadline' | 'body_idle' | 'connection_limit' | 'websocket_limit' | 'websocket_idle';
export type ClientCertificateResult = 'verified' | 'refused' | 'unverified';

export const DEFAULT_MAX_MODEL_LABELS = 100;
/** The model label of requests whose model was not among the first N distinct ones seen. */
export const OTHER_MODEL = 'other';
/** The model label of requests that named no model (not JSON, no `model` string). */
export const UNKNOWN_MODEL = 'unknown';
/** The route label of requests no route matched. */
export const NO_ROUTE = 'none';

/** The outcome label of an attempt: its status class (429 apart), or the catalog code of its transport failure. */
export function attemptOutcome(status: number, error: string | null): string {
  if (error !== null) return error;
  if (status === 429) return '429';
  return status >= 500 ? '5xx' : status >= 400 ? '4xx' : status >= 300 ? '3xx' : '2xx';
}

/**
 * Bounds the cardinality of the `model` label: the first `max` distinct model names seen since
 * the process started keep their own series; later ones are counted under `other`, so a
 * client sending a new model name per request cannot grow the registry without bound.
 */
export class ModelLabels {
  readonly #seen = new Set<string>();
  constructor(readonly max: number) {}

  label(model: string | null): string {
    if (model === null) return UNKNOWN_MODEL;
    if (this.#seen.has(model)) return model;
    if (this.#seen.size >= this.max) return OTHER_MODEL;
    this.#seen.add(model);
    return model;
  }
}

/** Removes in place the cells whose labels `gone` picks (the array is shared with a collect()). */
function removeWhere<L extends string>(cells: { readonly labels: LabelValues<L> }[], gone: (labels: LabelValues<L>) => boolean): void {
  let kept = 0;
  for (const c of cells) if (!gone(c.labels)) cells[kept++] = c;
  cells.length = kept;
}

/** One label set's running total. */
interface Cell<L extends string> {
  readonly labels: LabelValues<L>;
  value: number;
}

/**
 * A counter whose increments on the request path are plain additions. prom-client hashes and
 * validates the label values on every inc(), a labelled child's too (its inc is the parent's,
 * bound to the labels), which showed as several % of the CPU per request; here each label set
 * has a cell, and prom-client reads the cells only when the registry is scraped.
 */
class CellCounter<L extends string> {
  readonly #cells: Cell<L>[] = [];

  constructor(registry: Registry, name: string, help: string, labelNames: readonly L[]) {
    const cells = this.#cells;
    new Counter<L>({
      name,
      help,
      labelNames,
      registers: [registry],
      collect() {
        this.reset();
        for (const c of cells) this.inc(c.labels, c.value);
      },
    });
  }

  /** A new series, at 0; the caller keeps the cell and adds to its value. */
  cell(labels: LabelValues<L>): Cell<L> {
    const c = { labels, value: 0 };
    this.#cells.push(c);
    return c;
  }

  /** Forgets the series `gone` picks (e.g. of routes no longer configured). */
  drop(gone: (labels: LabelValues<L>) => boolean): void {
    removeWhere(this.#cells, gone);
  }
}

/** One label set of a histogram: observations per bucket (not cumulative), their sum and count. */
interface HistogramCell<L extends string> {
  readonly labels: LabelValues<L>;
  /** counts[i]: observations in (bounds[i-1], bounds[i]]; the last slot is above every bound. */
  readonly counts: number[];
  sum: number;
  count: number;
}

/**
 * A histogram whose observations on the request path are a bucket search and three additions
 * (prom-client's observe hashes the label values on every call, a child's too). The registry
 * reads it as any metric, through get(), when it is scraped.
 */
class CellHistogram<L extends string> {
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  readonly #cells: HistogramCell<L>[] = [];

  constructor(
    registry: Registry,
    readonly name: string,
    readonly help: string,
    readonly bounds: readonly number[],
  ) {
    registry.registerMetric(this as unknown as Metric);
  }

  /** A new series, empty; the caller keeps the cell and observes into it. */
  cell(labels: LabelValues<L>): HistogramCell<L> {
    const c = { labels, counts: new Array<number>(this.bounds.length + 1).fill(0), sum: 0, count: 0 };
    this.#cells.push(c);
    return c;
  }

  /** Forgets the series `gone` picks (e.g. of routes no longer configured). */
  drop(gone: (labels: LabelValues<L>) => boolean): void {
    removeWhere(this.#cells, gone);
  }

  observe(cell: HistogramCell<L>, value: number): void {
    const bounds = this.bounds;
    let i = 0;
    while (i < bounds.length && value > bounds[i]!) i++;
    cell.counts[i]!++;
    cell.sum += value;
    cell.count++;
  }

  get(): { name: string; help: string; type: 'histogram'; aggregator: 'sum'; values: { metricName: string; labels: LabelValues<string>; value: number }[] } {
    const values = [];
    for (const c of this.#cells) {
      let cumulative = 0;
      for (let i = 0; i <= this.bounds.length; i++) {
        cumulative += c.counts[i]!;
        values.push({ metricName: `${this.name}_bucket`, labels: { ...c.labels, le: i < this.bounds.length ? this.bounds[i]! : '+Inf' }, value: cumulative });
      }
      values.push({ metricName: `${this.name}_sum`, labels: { ...c.labels }, value: c.sum });
      values.push({ metricName: `${this.name}_count`, labels: { ...c.labels }, value: c.count });
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }

  reset(): void {
    for (const c of this.#cells) {
      c.counts.fill(0);
      c.sum = 0;
      c.count = 0;
    }
  }
}

/**
 * A gauge without labels whose value is read from `read` when the registry is scraped (0 without one).
 * `aggregator`: how worker threads' values merge into the process's (sum: each thread counts its
 * own; max: each thread reads the same shared total).
 */
function readAtScrape(registry: Registry, name: string, help: string, read: (() => number) | undefined, aggregator: 'sum' | 'max' = 'sum'): void {
  new Gauge({
    name,
    help,
    aggregator,
    registers: [registry],
    collect() {
      this.set(read?.() ?? 0);
    },
  });
}

/**
 * Whether each channel to a service the config names is connected, read at each scrape: one
 * series per service (the config bounds them; a service no config uses any more has no channel
 * and so no series). Each thread has its own channel: the process is connected when all are.
 */
function serviceConnected(registry: Registry, name: string, help: string, states: (() => readonly { readonly address: string; readonly connected: boolean }[]) | undefined): void {
  new Gauge({
    name,
    help,
    labelNames: ['service'],
    aggregator: 'min',
    registers: [registry],
    collect() {
      this.reset();
      for (const s of states?.() ?? []) this.set({ service: s.address }, s.connected ? 1 : 0);
    },
  });
}

/** A counter by route and one more label (a fixed set, or a status): its series go with their routes. */
class RouteCounter<L extends string> {
  readonly #counter: CellCounter<'route' | L>;
  readonly #cells = new Map<string, Map<string | number, Cell<'route' | L>>>();

  constructor(
    registry: Registry,
    name: string,
    help: string,
    readonly label: L,
  ) {
    this.#counter = new CellCounter<'route' | L>(registry, name, help, ['route', label]);
  }

  count(route: string, value: string | number): void {
    nested(this.#cells, route, value, () => this.#counter.cell({ route, [this.label]: value } as LabelValues<'route' | L>)).value++;
  }

  drop(gone: (route: unknown) => boolean): void {
    for (const route of this.#cells.keys()) if (gone(route)) this.#cells.delete(route);
    this.#counter.drop((l) => gone(l.route));
  }
}

/** Two-level lookup by label values the code passes as literals: no key string is built per call. */
function nested<A, B, V>(outer: Map<A, Map<B, V>>, a: A, b: B, make: () => V): V {
  let inner = outer.get(a);
  if (!inner) outer.set(a, (inner = new Map<B, V>()));
  let v = inner.get(b);
  if (!v) inner.set(b, (v = make()));
  return v;
}

export interface ProxyMetricsOptions {
  /** Distinct `model` label values before `other`; default 100 (config.maxModelLabels). */
  readonly maxModelLabels?: number;
  /** Consumers with a token series of their own before `other`; default 20 (config.consumerMetricsTopN). */
  readonly consumerMetricsTopN?: number;
  /** Request-body bytes held now, read when the registry is scraped. */
  readonly bufferedRequestBytes?: () => number;
  /** The rate limit services of the config in force and whether each is connected now, read at each scrape. */
  readonly rateLimitServices?: () => readonly { readonly address: string; readonly connected: boolean }[];
  /** The external processors (extProc) the config in force names and whether each is connected now, read at each scrape. */
  readonly extProcServices?: () => readonly { readonly address: string; readonly connected: boolean }[];
  /** Upgraded connections (WebSockets) open now, read at each scrape. */
  readonly websocketConnections?: () => number;
  /** The process-wide series (tollgate_process_*): false in worker threads, whose /metrics the main thread merges. */
  readonly processMetrics?: boolean;
}

/** The byte counters of one route's WebSockets, added to as bytes pass. */
export interface WebSocketByteCells {
  readonly fromClient: { value: number };
  readonly toClient: { value: number };
}

export class ProxyMetrics {
  readonly registry = new Registry();
  readonly #requests = new CellCounter(this.registry, 'tollgate_requests_total', 'Requests answered, by route (none when no route matched) and status.', ['route', 'status']);
  readonly #decisions = new CellCounter(
    this.registry,
    'tollgate_ratelimit_decisions_total',
    'Rate-limit decisions by kind (requests, tokens, global), level (gateway, route, global) and result.',
    ['kind', 'level', 'result'],
  );
  readonly #tokens = new CellCounter(
    this.registry,
    'tollgate_llm_tokens_total',
    'LLM tokens counted, by route and model (the first config.maxModelLabels distinct models, then "other"); source is reported (usage from the backend) or estimated (tokenizer).',
    ['route', 'model', 'source'],
  );
  readonly #refusals = new CellCounter(
    this.registry,
    'tollgate_client_refusals_total',
    'Requests and connections refused for taking too much of the proxy, by reason: body_budget (503, config.maxBufferedRequestBytes), body_deadline (408, config.requestBodyTimeout), body_idle (408, config.requestBodyIdleTimeout), connection_limit (closed, config.maxConnectionsPerBind), websocket_limit (503, config.maxWebSocketConnections), websocket_idle (a WebSocket closed after config.websocketIdleTimeout without a byte).',
    ['reason'],
  );
  readonly #refusalCells = new Map<ClientRefusal, Cell<'reason'>>();
  readonly #tlsConnections = new CellCounter(
    this.registry,
    'tollgate_tls_connections_total',
    'Connections to TLS listeners (TLSRoute), by listener, route and outcome: forwarded (piped to a backend), no_sni (the ClientHello named no server), no_route (no listener or route for the name), not_tls (not a TLS ClientHello within its first 16 KiB record), hello_timeout (no whole ClientHello within config.tlsClientHelloTimeout), handshake_failed (Terminate listeners), no_backend, invalid_backend, no_endpoint, backend_unreachable, connection_limit (config.maxConnectionsPerBind). Listener and route are "" when none was chosen.',
    ['listener', 'route', 'outcome'],
  );
  readonly #tlsCells = new Map<string, Cell<'listener' | 'route' | 'outcome'>>();
  readonly #clientCertificates = new CellCounter(
    this.registry,
    'tollgate_client_certificate_checks_total',
    'TLS connections of HTTPS listeners that check client certificates, by result: verified (a certificate of the listener\'s CAs), refused (AllowValidOnly: closed after the handshake), unverified (AllowInsecureFallback: served without an identity).',
    ['result'],
  );
  readonly #clientCertificateCells = new Map<ClientCertificateResult, Cell<'result'>>();
  readonly #overflows = new CellCounter(
    this.registry,
    'tollgate_ratelimit_key_overflow_total',
    'Requests of a keyed local limit whose key found its table full (config.maxRateLimitKeys) and was checked against the limit\'s shared overflow budget, by kind (requests, tokens) and level (gateway, route).',
    ['kind', 'level'],
  );
  readonly #overflowCells = new Map<string, Cell<'kind' | 'level'>>();
  readonly #auth = new CellCounter(
    this.registry,
    'tollgate_auth_decisions_total',
    'Decisions of the authentication and authorization checks, by kind (apiKey, basicAuth, jwt, authorization, extAuthz), result (allow, deny) and reason (allowed, or why the check refused: missing, invalid, expired, unknown, ambiguous, too_large, denied, not_allowed, error, unavailable; docs/authentication.md).',
    ['kind', 'result', 'reason'],
  );
  readonly #authCells = new Map<AuthKind, Map<AuthPassReason | AuthReason, Cell<'kind' | 'result' | 'reason'>>>();
  readonly #passwords = new CellCounter(
    this.registry,
    'tollgate_auth_password_checks_total',
    'basicAuth password checks by result: cached (a credential verified before, no hash run), match and mismatch (verified by a password worker), busy (refused 503: every worker busy and config.basicAuth.maxQueue waiting), failed (the worker failed).',
    ['result'],
  );
  readonly #passwordCells = new Map<string, Cell<'result'>>();
  readonly #jwksFetches = new CellCounter(
    this.registry,
    'tollgate_jwks_fetches_total',
    'Fetches of the remote key sets (JWKS) of jwt providers, by result: ok, timeout, unreachable, status (not 200), too_large (over 256 KiB), invalid (not a usable key set). A failed fetch keeps the last good set.',
    ['result'],
  );
  readonly #jwksCells = new Map<string, Cell<'result'>>();
  readonly #transformations = new CellCounter(
    this.registry,
    'tollgate_transformations_total',
    'Requests of routes with a transformation, by route and result: applied, or why it refused the request: evaluation_error and invalid_value (500 TG_TRANSFORM_FAILED), input_too_large (431), body_not_json (400), body_too_large (413); docs/transformation.md.',
    ['route', 'result'],
  );
  readonly #transformCells = new Map<string, Map<TransformResult, Cell<'route' | 'result'>>>();
  readonly #unsentRetries = new CellCounter(
    this.registry,
    'tollgate_upstream_unsent_retries_total',
    'Requests sent to another endpoint of their backend because the connection to the one picked failed before any byte of the request was written (config.connectAttempts), by route and error (the catalog code of the failure: TG_UPSTREAM_REFUSED, TG_UPSTREAM_RESET, TG_UPSTREAM_CONNECT_TIMEOUT, ...).',
    ['route', 'error'],
  );
  readonly #unsentRetryCells = new Map<string, Map<string, Cell<'route' | 'error'>>>();
  readonly #websocketBytes = new CellCounter(
    this.registry,
    'tollgate_websocket_bytes_total',
    'Bytes passed through upgraded connections (WebSockets) after the 101, by route and direction (client_to_backend, backend_to_client).',
    ['route', 'direction'],
  );
  readonly #websocketCells = new Map<string, WebSocketByteCells>();
  readonly #attempts = new CellCounter(
    this.registry,
    'tollgate_upstream_attempts_total',
    'Attempts of requests at backends, by route, backend (as the config names it) and outcome: the answer\'s status class (2xx, 3xx, 4xx, 5xx; 429 on its own) or the catalog code of a transport failure (TG_UPSTREAM_REFUSED, TG_UPSTREAM_TIMEOUT, ...). A request failed over or retried counts one attempt per backend call.',
    ['route', 'backend', 'outcome'],
  );
  readonly #attemptCells = new Map<string, Map<string, Map<string, Cell<'route' | 'backend' | 'outcome'>>>>();
  readonly #retries = new CellCounter(
    this.registry,
    'tollgate_retries_total',
    'Extra attempts of requests, by route and kind: retry (the route\'s retry, within a priority level) or failover (to the next priority level). docs/retries-failover.md.',
    ['route', 'kind'],
  );
  readonly #retryCells = new Map<string, Map<string, Cell<'route' | 'kind'>>>();
  readonly #budgetExhausted = new CellCounter(
    this.registry,
    'tollgate_retry_budget_exhausted_total',
    'Retries and failovers not made because the route\'s retry budget had no share left (config.retryBudgetPercent, retryBudgetMinConcurrency): the request got the answer it had, by route.',
    ['route'],
  );
  readonly #budgetCells = new Map<string, Cell<'route'>>();
  readonly #upstreamLatency = new CellHistogram<'route'>(
    this.registry,
    'tollgate_upstream_latency_seconds',
    'Time from the upstream call to its response headers, by route.',
    [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
  );

  readonly corsPreflights = new RouteCounter(
    this.registry,
    'tollgate_cors_preflights_total',
    'CORS preflights the gateway answered (never forwarded, never counted by rate limits), by route and result: allowed (204 with the allowances) or refused (403, an origin not allowed).',
    'result',
  );
  readonly csrfRefusals = new RouteCounter(
    this.registry,
    'tollgate_csrf_refusals_total',
    'Requests the csrf policy refused (403), by route and reason: cross_origin, null_origin, malformed_origin (the Origin), cross_referer, malformed_referer (the Referer, without an Origin).',
    'reason',
  );
  readonly directResponses = new RouteCounter(this.registry, 'tollgate_direct_responses_total', 'Requests a route answered by itself (directResponse), by route and status.', 'status');
  /** extProc phases by result (continued, mutated, immediate, failed_open, failed_closed); a streamed body counts once. */
  readonly extProcPhases = new RouteCounter(this.registry, 'tollgate_ext_proc_phases_total', 'Phases sent to a route\'s external processor (extProc), by route and result: continued, mutated, immediate, failed_open, failed_closed.', 'result');

  // Label sets looked up per request through maps keyed by the label values themselves
  // (strings the config or the code already holds), never a key string built per request.
  readonly #requestCells = new Map<string, Map<number, Cell<'route' | 'status'>>>();
  /** The route names of the last retainRoutes(), and whether the next one walks the series whatever it finds. */
  #retained: RouteNames = new Set();
  #walkNext = true;
  readonly #latencyCells = new Map<string, HistogramCell<'route'>>();
  readonly #decisionCells = new Map<DecisionKind, Map<DecisionLevel, Map<DecisionResult, Cell<'kind' | 'level' | 'result'>>>>();
  readonly #tokenCells = new Map<string, Map<string, Map<TokenSource, Cell<'route' | 'model' | 'source'>>>>();

  readonly #models: ModelLabels;
  readonly #consumerTokens: ConsumerTokens;

  constructor(options: ProxyMetricsOptions = {}) {
    this.#models = new ModelLabels(options.maxModelLabels ?? DEFAULT_MAX_MODEL_LABELS);
    this.#consumerTokens = new ConsumerTokens(this.registry, options.consumerMetricsTopN ?? DEFAULT_CONSUMER_METRICS_TOP_N);
    serviceConnected(
      this.registry,
      'tollgate_ratelimit_service_connected',
      'Whether the channel to a rate limit service the config uses is connected now (1) or not (0), by service address; with several threads, 1 when every thread\'s channel is.',
      options.rateLimitServices,
    );
    serviceConnected(
      this.registry,
      'tollgate_ext_proc_service_connected',
      'Whether the channel to an external processor (extProc) the config uses is connected now (1) or not (0), by service address; with several threads, 1 when every thread\'s channel is. While 0, a phase fails at once into the policy\'s failureMode.',
      options.extProcServices,
    );
    // Process-wide figures are the main thread's to give: a worker thread's would repeat them.
    if (options.processMetrics !== false) collectDefaultMetrics({ register: this.registry, prefix: 'tollgate_process_' });
    readAtScrape(this.registry, 'tollgate_websocket_connections', 'Upgraded connections (WebSockets) open now, across all binds (at most config.maxWebSocketConnections).', options.websocketConnections);
    readAtScrape(this.registry, 'tollgate_buffered_request_bytes', 'Request-body bytes held in memory now, across all binds (at most config.maxBufferedRequestBytes).', options.bufferedRequestBytes, 'max');
  }

  /** Counts one decision of an authentication or authorization check; the labels are fixed sets (AUTH_KINDS, AUTH_REASONS). */
  countAuth(kind: AuthKind, allowed: boolean, reason: AuthPassReason | AuthReason): void {
    nested(this.#authCells, kind, reason, () => this.#auth.cell({ kind, result: allowed ? 'allow' : 'deny', reason })).value++;
  }

  /** Counts one basicAuth password check (results: cached, match, mismatch, busy, failed). */
  countPasswordCheck(result: string): void {
    let cell = this.#passwordCells.get(result);
    if (!cell) this.#passwordCells.set(result, (cell = this.#passwords.cell({ result })));
    cell.value++;
  }

  /** Counts one request given a keyed limit's overflow budget. */
  countKeyOverflow(kind: 'requests' | 'tokens', level: 'gateway' | 'route'): void {
    const key = `${kind}/${level}`;
    let cell = this.#overflowCells.get(key);
    if (!cell) this.#overflowCells.set(key, (cell = this.#overflows.cell({ kind, level })));
    cell.value++;
  }

  /** Counts one fetch of a remote JWKS. */
  countJwksFetch(result: string): void {
    let cell = this.#jwksCells.get(result);
    if (!cell) this.#jwksCells.set(result, (cell = this.#jwksFetches.cell({ result })));
    cell.value++;
  }

  /** Counts one handshake of a listener that checks client certificates. */
  countClientCertificate(result: ClientCertificateResult): void {
    let cell = this.#clientCertificateCells.get(result);
    if (!cell) this.#clientCertificateCells.set(result, (cell = this.#clientCertificates.cell({ result })));
    cell.value++;
  }

  /** Counts one refusal of a client that took too much. */
  countRefusal(reason: ClientRefusal): void {
    let cell = this.#refusalCells.get(reason);
    if (!cell) this.#refusalCells.set(reason, (cell = this.#refusals.cell({ reason })));
    cell.value++;
  }

  /** Counts one connection to a TLS listener by what became of it. */
  countTlsConnection(listener: string | null, route: string | null, outcome: string): void {
    const key = `${listener ?? ''}\n${route ?? ''}\n${outcome}`;
    let cell = this.#tlsCells.get(key);
    if (!cell) this.#tlsCells.set(key, (cell = this.#tlsConnections.cell({ listener: listener ?? '', route: route ?? '', outcome })));
    cell.value++;
  }

  /** After a config apply: the series of TLS routes it no longer has are dropped. */
  retainTlsRoutes(routes: ReadonlySet<string>): void {
    const gone = (route: string): boolean => route !== '' && !routes.has(route);
    for (const key of this.#tlsCells.keys()) if (gone(key.split('\n')[1]!)) this.#tlsCells.delete(key);
    this.#tlsConnections.drop((l) => gone(String(l.route)));
  }

  /** Counts the LLM tokens of one response; `model` as the client sent it (null: none). */
  countTokens(route: string, model: string | null, source: TokenSource, tokens: number): void {
    const label = this.#models.label(model);
    const bySource = nested(this.#tokenCells, route, label, () => new Map<TokenSource, Cell<'route' | 'model' | 'source'>>());
    let cell = bySource.get(source);
    if (!cell) bySource.set(source, (cell = this.#tokens.cell({ route, model: label, source })));
    cell.value += tokens;
  }

  /** config.consumerMetricsTopN in force (config_dump shows it). */
  get consumerMetricsTopN(): number {
    return this.#consumerTokens.topN;
  }

  /** Counts the LLM tokens charged to a consumer (its own series while in the top N, else `other`). */
  countConsumerTokens(consumer: string, tokens: number): void {
    this.#consumerTokens.count(consumer, tokens);
  }

  /** Counts one rate-limit decision. */
  countDecision(kind: DecisionKind, level: DecisionLevel, result: DecisionResult): void {
    const byResult = nested(this.#decisionCells, kind, level, () => new Map<DecisionResult, Cell<'kind' | 'level' | 'result'>>());
    let cell = byResult.get(result);
    if (!cell) byResult.set(result, (cell = this.#decisions.cell({ kind, level, result })));
    cell.value++;
  }

  /** Counts one request of a route with a transformation; `result` is a fixed set (TRANSFORM_RESULTS). */
  countTransformation(route: string, result: TransformResult): void {
    nested(this.#transformCells, route, result, () => this.#transformations.cell({ route, result })).value++;
  }

  /** Counts one request sent to another endpoint after `error` (a catalog code) before anything was sent. */
  countUnsentRetry(route: string, error: string): void {
    let byError = this.#unsentRetryCells.get(route);
    if (!byError) this.#unsentRetryCells.set(route, (byError = new Map<string, Cell<'route' | 'error'>>()));
    let cell = byError.get(error);
    if (!cell) byError.set(error, (cell = this.#unsentRetries.cell({ route, error })));
    cell.value++;
  }

  /** The byte counters of a route's WebSockets (one pair per route, made on first use). */
  websocketBytes(route: string): WebSocketByteCells {
    let cells = this.#websocketCells.get(route);
    if (!cells) {
      cells = { fromClient: this.#websocketBytes.cell({ route, direction: 'client_to_backend' }), toClient: this.#websocketBytes.cell({ route, direction: 'backend_to_client' }) };
      this.#websocketCells.set(route, cells);
    }
    return cells;
  }

  /** Counts one attempt of a request at a backend; `outcome` from attemptOutcome(). */
  countAttempt(route: string, backend: string, outcome: string): void {
    const byOutcome = nested(this.#attemptCells, route, backend, () => new Map<string, Cell<'route' | 'backend' | 'outcome'>>());
    let cell = byOutcome.get(outcome);
    if (!cell) byOutcome.set(outcome, (cell = this.#attempts.cell({ route, backend, outcome })));
    cell.value++;
  }

  /** Counts one extra attempt of a request: a retry or a failover. */
  countRetry(route: string, kind: 'retry' | 'failover'): void {
    nested(this.#retryCells, route, kind, () => this.#retries.cell({ route, kind })).value++;
  }

  /** Counts one retry or failover the route's budget did not allow. */
  countRetryBudgetExhausted(route: string): void {
    let cell = this.#budgetCells.get(route);
    if (!cell) this.#budgetCells.set(route, (cell = this.#budgetExhausted.cell({ route })));
    cell.value++;
  }

  countRequest(route: string, status: number): void {
    let byStatus = this.#requestCells.get(route);
    if (!byStatus) this.#requestCells.set(route, (byStatus = new Map<number, Cell<'route' | 'status'>>()));
    let cell = byStatus.get(status);
    if (!cell) byStatus.set(status, (cell = this.#requests.cell({ route, status })));
    cell.value++;
  }

  /**
   * After a config apply: the series of routes the config no longer has are dropped, so a
   * deleted route's counters are not exported for the rest of the process's life. The walk
   * over every series is made only when a route of the last config is gone, and at the apply
   * after that one (an apply that changed endpoints or edited a route walks nothing: at
   * thousands of routes, the walk was most of an apply's commit). A request still in flight on
   * a removed route counts into a new series: dropped at the next apply that walks, so at most
   * the series of removed routes whose requests outlived two applies wait for a later removal.
   */
  retainRoutes(routes: RouteNames, leftSince?: (before: RouteNames) => readonly string[] | null): void {
    const before = this.#retained;
    this.#retained = routes;
    let left = false;
    // The same set (an apply that changed no route list keeps it): no route left. The names
    // that left, when the caller knows them against what was retained: no walk.
    const known = before === routes ? [] : (leftSince?.(before) ?? null);
    if (known) left = known.length > 0;
    else for (const name of before) {
      if (routes.has(name)) continue;
      left = true;
      break;
    }
    const walk = left || this.#walkNext;
    this.#walkNext = left;
    if (!walk) return;
    const gone = (route: unknown): boolean => route !== NO_ROUTE && !routes.has(String(route));
    // Deleting the current key while iterating a Map is safe.
    for (const map of [this.#requestCells, this.#latencyCells, this.#tokenCells, this.#unsentRetryCells, this.#transformCells, this.#attemptCells, this.#retryCells, this.#budgetCells, this.#websocketCells])
      for (const route of map.keys()) if (gone(route)) map.delete(route);
    this.#transformations.drop((l) => gone(l.route));
    this.#websocketBytes.drop((l) => gone(l.route));
    this.#requests.drop((l) => gone(l.route));
    this.#attempts.drop((l) => gone(l.route));
    this.#retries.drop((l) => gone(l.route));
    this.#budgetExhausted.drop((l) => gone(l.route));
    this.#unsentRetries.drop((l) => gone(l.route));
    this.#tokens.drop((l) => gone(l.route));
    this.#upstreamLatency.drop((l) => gone(l.route));
    for (const c of [this.corsPreflights, this.csrfRefusals, this.directResponses, this.extProcPhases]) c.drop(gone);
  }

  observeUpstreamLatency(route: string, seconds: number): void {
    let cell = this.#latencyCells.get(route);
    if (!cell) this.#latencyCells.set(route, (cell = this.#upstreamLatency.cell({ route })));
    this.#upstreamLatency.observe(cell, seconds);
  }
}
