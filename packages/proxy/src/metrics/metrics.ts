// Prometheus metrics of one proxy (prom-client, a registry per runtime so several proxies
// can live in one process). Label values are bounded: route names and statuses by the config;
// model names, which clients choose freely, by `ModelLabels` (the first N seen, then `other`).
import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

export type DecisionKind = 'requests' | 'tokens' | 'global';
export type DecisionLevel = 'gateway' | 'route' | 'global';
export type DecisionResult = 'allowed' | 'limited' | 'failed_open' | 'error';
export type TokenSource = 'reported' | 'estimated';

export const DEFAULT_MAX_MODEL_LABELS = 100;
/** The model label of requests whose model was not among the first N distinct ones seen. */
export const OTHER_MODEL = 'other';
/** The model label of requests that named no model (not JSON, no `model` string). */
export const UNKNOWN_MODEL = 'unknown';

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

export interface ProxyMetricsOptions {
  /** Distinct `model` label values before `other`; default 100 (config.maxModelLabels). */
  readonly maxModelLabels?: number;
}

export class ProxyMetrics {
  readonly registry = new Registry();
  readonly requests = new Counter({
    name: 'tollgate_requests_total',
    help: 'Requests answered, by route (none when no route matched) and status.',
    labelNames: ['route', 'status'] as const,
    registers: [this.registry],
  });
  readonly decisions = new Counter({
    name: 'tollgate_ratelimit_decisions_total',
    help: 'Rate-limit decisions by kind (requests, tokens, global), level (gateway, route, global) and result.',
    labelNames: ['kind', 'level', 'result'] as const,
    registers: [this.registry],
  });
  readonly tokens = new Counter({
    name: 'tollgate_llm_tokens_total',
    help: 'LLM tokens counted, by route and model (the first config.maxModelLabels distinct models, then "other"); source is reported (usage from the backend) or estimated (tokenizer).',
    labelNames: ['route', 'model', 'source'] as const,
    registers: [this.registry],
  });
  readonly upstreamLatency = new Histogram({
    name: 'tollgate_upstream_latency_seconds',
    help: 'Time from the upstream call to its response headers, by route.',
    labelNames: ['route'] as const,
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
    registers: [this.registry],
  });

  // Label children cached per route (and status): prom-client hashes the label values on
  // every labelled call, which is measurable on the request path.
  readonly #requestChildren = new Map<string, Map<number, Counter.Internal>>();
  readonly #latencyChildren = new Map<string, Histogram.Internal<'route'>>();
  /** Keyed by the label values joined with NUL (a character no label value holds). */
  readonly #decisionChildren = new Map<string, Counter.Internal>();
  readonly #tokenChildren = new Map<string, Counter.Internal>();

  readonly #models: ModelLabels;

  constructor(options: ProxyMetricsOptions = {}) {
    this.#models = new ModelLabels(options.maxModelLabels ?? DEFAULT_MAX_MODEL_LABELS);
    collectDefaultMetrics({ register: this.registry, prefix: 'tollgate_process_' });
  }

  /** Counts the LLM tokens of one response; `model` as the client sent it (null: none). */
  countTokens(route: string, model: string | null, source: TokenSource, tokens: number): void {
    const label = this.#models.label(model);
    const key = `${route}\0${label}\0${source}`;
    let child = this.#tokenChildren.get(key);
    if (!child) this.#tokenChildren.set(key, (child = this.tokens.labels({ route, model: label, source })));
    child.inc(tokens);
  }

  /** Counts one rate-limit decision. */
  countDecision(kind: DecisionKind, level: DecisionLevel, result: DecisionResult): void {
    const key = `${kind}\0${level}\0${result}`;
    let child = this.#decisionChildren.get(key);
    if (!child) this.#decisionChildren.set(key, (child = this.decisions.labels({ kind, level, result })));
    child.inc();
  }

  countRequest(route: string, status: number): void {
    let byStatus = this.#requestChildren.get(route);
    if (!byStatus) this.#requestChildren.set(route, (byStatus = new Map<number, Counter.Internal>()));
    let child = byStatus.get(status);
    if (!child) byStatus.set(status, (child = this.requests.labels({ route, status })));
    child.inc();
  }

  observeUpstreamLatency(route: string, seconds: number): void {
    let child = this.#latencyChildren.get(route);
    if (!child) this.#latencyChildren.set(route, (child = this.upstreamLatency.labels({ route })));
    child.observe(seconds);
  }
}
