// Profiles in pprof's protobuf format, gzipped, as Go's net/http/pprof serves them:
// GET /debug/pprof/profile?seconds=N (CPU, 1..300, default 10) and GET /debug/pprof/heap
// (sampled allocations, sampling started with the admin server). V8 runs one CPU profile per
// process; a client that disconnects stops its profile at once, so the next one is not refused.
import { once } from 'node:events';
import type * as Pprof from '@datadog/pprof';
import type { FastifyInstance } from 'fastify';
import { lazyModule } from '@tollgate/api';
import { KIT_ERRORS } from '../errors/catalog.js';
import { rejectUnknownQuery, single } from './query.js';
import { replyError } from './reply.js';

// Loaded by the first admin server, not with this package: a thread that serves no admin API
// (a proxy's worker threads) never holds the profiler (1.4 MiB of heap and a native addon).
const pprof = lazyModule<typeof Pprof>('@datadog/pprof', import.meta.url);

const HEAP_SAMPLE_BYTES = 512 * 1024;
const HEAP_STACK_DEPTH = 64;

// Heap sampling is process-wide; several admin servers in one process (tests) share it.
let heapUsers = 0;
let cpuRunning = false;

/** True while a CPU profile is being taken in this process. */
export function cpuProfileRunning(): boolean {
  return cpuRunning;
}

export function pprofRoutes(app: FastifyInstance): void {
  const { encode, heap, time } = pprof();
  if (heapUsers++ === 0) heap.start(HEAP_SAMPLE_BYTES, HEAP_STACK_DEPTH);

  app.get('/debug/pprof/profile', { config: { index: 'CPU profile, pprof format; ?seconds=1..300 (default 10)' } }, async (request, reply) => {
    if (rejectUnknownQuery(request.query, ['seconds'], reply)) return reply;
    const raw = single((request.query as Record<string, unknown>).seconds);
    const seconds = raw === undefined ? 10 : /^[0-9]+$/.test(raw ?? '') ? Number(raw) : NaN;
    if (!Number.isInteger(seconds) || seconds < 1 || seconds > 300) return replyError(reply, KIT_ERRORS.pprofSeconds, { got: JSON.stringify(raw) });
    if (cpuRunning) return replyError(reply, KIT_ERRORS.pprofBusy);
    cpuRunning = true;
    const res = reply.raw;
    const stop = new AbortController();
    const timer = setTimeout(() => stop.abort(), seconds * 1000);
    // The response closes before it is finished only when the client went away.
    const onClose = () => {
      if (!res.writableFinished) stop.abort();
    };
    res.once('close', onClose);
    try {
      time.start({ durationMillis: seconds * 1000 });
      await once(stop.signal, 'abort');
      const profile = time.stop();
      if (res.destroyed) return reply;
      const body = await encode(profile);
      return reply.type('application/octet-stream').header('content-disposition', 'attachment; filename="profile"').send(body);
    } finally {
      clearTimeout(timer);
      res.off('close', onClose);
      cpuRunning = false;
    }
  });

  app.get('/debug/pprof/heap', { config: { index: 'heap profile, pprof format' } }, async (request, reply) => {
    if (rejectUnknownQuery(request.query, [], reply)) return reply;
    const body = await encode(heap.profile());
    return reply.type('application/octet-stream').header('content-disposition', 'attachment; filename="heap"').send(body);
  });

  app.addHook('onClose', async () => {
    if (--heapUsers === 0) heap.stop();
  });
}
