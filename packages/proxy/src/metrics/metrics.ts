// Prometheus metrics of one proxy (prom-client, a registry per runtime so several proxies
// can live in one process). Label values are bounded: route names and statuses by the config;
// model names, which clients choose freely, by `ModelLabels` (the first N seen, then `other`).
import { Counter, Histogram, Registry, collectDefaultMetrics, type LabelValues } from 'prom-client';

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
}

export interface ProxyMetricsOptions {
  /** Distinct `model` label values before `other`; default 100 (config.maxModelLabels). */
  readonly maxModelLabels?: number;
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
  readonly upstreamLatency = new Histogram({
    name: 'tollgate_upstream_latency_seconds',
    help: 'Time from the upstream call to its response headers, by route.',
    labelNames: ['route'] as const,
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
    registers: [this.registry],
  });

  // Label sets looked up per request by a cheap key; the histogram's children are cached too,
  // which saves prom-client's label lookup (not its hashing, which observe() still does).
  readonly #requestCells = new Map<string, Map<number, Cell<'route' | 'status'>>>();
  readonly #latencyChildren = new Map<string, Histogram.Internal<'route'>>();
  /** Keyed by the label values joined with NUL (a character no label value holds). */
  readonly #decisionCells = new Map<string, Cell<'kind' | 'level' | 'result'>>();
  readonly #tokenCells = new Map<string, Cell<'route' | 'model' | 'source'>>();

  readonly #models: ModelLabels;

  constructor(options: ProxyMetricsOptions = {}) {
    this.#models = new ModelLabels(options.maxModelLabels ?? DEFAULT_MAX_MODEL_LABELS);
    collectDefaultMetrics({ register: this.registry, prefix: 'tollgate_process_' });
  }

  /** Counts the LLM tokens of one response; `model` as the client sent it (null: none). */
  countTokens(route: string, model: string | null, source: TokenSource, tokens: number): void {
    const label = this.#models.label(model);
    const key = `${route}\0${label}\0${source}`;
    let cell = this.#tokenCells.get(key);
    if (!cell) this.#tokenCells.set(key, (cell = this.#tokens.cell({ route, model: label, source })));
    cell.value += tokens;
  }

  /** Counts one rate-limit decision. */
  countDecision(kind: DecisionKind, level: DecisionLevel, result: DecisionResult): void {
    const key = `${kind}\0${level}\0${result}`;
    let cell = this.#decisionCells.get(key);
    if (!cell) this.#decisionCells.set(key, (cell = this.#decisions.cell({ kind, level, result })));
    cell.value++;
  }

  countRequest(route: string, status: number): void {
    let byStatus = this.#requestCells.get(route);
    if (!byStatus) this.#requestCells.set(route, (byStatus = new Map<number, Cell<'route' | 'status'>>()));
    let cell = byStatus.get(status);
    if (!cell) byStatus.set(status, (cell = this.#requests.cell({ route, status })));
    cell.value++;
  }

  observeUpstreamLatency(route: string, seconds: number): void {
    let child = this.#latencyChildren.get(route);
    if (!child) this.#latencyChildren.set(route, (child = this.upstreamLatency.labels({ route })));
    child.observe(seconds);
  }
}
