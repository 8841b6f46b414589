// GET /workers: the threads serving requests. Worker 0 is the main thread (it also runs this
// admin API); the others are asked for their figures, each answering for itself.
import type { FastifyInstance, FastifyReply } from 'fastify';
import { KIT_ERRORS, rejectUnknownQuery, replyError, single } from '@tollgate/kit';
import { threadFigures, type ThreadReport } from '../../server/thread-figures.js';
import type { AdminContext } from '../context.js';

export function workersRoutes(app: FastifyInstance, ctx: AdminContext): void {
  app.get('/workers', { config: { index: 'the threads serving requests: state, restarts, requests started, config version' } }, async (request, reply) => {
    if (rejectUnknownQuery(request.query, [], reply)) return reply;
    const main: ThreadReport = { worker: 0, state: 'serving', restarts: 0, lastExit: null, figures: threadFigures(ctx.runtime, ctx.logs.directive) };
    return { workers: [main, ...((await ctx.workers?.figures()) ?? [])] };
  });

  app.get('/debug/workers/:worker/cpuprofile', { config: { index: 'CPU profile of one worker thread (V8 .cpuprofile JSON); ?seconds=1..300 (default 10)' } }, async (request, reply) => {
    if (rejectUnknownQuery(request.query, ['seconds'], reply)) return reply;
    const raw = single((request.query as Record<string, unknown>).seconds);
    const seconds = raw === undefined ? 10 : /^[0-9]+$/.test(raw ?? '') ? Number(raw) : NaN;
    if (!Number.isInteger(seconds) || seconds < 1 || seconds > 300) return replyError(reply, KIT_ERRORS.pprofSeconds, { got: JSON.stringify(raw) });
    const worker = workerIndex(request.params, ctx, reply);
    if (worker === null) return reply;
    // A client that goes away ends the profile at once.
    const stop = new AbortController();
    reply.raw.on('close', () => stop.abort());
    const profile = await ctx.workers!.cpuProfile(worker, seconds * 1000, stop.signal);
    if (profile === null) return notServing(reply, worker);
    return reply.type('application/json').header('content-disposition', `attachment; filename="worker-${worker}.cpuprofile"`).send(profile);
  });

  app.get('/debug/workers/:worker/heapsnapshot', { config: { index: 'heap snapshot of one worker thread (V8 .heapsnapshot JSON)' } }, async (request, reply) => {
    if (rejectUnknownQuery(request.query, [], reply)) return reply;
    const worker = workerIndex(request.params, ctx, reply);
    if (worker === null) return reply;
    const snapshot = await ctx.workers!.heapSnapshot(worker);
    if (snapshot === null) return notServing(reply, worker);
    return reply.type('application/json').header('content-disposition', `attachment; filename="worker-${worker}.heapsnapshot"`).send(snapshot);
  });
}

/** The worker thread a profile route names, or null once the reply says why it cannot be profiled here. */
function workerIndex(params: unknown, ctx: AdminContext, reply: FastifyReply): number | null {
  const text = (params as { worker: string }).worker;
  const n = /^[0-9]{1,2}$/.test(text) ? Number(text) : NaN;
  if (n === 0) {
    void reply.code(400).type('text/plain; charset=utf-8').send('worker 0 is the main thread: its profiles are GET /debug/pprof/profile and GET /debug/pprof/heap\n');
    return null;
  }
  if (!ctx.workers || !Number.isInteger(n)) {
    void reply.code(404).type('text/plain; charset=utf-8').send(ctx.workers ? `no worker thread "${text}": GET /workers lists them\n` : 'this proxy serves on one thread (config.workers 1): its profiles are GET /debug/pprof/profile and GET /debug/pprof/heap\n');
    return null;
  }
  return n;
}

function notServing(reply: FastifyReply, worker: number): FastifyReply {
  return reply.code(404).type('text/plain; charset=utf-8').send(`worker thread ${worker} is not serving (GET /workers lists the threads and their state)\n`);
}
