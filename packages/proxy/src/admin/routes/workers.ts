// GET /workers: the threads serving requests. Worker 0 is the main thread (it also runs this
// admin API); the others are asked for their figures, each answering for itself.
import type { FastifyInstance } from 'fastify';
import { rejectUnknownQuery } from '@tollgate/kit';
import { threadFigures, type ThreadReport } from '../../server/thread-figures.js';
import type { AdminContext } from '../context.js';

export function workersRoutes(app: FastifyInstance, ctx: AdminContext): void {
  app.get('/workers', { config: { index: 'the threads serving requests: state, restarts, requests started, config version' } }, async (request, reply) => {
    if (rejectUnknownQuery(request.query, [], reply)) return reply;
    const main: ThreadReport = { worker: 0, state: 'serving', restarts: 0, lastExit: null, figures: threadFigures(ctx.runtime, ctx.logs.directive) };
    return { workers: [main, ...((await ctx.workers?.figures()) ?? [])] };
  });
}
