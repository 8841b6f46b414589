// The admin views that are the process's though each thread keeps its own part of them
// (server/thread-views.ts): the main thread's part, read here, and every worker's, asked for
// with a short deadline. A worker that does not answer in time is left out and named in the
// body's `missingWorkers` (absent when every thread answered), so the view still comes and says
// what it lacks.
import { threadView, type MissingPart, type ThreadViews, type ViewName, type ViewPart } from '../server/thread-views.js';
import type { AdminContext } from './context.js';

export interface Gathered<T> {
  /** The main thread's part first (worker 0). */
  readonly parts: ViewPart<T>[];
  readonly missingWorkers: MissingPart[];
}

export async function gather<K extends ViewName>(ctx: AdminContext, name: K): Promise<Gathered<ThreadViews[K]>> {
  const own = { worker: 0, value: threadView(ctx.runtime, name) };
  if (!ctx.workers) return { parts: [own], missingWorkers: [] };
  const { parts, missing } = await ctx.workers.view(name);
  return { parts: [own, ...parts], missingWorkers: missing };
}

/** `body`, with `missingWorkers` when a worker is missing from any of `views` (each worker once). */
export function withMissing<B extends object>(body: B, ...views: Gathered<unknown>[]): B & { missingWorkers?: MissingPart[] } {
  const byWorker = new Map<number, MissingPart>();
  for (const v of views) for (const m of v.missingWorkers) if (!byWorker.has(m.worker)) byWorker.set(m.worker, m);
  return byWorker.size ? { ...body, missingWorkers: [...byWorker.values()].sort((a, b) => a.worker - b.worker) } : body;
}
