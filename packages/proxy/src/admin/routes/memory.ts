// GET /memory: process and V8 memory, and the cgroup memory limit where one is readable.
import { readFile } from 'node:fs/promises';
import { getHeapSpaceStatistics, getHeapStatistics } from 'node:v8';
import type { FastifyInstance } from 'fastify';
import type { AdminContext } from '../context.js';
import { rejectUnknownQuery } from '@tollgate/kit';

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

export function memoryRoutes(app: FastifyInstance, _ctx: AdminContext): void {
  app.get('/memory', async (request, reply) => {
    if (rejectUnknownQuery(request.query, [], reply)) return reply;
    const mem = process.memoryUsage();
    const heap = getHeapStatistics();
    return {
      process: { rss: mem.rss, heapTotal: mem.heapTotal, heapUsed: mem.heapUsed, external: mem.external, arrayBuffers: mem.arrayBuffers },
      heap: {
        totalHeapSize: heap.total_heap_size,
        usedHeapSize: heap.used_heap_size,
        heapSizeLimit: heap.heap_size_limit,
        mallocedMemory: heap.malloced_memory,
        spaces: getHeapSpaceStatistics().map((s) => ({ name: s.space_name, size: s.space_size, used: s.space_used_size, available: s.space_available_size })),
      },
      cgroup: await cgroupLimit(),
    };
  });
}
