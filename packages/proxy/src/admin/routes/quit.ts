// POST /quitquitquit: graceful shutdown. Any other method is a 405 (the scaffolding's), so
// that a browser visiting the URL never stops the proxy.
import { rejectUnknownQuery } from '@tollgate/kit';
import type { FastifyInstance } from 'fastify';
import type { AdminContext } from '../context.js';

export function quitRoutes(app: FastifyInstance, ctx: AdminContext): void {
  app.post('/quitquitquit', { config: { index: 'graceful shutdown' } }, async (request, reply) => {
    if (rejectUnknownQuery(request.query, [], reply)) return reply;
    setImmediate(() => ctx.shutdown('POST /quitquitquit'));
    return reply.type('text/plain; charset=utf-8').send('shutting down: draining in-flight requests\n');
  });
}
