// GET /memory: process and V8 memory, and the cgroup memory limit where one is readable;
// ?gc=true first runs a full garbage collection, so `heap.usedHeapSize` is the live heap (what a
// leak check compares over time) rather than wherever the collector happened to be. The
// collection goes through an in-process inspector session, so no --expose-gc flag is needed;
// it pauses the process for as long as a full GC takes (tens of ms for a 100 MiB heap).
import { Session } from 'node:inspector';
import { readFile } from 'node:fs/promises';
import { getHeapSpaceStatistics, getHeapStatistics } from 'node:v8';
import type { FastifyInstance } from 'fastify';
import { KIT_ERRORS } from '../errors/catalog.js';
import { rejectUnknownQuery, single } from './query.js';
import { replyError } from './reply.js';

async function cgroupLimit(): Promise<{ bytes: number | null; source: string | null }> {
  for (const file of ['/sys/fs/cgroup/memory.max', '/sys/fs/cgroup/memory/memory.limit_in_bytes']) {
    try {
      const text = (await readFile(file, 'utf8')).trim();
      // "max" (v2) or a huge number (v1) both mean no limit.
      const n = Number(text);
      return { bytes: text === 'max' || !Number.isFinite(n) || n >= 2 ** 62 ? null : n, source: file };
    } catch {
      // not this cgroup version
    }
  }
  return { bytes: null, source: null };
}

/** Runs a full, synchronous garbage collection; resolves with how long it took (ms). */
export async function collectGarbage(): Promise<number> {
  const session = new Session();
  session.connect();
  const start = performance.now();
  try {
    await new Promise<void>((resolve, reject) => session.post('HeapProfiler.collectGarbage', (err) => (err ? reject(err) : resolve())));
    return performance.now() - start;
  } finally {
    session.disconnect();
  }
}

export function memoryRoutes(app: FastifyInstance): void {
  app.get('/memory', { config: { index: 'process and V8 memory (JSON); ?gc=true runs a full garbage collection first' } }, async (request, reply) => {
    if (rejectUnknownQuery(request.query, ['gc'], reply)) return reply;
    const gc = single((request.query as Record<string, unknown>).gc);
    if (gc !== undefined && gc !== 'true' && gc !== 'false') return replyError(reply, KIT_ERRORS.memoryGc, { got: JSON.stringify(gc) });
    const gcMs = gc === 'true' ? await collectGarbage() : null;
    const mem = process.memoryUsage();
    const heap = getHeapStatistics();
    return {
      gc: gcMs === null ? null : { ms: Math.round(gcMs * 10) / 10 },
      process: { rss: mem.rss, heapTotal: mem.heapTotal, heapUsed: mem.heapUsed, external: mem.external, arrayBuffers: mem.arrayBuffers },
      heap: {
        totalHeapSize: heap.total_heap_size,
        usedHeapSize: heap.used_heap_size,
        heapSizeLimit: heap.heap_size_limit,
        mallocedMemory: heap.malloced_memory,
        // Every byte the JavaScript heap has handed out since the start, garbage included: two
        // readings around a known number of requests give the bytes a request allocates, a
        // figure the machine's load does not move (where CPU time does).
        totalAllocatedBytes: (heap as { total_allocated_bytes?: number }).total_allocated_bytes ?? null,
        spaces: getHeapSpaceStatistics().map((s) => ({ name: s.space_name, size: s.space_size, used: s.space_used_size, available: s.space_available_size })),
      },
      cgroup: await cgroupLimit(),
    };
  });
}
