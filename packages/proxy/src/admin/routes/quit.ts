// POST /quitquitquit: graceful shutdown. Any other method is a 405, so that a browser
// visiting the URL never stops the proxy.
import type { FastifyInstance } from 'fastify';
import type { AdminContext } from '../context.js';
import { rejectUnknownQuery } from '@tollgate/kit';

export function quitRoutes(app: FastifyInstance, ctx: AdminContext): void {
  app.post('/quitquitquit', async (request, reply) => {
    if (rejectUnknownQuery(request.query, [], reply)) return reply;
    setImmediate(() => ctx.shutdown('POST /quitquitquit'));
    return reply.type('text/plain; charset=utf-8').send('shutting down: draining in-flight requests\n');
  });
  app.route({
    method: ['GET', 'PUT', 'DELETE', 'PATCH'],
    url: '/quitquitquit',
    handler: async (_request, reply) => reply.code(405).header('allow', 'POST').type('text/plain; charset=utf-8').send('use POST to shut down\n'),
  });
}
