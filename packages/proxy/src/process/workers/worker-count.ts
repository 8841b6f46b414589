// How many threads serve requests: --workers, config.workers, or `auto`: the CPUs the container
// may use (./../cpu-count.ts reads its cgroup quota), at most MAX_WORKERS.
import { cpuCount } from '../cpu-count.js';

/** The most threads config.workers and --workers accept (the schema's maximum). */
export const MAX_WORKERS = 64;

/**
 * `auto` without a CPU quota: a pod without a CPU limit may run on every CPU of a large node,
 * and a thread per CPU there would outgrow a memory limit sized for a few (30-50 MiB a thread).
 */
export const AUTO_WITHOUT_QUOTA_MAX = 4;

export type WorkersChoice = number | 'auto';

/** The thread count of a choice, and where it came from (for the start-up log line). */
export function resolveWorkers(choice: WorkersChoice): { readonly count: number; readonly source: string } {
  if (choice !== 'auto') return { count: choice, source: 'set' };
  const found = cpuCount();
  const count = Math.min(found.quota ? MAX_WORKERS : AUTO_WITHOUT_QUOTA_MAX, found.cpus);
  const capped = count < found.cpus ? `, at most ${count} without a quota (set workers to use more)` : '';
  return { count, source: `auto: ${found.source}${capped}${found.ignored.length ? `; ignored ${found.ignored.join('; ')}` : ''}` };
}
