// tollgate_consumer_tokens_total: LLM tokens per consumer, with bounded cardinality. Only the top N
// consumers by tokens (config.consumerMetricsTopN) have a series of their own; every other
// consumer's tokens go to the series consumer="other". So at most N + 1 series, whatever the
// number of consumers.
//
// Membership is decided when tokens are counted, never at scrape time, so that every series
// only ever grows:
// - a consumer's series counts the tokens it spent while it was in the top N;
// - `other` counts the tokens spent by consumers while they were not;
// - the sum of all series is every consumer's tokens.
// A consumer enters the top N when the tokens it has spent since the process started exceed
// those of the least of the top N (which leaves it). A consumer that leaves keeps its value: its
// series is no longer exported (Prometheus marks it stale) and, should it enter again, continues
// from that value. The ranking knows at most MAX_TRACKED consumers: beyond that the half that
// spent least (none of the top N) is forgotten, and a forgotten consumer entering the top N
// again starts its series from 0, which Prometheus reads as a counter reset.
// A consumer literally named "other" is always counted in `other` (no two series share labels).
import { Counter, type Registry } from 'prom-client';

export const OTHER_CONSUMER = 'other';
/** config.consumerMetricsTopN default. */
export const DEFAULT_CONSUMER_METRICS_TOP_N = 20;
/** Consumers the ranking remembers the spending of. */
export const MAX_TRACKED = 10_000;

interface Tracked {
  /** Tokens spent since the process started (or since it was last forgotten): its rank. */
  total: number;
  /** Tokens counted on its own series. */
  series: number;
}

export class ConsumerTokens {
  readonly #tracked = new Map<string, Tracked>();
  readonly #top = new Set<string>();
  #other = 0;
  /** The least of the top N; null when it must be found again. */
  #least: string | null = null;

  constructor(
    registry: Registry,
    /** config.consumerMetricsTopN; 0: no series at all. */
    readonly topN: number,
    readonly maxTracked = MAX_TRACKED,
  ) {
    if (topN === 0) return;
    const series = () => this.series();
    new Counter({
      name: 'tollgate_consumer_tokens_total',
      help: `LLM tokens charged per consumer: the top config.consumerMetricsTopN consumers by tokens have their own series, counting while they are in the top; the others' tokens are counted as consumer="${OTHER_CONSUMER}" (docs/metrics.md).`,
      labelNames: ['consumer'],
      registers: [registry],
      collect() {
        this.reset();
        for (const [consumer, value] of series()) this.inc({ consumer }, value);
      },
    });
  }

  /** The exported series: the current top N, then `other`. */
  series(): [string, number][] {
    const out: [string, number][] = [];
    for (const c of this.#top) out.push([c, this.#tracked.get(c)!.series]);
    if (this.#other > 0 || this.#tracked.size > 0) out.push([OTHER_CONSUMER, this.#other]);
    return out;
  }

  count(consumer: string, tokens: number): void {
    if (this.topN === 0 || !(tokens > 0)) return;
    let t = this.#tracked.get(consumer);
    if (!t) {
      if (this.#tracked.size >= this.maxTracked) this.#forget();
      this.#tracked.set(consumer, (t = { total: 0, series: 0 }));
    }
    t.total += tokens;
    if (consumer === OTHER_CONSUMER) {
      this.#other += tokens;
      return;
    }
    if (this.#top.has(consumer)) {
      t.series += tokens;
      if (this.#least === consumer) this.#least = null;
      return;
    }
    if (this.#top.size < this.topN) {
      this.#top.add(consumer);
      this.#least = null;
      t.series += tokens;
      return;
    }
    const least = this.#leastOfTop();
    if (t.total > this.#tracked.get(least)!.total) {
      this.#top.delete(least);
      this.#top.add(consumer);
      this.#least = null;
      t.series += tokens;
    } else {
      this.#other += tokens;
    }
  }

  #leastOfTop(): string {
    if (this.#least !== null) return this.#least;
    let least: string | null = null;
    let min = Infinity;
    for (const c of this.#top) {
      const total = this.#tracked.get(c)!.total;
      if (total < min) {
        min = total;
        least = c;
      }
    }
    return (this.#least = least!);
  }

  /** Forgets the half of the consumers outside the top N that spent least. */
  #forget(): void {
    const outside = [...this.#tracked].filter(([c]) => !this.#top.has(c)).sort((a, b) => a[1].total - b[1].total);
    for (const [c] of outside.slice(0, Math.max(1, Math.ceil(outside.length / 2)))) this.#tracked.delete(c);
  }
}
