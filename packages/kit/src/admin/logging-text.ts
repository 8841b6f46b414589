// /logging, the proxy's text contract: GET reads; POST without a query reads too (the spec's
// "GET or POST reads"); POST ?level=<directive> changes it (a bare level keeps module
// entries); POST ?reset returns to the start-up directive. Every success answers
// "current log level is <directive>". A bad directive is a 400 naming the bad part and
// changes nothing. GET never changes anything.
import type { FastifyInstance } from 'fastify';
import { KIT_ERRORS } from '../errors/catalog.js';
import { DirectiveError } from '../log/directive.js';
import type { LogControl } from '../log/log-control.js';
import { rejectUnknownQuery, single, queryKeys } from './query.js';
import { replyError, TEXT } from './reply.js';

export interface TextLoggingOptions<C extends string> {
  readonly logs: LogControl<C>;
  /** Told after every change (e.g. to log it). */
  readonly onChange?: (directive: string) => void;
}

export function textLoggingRoutes<C extends string>(app: FastifyInstance, { logs, onChange }: TextLoggingOptions<C>): void {
  const current = () => `current log level is ${logs.directive}\n`;
  app.get('/logging', { config: { index: 'current log directive; POST ?level=&lt;directive&gt; sets it, POST ?reset restores it' } }, async (request, reply) => {
    if (rejectUnknownQuery(request.query, [], reply)) return reply;
    return reply.type(TEXT).send(current());
  });
  app.post('/logging', async (request, reply) => {
    if (rejectUnknownQuery(request.query, ['level', 'reset'], reply)) return reply;
    const q = request.query as Record<string, unknown>;
    if (queryKeys(q).length === 0) return reply.type(TEXT).send(current());
    const level = single(q.level);
    if ('reset' in q && level !== undefined) return replyError(reply, KIT_ERRORS.logLevelMissing, { expected: 'either level=<directive> or reset, not both' });
    if ('reset' in q) {
      logs.reset();
      onChange?.(logs.directive);
      return reply.type(TEXT).send(current());
    }
    if (level === undefined || level === null || level === '') {
      return replyError(reply, KIT_ERRORS.logLevelMissing, { expected: `one ?level=<directive> (e.g. info or warn,upstream=debug; modules: ${logs.components.join(', ')}) or ?reset` });
    }
    try {
      logs.set(level);
    } catch (err) {
      if (err instanceof DirectiveError) return replyError(reply, KIT_ERRORS.logDirectiveInvalid, { reason: err.message });
      throw err;
    }
    onChange?.(logs.directive);
    return reply.type(TEXT).send(current());
  });
}
