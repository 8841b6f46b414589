// `missingWorkers` of a proxy's admin answer (docs/admin-api.md): the worker threads of a proxy
// on several threads that did not give their part of a view in time. Absent when every thread
// answered. gwctl checks it like the rest of an answer and says what the view lacks.

/** A thread whose part is not in the answer. */
export interface MissingWorker {
  readonly worker: number;
  readonly reason: string;
}

/** Most threads a proxy has (its --workers maximum). */
const MAX_WORKERS = 64;
const MAX_REASON = 1024;

/** The answer's missingWorkers (none when absent), or `fail` saying what is wrong with it. */
export function checkMissingWorkers(value: unknown, fail: (what: string) => never): readonly MissingWorker[] {
  if (value === undefined) return [];
  if (!Array.isArray(value) || value.length > MAX_WORKERS) fail(`missingWorkers is not a list of at most ${MAX_WORKERS}`);
  const list = value as unknown[];
  list.forEach((m, i) => {
    const w = m as Partial<MissingWorker> | null;
    if (typeof w !== 'object' || w === null || !Number.isInteger(w.worker) || typeof w.reason !== 'string' || w.reason.length > MAX_REASON) fail(`missingWorkers[${i}] is not {worker, reason}`);
  });
  return list as MissingWorker[];
}

/** One warning line per missing thread: `<proxy>: worker thread <n> did not answer (<reason>); <lacking> are not included`. */
export function missingWorkerWarnings(proxy: string, missing: readonly MissingWorker[], lacking: string): string {
  return missing.map((m) => `gwctl: warning: ${proxy}: worker thread ${m.worker} did not answer (${m.reason}); ${lacking} are not included\n`).join('');
}
