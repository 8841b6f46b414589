// How many threads serve requests: config.workers, the --workers flag, or `auto`.
import { availableParallelism } from 'node:os';

/** The most threads config.workers and --workers accept (the schema's maximum). */
export const MAX_WORKERS = 64;

/** What `auto` gives, and why. */
export function usableCpus(): { readonly count: number; readonly source: string } {
  const count = availableParallelism();
  return { count, source: `${count} CPUs available` };
}
