// How many threads serve requests: --workers, config.workers, or `auto`: the CPUs the container
// may use (./../cpu-count.ts reads its cgroup quota), at most MAX_WORKERS.
import { cpuCount } from '../cpu-count.js';

/** The most threads config.workers and --workers accept (the schema's maximum). */
export const MAX_WORKERS = 64;

export type WorkersChoice = number | 'auto';

/** The thread count of a choice, and where it came from (for the start-up log line). */
export function resolveWorkers(choice: WorkersChoice): { readonly count: number; readonly source: string } {
  if (choice !== 'auto') return { count: choice, source: 'set' };
  const found = cpuCount();
  const count = Math.min(MAX_WORKERS, found.cpus);
  return { count, source: `auto: ${found.source}${found.ignored.length ? `; ignored ${found.ignored.join('; ')}` : ''}` };
}
