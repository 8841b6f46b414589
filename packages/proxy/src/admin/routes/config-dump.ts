// GET /config_dump: the loaded configuration (see ../config-dump.ts for the shape).
import type { FastifyInstance } from 'fastify';
import { configDump } from '../config-dump.js';
import type { AdminContext } from '../context.js';
import { rejectUnknownQuery } from '@tollgate/kit';

export function configDumpRoutes(app: FastifyInstance, ctx: AdminContext): void {
  app.get('/config_dump', async (request, reply) => {
    if (rejectUnknownQuery(request.query, [], reply)) return reply;
    return reply.type('application/json; charset=utf-8').send(JSON.stringify(configDump(ctx.runtime.current.ir, ctx.runtime.loadedAt, ctx.runtime.endpointStats), null, 2));
  });
}
