// The request-path counters and the upstream latency histogram, read the way Prometheus reads
// them: the registry's text exposition.
import { describe, expect, it } from 'vitest';
import { ProxyMetrics } from '../src/metrics/metrics.js';
import { CountedKeys } from '../src/routing/routes-gathered.js';

function lines(text: string, name: string): string[] {
  return text.split('\n').filter((l) => l.startsWith(name));
}

describe('proxy metrics', () => {
  it('puts an observation on a bucket bound into that bucket, and the buckets are cumulative', async () => {
    const m = new ProxyMetrics();
    for (const s of [0.001, 0.0011, 0.3, 100]) m.observeUpstreamLatency('ns/a', s);
    m.observeUpstreamLatency('ns/b', 0.02);
    const text = await m.registry.metrics();
    const a = lines(text, 'tollgate_upstream_latency_seconds').filter((l) => l.includes('route="ns/a"'));
    expect(a).toContain('tollgate_upstream_latency_seconds_bucket{route="ns/a",le="0.001"} 1');
    expect(a).toContain('tollgate_upstream_latency_seconds_bucket{route="ns/a",le="0.005"} 2');
    expect(a).toContain('tollgate_upstream_latency_seconds_bucket{route="ns/a",le="0.25"} 2');
    expect(a).toContain('tollgate_upstream_latency_seconds_bucket{route="ns/a",le="0.5"} 3');
    expect(a).toContain('tollgate_upstream_latency_seconds_bucket{route="ns/a",le="60"} 3');
    expect(a).toContain('tollgate_upstream_latency_seconds_bucket{route="ns/a",le="+Inf"} 4');
    expect(a).toContain('tollgate_upstream_latency_seconds_count{route="ns/a"} 4');
    expect(a.find((l) => l.startsWith('tollgate_upstream_latency_seconds_sum'))).toMatch(/ 100\.3021\d*$/);
    expect(lines(text, 'tollgate_upstream_latency_seconds_count{route="ns/b"}')).toEqual(['tollgate_upstream_latency_seconds_count{route="ns/b"} 1']);
    expect(text).toContain('# TYPE tollgate_upstream_latency_seconds histogram');
  });

  it('counts decisions and tokens per label set', async () => {
    const m = new ProxyMetrics({ maxModelLabels: 1 });
    m.countDecision('requests', 'route', 'allowed');
    m.countDecision('requests', 'route', 'allowed');
    m.countDecision('requests', 'gateway', 'limited');
    m.countTokens('ns/a', 'gpt-a', 'reported', 10);
    m.countTokens('ns/a', 'gpt-a', 'estimated', 3);
    m.countTokens('ns/a', 'gpt-b', 'reported', 5);
    m.countTokens('ns/a', null, 'reported', 1);
    const text = await m.registry.metrics();
    expect(lines(text, 'tollgate_ratelimit_decisions_total{').sort()).toEqual([
      'tollgate_ratelimit_decisions_total{kind="requests",level="gateway",result="limited"} 1',
      'tollgate_ratelimit_decisions_total{kind="requests",level="route",result="allowed"} 2',
    ]);
    expect(lines(text, 'tollgate_llm_tokens_total{').sort()).toEqual([
      'tollgate_llm_tokens_total{route="ns/a",model="gpt-a",source="estimated"} 3',
      'tollgate_llm_tokens_total{route="ns/a",model="gpt-a",source="reported"} 10',
      'tollgate_llm_tokens_total{route="ns/a",model="other",source="reported"} 5',
      'tollgate_llm_tokens_total{route="ns/a",model="unknown",source="reported"} 1',
    ]);
  });
});

describe('proxy metrics across config applies', () => {
  it('drops the series of a route the new config no longer has, keeps the others and the no-route series', async () => {
    const m = new ProxyMetrics();
    for (const route of ['ns/a', 'ns/b', 'none']) m.countRequest(route, 200);
    m.observeUpstreamLatency('ns/a', 0.01);
    m.observeUpstreamLatency('ns/b', 0.01);
    m.countTokens('ns/b', 'gpt', 'reported', 7);
    m.retainRoutes(new Set(['ns/a']));
    const text = await m.registry.metrics();
    expect(lines(text, 'tollgate_requests_total{').sort()).toEqual(['tollgate_requests_total{route="none",status="200"} 1', 'tollgate_requests_total{route="ns/a",status="200"} 1']);
    expect(text).not.toContain('route="ns/b"');
    expect(text).toContain('tollgate_upstream_latency_seconds_count{route="ns/a"} 1');
    // A route that comes back starts a new series.
    m.countRequest('ns/b', 200);
    expect(await m.registry.metrics()).toContain('tollgate_requests_total{route="ns/b",status="200"} 1');
  });

  it('walks the series when a route left, and at the apply after; an apply that keeps every route walks none', async () => {
    const m = new ProxyMetrics();
    m.retainRoutes(new Set(['ns/a', 'ns/b']));
    m.retainRoutes(new Set(['ns/a']));
    // A request of ns/b still in flight at that apply finishes after it: its series is dropped at the next apply.
    m.countRequest('ns/b', 200);
    m.retainRoutes(new Set(['ns/a']));
    expect(await m.registry.metrics()).not.toContain('route="ns/b"');
    // Every route of the last apply kept (an endpoint change, an edit): the series are not walked.
    m.countRequest('ns/stray', 200);
    m.retainRoutes(new Set(['ns/a', 'ns/c']));
    expect(await m.registry.metrics()).toContain('route="ns/stray"');
    // The next route removed walks them again.
    m.retainRoutes(new Set(['ns/c']));
    expect(await m.registry.metrics()).not.toContain('route="ns/stray"');
  });

  it("takes the names that left from the compile's counted names when they are a fork of what it retained, else looks", async () => {
    const m = new ProxyMetrics();
    const a = new CountedKeys<string>();
    for (const name of ['ns/a', 'ns/b']) a.add(name);
    m.retainRoutes(a, (before) => a.leftSince(before));
    m.countRequest('ns/b', 200);
    const b = a.fork();
    b.delete('ns/b');
    m.retainRoutes(b, (before) => b.leftSince(before));
    expect(await m.registry.metrics()).not.toContain('route="ns/b"');
    // A fork that lost nothing: the series are walked once more (the apply after a removal), then not.
    m.countRequest('ns/stray', 200);
    const c = b.fork();
    m.retainRoutes(c, (before) => c.leftSince(before));
    expect(await m.registry.metrics()).not.toContain('route="ns/stray"');
    m.countRequest('ns/stray', 200);
    const d = c.fork();
    m.retainRoutes(d, (before) => d.leftSince(before));
    expect(await m.registry.metrics()).toContain('route="ns/stray"');
    // Names that are no fork of what was retained: looked at one by one (ns/a left).
    m.retainRoutes(new Set<string>(), () => null);
    expect(await m.registry.metrics()).not.toContain('route="ns/stray"');
  });
});
