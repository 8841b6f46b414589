// What the main thread adds to its own figures when other threads serve beside it.
import { AggregatorRegistry, type Registry } from 'prom-client';
import type { ProxyRuntime } from '../../server/runtime.js';
import type { BoundPorts } from './messages.js';
import type { WorkerPool } from './worker-pool.js';

/** The port each bind of the main thread got, by its configured `address:port`: where the other threads listen. */
export function boundPorts(runtime: ProxyRuntime): BoundPorts {
  return runtime.listening.map((l) => [`${l.address}:${l.port}`, l.boundPort] as const);
}

/**
 * One /metrics for the process: the main thread's series and every worker's, merged by
 * prom-client's aggregation (counters and histograms add up; each series says how it merges).
 */
export async function mergedMetrics(main: Registry, workers: WorkerPool): Promise<string> {
  const [own, others] = await Promise.all([main.getMetricsAsJSON(), workers.metrics()]);
  return AggregatorRegistry.aggregate([own, ...others]).metrics();
}
