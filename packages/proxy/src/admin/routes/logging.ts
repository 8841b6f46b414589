// /logging: GET reads the directive; POST ?level=<directive> changes it (a bare level keeps
// module entries), POST ?reset returns to the start-up directive. The answer is always
// "current log level is <directive>". A bad directive is a 400 naming the bad part.
import type { FastifyInstance } from 'fastify';
import { DirectiveError } from '../../log/directive.js';
import { MODULES } from '../../log/logger.js';
import type { AdminContext } from '../context.js';
import { rejectUnknownQuery, single } from '../query.js';

export function loggingRoutes(app: FastifyInstance, ctx: AdminContext): void {
  const current = () => `current log level is ${ctx.logs.directive}\n`;
  app.get('/logging', async (request, reply) => {
    if (rejectUnknownQuery(request.query, [], reply)) return reply;
    return reply.type('text/plain; charset=utf-8').send(current());
  });
  app.post('/logging', async (request, reply) => {
    if (rejectUnknownQuery(request.query, ['level', 'reset'], reply)) return reply;
    const q = request.query as Record<string, unknown>;
    const level = single(q.level);
    const text = 'text/plain; charset=utf-8';
    if ('reset' in q && level !== undefined) return reply.code(400).type(text).send('give either level=<directive> or reset, not both\n');
    if ('reset' in q) {
      ctx.logs.reset();
      return reply.type(text).send(current());
    }
    if (level === undefined || level === null || level === '') {
      return reply.code(400).type(text).send(`expected ?level=<directive> (e.g. info or warn,upstream=debug; modules: ${MODULES.join(', ')}) or ?reset\n`);
    }
    try {
      ctx.logs.set(level);
    } catch (err) {
      if (err instanceof DirectiveError) return reply.code(400).type(text).send(`invalid log directive: ${err.message}\n`);
      throw err;
    }
    ctx.logs.get('admin').info(`log level changed to ${ctx.logs.directive}`);
    return reply.type(text).send(current());
  });
}
