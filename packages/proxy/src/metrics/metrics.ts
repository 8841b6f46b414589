// Prometheus metrics of one proxy (prom-client, a registry per runtime so several proxies
// can live in one process). Label values are bounded by the config: route names, statuses,
// model names as the backend's clients send them.
import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

export type DecisionKind = 'requests' | 'tokens' | 'global';
export type DecisionLevel = 'gateway' | 'route' | 'global';
export type DecisionResult = 'allowed' | 'limited' | 'failed_open' | 'error';

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
    help: 'LLM tokens counted, by route and model; source is reported (usage from the backend) or estimated (tokenizer).',
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

  constructor() {
    collectDefaultMetrics({ register: this.registry, prefix: 'tollgate_process_' });
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
